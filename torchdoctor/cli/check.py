"""`torchdoctor check`: gather this machine's facts (or read recorded ones), judge them, render the report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .options import (
    PythonParam,
    check_selection_options,
    check_writable,
    emit,
    from_command_line,
    report_format_options,
    resolve_format,
    use_color,
    write_output,
)

if TYPE_CHECKING:
    from ..check.pipeline import CheckOptions
    from ..check.record import Facts


FORMATS = ("text", "json", "markdown", "junit", "sarif")


@click.command("check")
@check_selection_options(
    "checks", "What the environment should provide; 'cuda' fails without a usable GPU."
)
@report_format_options(FORMATS, "Also write the report to FILE.")
@click.option("-v", "--verbose", is_flag=True, help="Show every check's details and remedies.")
@click.option(
    "--python",
    "python",
    type=PythonParam(),
    default=None,
    help="Diagnose this Python: an interpreter, a venv or conda directory, or a command on PATH "
    "(default: torchdoctor's own if it has torch, else the activated environment's or PATH's).",
)
@click.option(
    "--facts",
    "facts_file",
    type=click.Path(),
    default=None,
    help="Judge recorded facts, a JSON report or a pasted collect_env report from FILE ('-': "
    "stdin) instead of probing this machine.",
)
@click.option(
    "--dump-facts",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the gathered facts to FILE (to replay with --facts).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Remove home paths, user/host names, GPU UUIDs and serials from the report.",
)
def check(
    expect: str,
    fmt: str | None,
    as_json: bool,
    output: str | None,
    verbose: bool,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    fail_on: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    python: str | None,
    timeout: float,
    facts_file: str | None,
    dump_facts: str | None,
    redact: bool,
    no_smoke: bool,
    smoke_size: str,
) -> None:
    """Inspect this machine's PyTorch environment and judge it."""
    from ..check import facts as facts_mod
    from ..check import pipeline
    from ..report.render import RENDERERS

    fmt = resolve_format(fmt, as_json)
    opts = from_command_line("check", click.get_current_context().params)
    check_writable(output, "--output")
    check_writable(dump_facts, "--dump-facts")
    if facts_file is not None:
        try:
            facts = facts_mod.load(facts_file)
        except ValueError as exc:  # FactsError, or a collect_env text that does not parse
            raise click.ClickException(f"--facts: {exc}") from None  # one line, exit 2
    else:
        facts = _gather(opts, python)
    if redact:
        from ..check.record import read_facts
        from ..report.redact import redact as redact_doc

        # Before anything is written (the facts file is shared too); redaction works on the JSON,
        # which is read back into the record (as leniently as facts that were gathered).
        facts = read_facts(redact_doc(facts.raw))
    if dump_facts:
        write_output(dump_facts, "--dump-facts", facts_mod.dumps(facts))
    report = pipeline.judge(facts, opts)
    doc = report.to_dict()
    render = RENDERERS[fmt]
    emit(render(doc, verbose, use_color(sys.stdout) and fmt == "text"))
    if output:
        write_output(output, "--output", render(doc, verbose, False))
    raise click.exceptions.Exit(report.exit_code())


def _gather(opts: CheckOptions, python: str | None) -> Facts:
    """This machine's facts, from the Python that `--python` names or the one chosen for it."""
    from ..check import interpreter, pipeline

    facts = pipeline.gather(opts, python, progress=True)  # progress: only ever on a terminal
    why = interpreter.not_a_python(facts)
    if python and why:
        raise click.BadParameter(f"{python!r}: {why}", param_hint="--python")
    return facts
