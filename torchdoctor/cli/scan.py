"""`torchdoctor scan`: device hygiene of code, and `--fix` for the mechanical cases.

Registered lazily on the main group (cli/__init__.py); kept here so the core CLI stays small.
"""

from __future__ import annotations

import contextlib

import click

from ..scan.rules import LEVELS, RULES, resolve
from .options import (
    REPORT_FORMATS,
    check_writable,
    emit,
    project_config,
    report_format_options,
    resolve_format,
    write_output,
)

SCAN_FORMATS = REPORT_FORMATS  # sarif is scan's own (its rules, regions, snippets)


def _rule_ids(values: tuple[str, ...], option: str) -> frozenset[str]:
    ids = set()
    for raw in values:
        for tok in (t.strip() for t in raw.split(",")):
            if not tok:
                continue
            rule = resolve(tok)
            if rule is None:
                known = ", ".join(f"{r.id} ({r.name})" for r in RULES)
                raise click.BadParameter(f"unknown rule {tok!r}; known: {known}", param_hint=option)
            ids.add(rule.id)
    return frozenset(ids)


def _list_rules(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for r in RULES:
        click.echo(f"{r.id}  {r.level:<7}  {r.name:<34} {r.title}")
    ctx.exit(0)


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(exists=True), metavar="PATH...")
@report_format_options(SCAN_FORMATS, "Also write the report to FILE.")
@click.option(
    "--fail-on",
    type=click.Choice([*reversed(LEVELS), "never"]),
    default="warning",
    show_default=True,
    help="Lowest finding level that makes the exit code 1.",
)
@click.option(
    "--fail-on-errors",
    is_flag=True,
    help="Exit 1 also when a file or directory could not be read, decoded, parsed or fixed.",
)
@click.option("--select", multiple=True, metavar="RULE[,RULE]", help="Only these rules.")
@click.option("--ignore", multiple=True, metavar="RULE[,RULE]", help="Not these rules.")
@click.option("--include-tests", is_flag=True, help="Also scan test files (test_*.py, tests/ …).")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1, max=256),
    default=None,
    help="Worker processes for large trees (default: the usable CPUs).",
)
@click.option(
    "--confidence",
    type=click.Choice(["high", "medium", "low"]),
    default=None,
    help="Lowest confidence shown (default: `confidence` in [tool.torchdoctor], else medium).",
)
@click.option(
    "--portable",
    is_flag=True,
    default=None,
    help="The code must run without CUDA (CPU, MPS): device findings keep their own "
    "confidence (default: `portable` in [tool.torchdoctor.scan]).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Neither read nor write .torchdoctor_cache/ (TORCHDOCTOR_CACHE_DIR moves it).",
)
@click.option("--fix", is_flag=True, help="Rewrite the mechanical cases in place.")
@click.option(
    "--diff",
    is_flag=True,
    help="Print the --fix rewrite as a diff; writes nothing, even with --fix.",
)
@click.option(
    "--list-rules",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_list_rules,
    help="List the rules and exit.",
)
def scan_cmd(
    paths: tuple[str, ...],
    fmt: str | None,
    as_json: bool,
    output: str | None,
    fail_on: str,
    fail_on_errors: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    include_tests: bool,
    jobs: int | None,
    confidence: str | None,
    portable: bool | None,
    no_cache: bool,
    fix: bool,
    diff: bool,
) -> None:
    """Find device pitfalls in Python code (parsed, never imported or run).

    Suppress one finding with a `# torchdoctor: ignore[TD001]` comment on its line.
    """
    from ..report.render.envelope import render_junit, render_markdown
    from ..scan import ScanOptions, scan_paths
    from ..scan.report import exit_code, render_json, render_text, to_dict
    from ..scan.sarif import render_sarif

    if not paths:
        raise click.UsageError("give at least one file or directory to scan")
    fmt = resolve_format(fmt, as_json)
    if diff and fmt != "text":
        raise click.UsageError("--diff prints a patch; use it with the text format")
    check_writable(output, "--output")
    project_config()  # a malformed config where scan runs stops it, as on every command
    opts = ScanOptions(
        include_tests=include_tests,
        select=_rule_ids(select, "--select") or None,
        ignore=_rule_ids(ignore, "--ignore"),
        confidence=confidence,
        portable=portable or None,
        cache=not no_cache,
    )
    result = scan_paths(paths, opts, jobs)
    result.fail_on_errors = fail_on_errors
    if fix or diff:
        _apply_fixes(result, paths, write=fix and not diff, show=diff)
    render = {
        "text": render_text,
        "json": render_json,
        "markdown": lambda r, f: render_markdown(to_dict(r, f)),
        "junit": lambda r, f: render_junit(to_dict(r, f)),
        "sarif": render_sarif,
    }[fmt]
    doc = render(result, fail_on)
    emit(doc)
    if output:
        write_output(output, "--output", doc)
    raise click.exceptions.Exit(exit_code(result, fail_on))


def _apply_fixes(result, paths: tuple[str, ...], write: bool, show: bool) -> None:
    """Plan every file's edits; with `write`, make them. Fixed findings move from `findings`
    to `fixed`; the others that had a fix get a `fix_note` saying why not. Diffs go to stdout
    before the report."""
    from ..safeio import InputError, OutputError
    from ..scan import fix as fixmod
    from ..scan.engine import iter_files
    from ..scan.fix_project import project_facts
    from ..scan.model import FileError
    from ..scan.vendored import not_edited

    by_file: dict[str, list] = {}
    for f in result.findings:
        if f.rule not in fixmod.TARGET:
            continue
        if why := not_edited(f, result.vendored.get(f.path)):
            f.fix_note = why
        else:
            by_file.setdefault(f.path, []).append(f)
    if not by_file:
        return
    rules = {f.rule for fs in by_file.values() for f in fs}
    project = project_facts(
        paths,
        _sources(iter_files(paths, include_tests=True)),
        saves="TD102" in rules,
        accelerator="TD501" in rules,
    )
    done: set[int] = set()
    for path, findings in by_file.items():
        try:
            src = fixmod.read(path)
        except (OSError, InputError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            result.errors.append(FileError(path, f"cannot read for --fix: {exc}"))
            continue
        planned = fixmod.plan(path, src.text, findings, project)
        if planned is None:
            continue
        for f, why in planned.declined:
            f.fix_note = why
        if not planned.applied:
            continue
        if show:
            click.echo(planned.diff(), nl=False)
        if not write:
            continue
        why = fixmod.why_not_write(src, path)
        try:
            if why is None:
                fixmod.write(planned, src.encoding)
        except OutputError as exc:
            why = str(exc)
        if why is None:
            done.update(id(f) for f in planned.applied)
        else:
            for f in planned.applied:
                f.fix_note = f"not written: {why}"
    result.fixed = [f for f in result.findings if id(f) in done]
    result.findings = [f for f in result.findings if id(f) not in done]


def _sources(files):
    """The text of each project file, for what --fix must know across files (state-dict saves)."""
    from ..scan.fix import read

    for path, _ in files:
        with contextlib.suppress(Exception):
            yield read(path).text
