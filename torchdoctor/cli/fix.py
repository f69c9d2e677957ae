"""`torchdoctor fix`: parse the options, run torchdoctor.fix, print its report, exit with its code."""

from __future__ import annotations

import sys

import click

from .options import (
    EXPECT,
    REPORT_FORMATS,
    FiniteFloat,
    check_writable,
    child_process_options,
    deliver,
    emit,
    finding_selection,
    report_format_options,
    resolve_format,
    selection_decorator,
)


def _only_ids(values: tuple[str, ...]) -> tuple[str, ...]:
    """--only's finding ids or prefixes; one that names no check is a usage error (exit 2)."""
    from ..check.checks import by_id
    from ..report.findings import id_matches

    ids = tuple(v.strip() for raw in values for v in raw.split(",") if v.strip())
    known = by_id()
    for pattern in ids:
        if not any(id_matches(pattern, c) or pattern.startswith(c + ".") for c in known):
            raise click.BadParameter(f"{pattern!r} names no check or finding", param_hint="--only")
    return ids


def _confirm(fmt: str, verbose: bool):
    """Ask on the terminal after showing the plan; None when there is no terminal to ask on."""
    if not (sys.stdin and sys.stdin.isatty()):
        return None
    from ..fix.render import render_plan

    def ask(outcome) -> bool:
        if fmt == "text":
            emit(render_plan(outcome.to_dict(), verbose))
        return click.confirm("Apply this plan?", default=False, err=True)

    return ask


@click.command("fix")
@click.option("-y", "--yes", is_flag=True, help="Apply the plan without asking.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit; change nothing.")
@click.option(
    "--only",
    multiple=True,
    metavar="ID[,ID]",
    help="Treat only these findings (ids or prefixes: torch.install.companion-variant, torch).",
)
@click.option("--undo", is_flag=True, help="Restore the state recorded before the last fix.")
@click.option(
    "--expect",
    type=click.Choice(EXPECT),
    default="auto",
    show_default=True,
    help="What the environment should provide (as for check).",
)
@child_process_options(
    "The Python whose environment to treat (as for check).",
    30.0,
    "Seconds each diagnosis (before and after the fix) may take.",
)
@click.option("--smoke", is_flag=True, help="Also run the smoke tests in the diagnosis.")
@click.option(
    "--index-mirror",
    metavar="URL",
    envvar="TORCHDOCTOR_INDEX_MIRROR",
    default=None,
    help="Read PyTorch's wheel indexes (https://download.pytorch.org/whl/<variant>) from this "
    "mirror of them instead (env: TORCHDOCTOR_INDEX_MIRROR).",
)
@click.option(
    "--install-timeout",
    type=FiniteFloat(min=1, max=86400),
    default=1800.0,
    show_default=True,
    help="Seconds each install command may take before it is stopped and the fix undone.",
)
@report_format_options(REPORT_FORMATS, "Also write the report to FILE.")
@selection_decorator
@click.option("-v", "--verbose", is_flag=True, help="Show alternatives and each command's output.")
def fix_cmd(**params) -> None:
    """Treat what `check` finds: plan, apply (with --yes or your confirmation), verify, undo."""
    from ..check.pipeline import CheckOptions
    from ..fix import run
    from ..fix.planner import PlanOptions
    from ..fix.render import render, render_result

    fmt = resolve_format(params["fmt"], params["as_json"])
    check_writable(params["output"], "--output")  # before minutes of installing, not after
    check = CheckOptions(
        expect=params["expect"],
        # What fix treats is what check reports: check's [tool.torchdoctor] silencing applies.
        selection=finding_selection("check", params["select"], params["ignore"]),
        timeout_s=params["timeout"],
        smoke=params["smoke"],
    )
    asked: list[bool] = []
    confirm = _confirm(fmt, params["verbose"])
    opts = run.FixOptions(
        check=check,
        plan=PlanOptions(_only_ids(params["only"]), params["index_mirror"]),
        python=params["python"],
        yes=params["yes"],
        dry_run=params["dry_run"],
        install_timeout_s=params["install_timeout"],
        confirm=(lambda o: asked.append(True) or confirm(o)) if confirm else None,
        say=(lambda m: click.echo(m, err=True)) if fmt == "text" else (lambda m: None),
    )
    outcome = _undo(opts) if params["undo"] else run.treat(opts)
    # After a confirmation the plan is on the screen already: the text report adds the result.
    text = render_result if asked else render
    deliver(outcome.to_dict(), fmt, params["output"], lambda d: text(d, params["verbose"]))
    raise click.exceptions.Exit(outcome.exit_code())


def _undo(opts):
    from ..check.interpreter import choose
    from ..fix import record, run

    python = opts.python or choose(None).python
    prefix = _prefix_of(python)
    try:
        return run.undo(opts, prefix)
    except record.RecordError as exc:
        raise click.ClickException(str(exc)) from None


def _prefix_of(python: str) -> str:
    from ..fix import proc

    ran = proc.run([python, "-I", "-c", "import sys; print(sys.prefix)"], 30)
    if not ran.ok or not ran.stdout.strip():
        raise click.ClickException(f"{python}: cannot ask it for its environment ({ran.why()})")
    return ran.stdout.strip()
