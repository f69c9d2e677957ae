"""The command line. Thin on purpose: parse, call one function, exit with the report's code.

Exit codes: 0 nothing at or above the fail level, 1 something is, 2 bad usage or unusable
input/output, 3 internal error, 130 interrupted (the README's table has them all).
Nothing imported at module level touches torch, so ``--version`` and ``list-checks`` stay fast.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import traceback
from typing import TYPE_CHECKING, ClassVar

import click

from . import __version__
from .cli_types import (
    OutputFailed,
    PythonParam,
    check_selection_options,
    check_writable,
    emit,
    report_format_options,
    resolve_format,
    use_color,
    write_output,
    write_stdout,
)

if TYPE_CHECKING:
    from .facts import Facts
    from .pipeline import CheckOptions

FORMATS = ("text", "json", "markdown", "junit")
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C


class LazyGroup(click.Group):
    """Subcommands imported only when used: `check` need not load `scan` or `dist` (it keeps
    `--version`, `list-checks` and the time before the probe starts short)."""

    LAZY: ClassVar[dict[str, str]] = {
        "audit": "torchdoctor.cli_audit:audit_cmd",
        "dist": "torchdoctor.cluster.command:dist",
        "inspect": "torchdoctor.cli_scan:inspect_cmd",
        "scan": "torchdoctor.cli_scan:scan_cmd",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY and name not in self.commands:
            module, attr = self.LAZY[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchdoctor")
def cli() -> None:
    """A doctor for PyTorch environments: what is wrong, why, and the command that fixes it."""


@cli.command("list-checks")
@click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default=None, help="Output format."
)
@click.option("--json", "as_json", is_flag=True, help="Short for --format json.")
def list_checks(fmt: str | None, as_json: bool) -> None:
    """List every check: id, title, the accelerator it is about, and its documentation page."""
    from .checks import ALL
    from .docs import check_url

    rows = [
        {
            "id": m.ID,
            "title": m.TITLE,
            "accelerator": getattr(m, "ACCELERATOR", None),
            "doc": check_url(m.ID),
            # the ids of the problems it reports one by one (each silenced alone)
            "findings": [
                {"id": f"{m.ID}.{code}", "title": title, "doc": check_url(m.ID, code)}
                for code, title in getattr(m, "FINDINGS", {}).items()
            ],
        }
        for m in ALL
    ]
    if resolve_format(fmt, as_json) == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        click.echo(f"{r['id']:<{width}}  {r['title']}")


@cli.command("check")
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
    from . import facts as facts_mod
    from . import pipeline
    from .render import RENDERERS

    fmt = resolve_format(fmt, as_json)
    opts = pipeline.from_command_line("check", click.get_current_context().params)
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
        from .redact import redact as redact_doc

        facts = redact_doc(facts)  # before anything is written: the facts file is shared too
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
    from . import interpreter, pipeline

    facts = pipeline.gather(opts, python, progress=True)  # progress: only ever on a terminal
    why = interpreter.not_a_python(facts)
    if python and why:
        raise click.BadParameter(f"{python!r}: {why}", param_hint="--python")
    return facts


def main(argv: list[str] | None = None) -> None:
    """Entry point: click's errors keep their codes; anything else is exit 3 in one line."""
    args = sys.argv[1:] if argv is None else argv
    try:
        try:
            _prepare_process()
            rc = cli.main(args=args, prog_name="torchdoctor", standalone_mode=False)
            if why := _flush_stdout():
                raise OutputFailed(why)
        finally:
            # Done, or reporting why not: a Ctrl-C now must not cut that short with a traceback.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        _interrupted()
    except BrokenPipeError:
        # `torchdoctor list-checks | head`: the reader went away; not our error.
        os._exit(0)
    except Exception as exc:  # noqa: BLE001 - never a traceback for a user
        if "-v" in args or "--verbose" in args:
            traceback.print_exc()
        click.echo(
            f"torchdoctor: internal error: {type(exc).__name__}: {exc} "
            "(re-run with -v for the traceback, and please report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    # Non-standalone click returns a command's exit code (an int) or its return value.
    sys.exit(rc if isinstance(rc, int) else 0)


class Interrupted(BaseException):
    """Ctrl-C, raised by our SIGINT handler: click turns a KeyboardInterrupt into a blank line and
    "Aborted!", and we want one line and exit 130 whenever it comes."""


def _on_sigint(signum, frame) -> None:
    raise Interrupted


def _prepare_process() -> None:
    signal.signal(signal.SIGINT, _on_sigint)
    for stream in (sys.stdout, sys.stderr):
        # A Windows console redirected to a file is cp1252: never crash on ✓ or —.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    if hasattr(signal, "SIGTERM"):
        # `docker stop`, a CI timeout: exit through Python so probes are killed at exit.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def _flush_stdout() -> str | None:
    """Output still buffered (list-checks, --version) must fail here, in one line, not at exit."""
    return write_stdout("") if sys.stdout is not None else None


def _interrupted() -> None:
    click.echo("Interrupted.", err=True)
    sys.exit(EXIT_INTERRUPTED)
