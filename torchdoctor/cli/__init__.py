"""The command line. Thin on purpose: parse, call one function, exit with the report's code.

Exit codes: 0 nothing at or above the fail level, 1 something is, 2 bad usage or unusable
input/output, 3 internal error, 130 interrupted (the README's table has them all).
Nothing imported at module level touches torch, so ``--version`` and ``list-checks`` stay fast.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from typing import ClassVar

import click

from ..interrupts import (
    Interrupted,
    Terminated,
    from_ctrl_c,
    handle,
    install_redelivery,
    on_sigint,
    on_sigterm,
    take_pending,
)
from ..safeio import write_stdout
from ..version import __version__
from .options import OutputFailed

EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C


class LazyGroup(click.Group):
    """Subcommands imported only when used: `check` need not load `scan` or `dist` (it keeps
    `--version`, `list-checks` and the time before the probe starts short)."""

    LAZY: ClassVar[dict[str, str]] = {
        "audit": "torchdoctor.cli.audit:audit_cmd",
        "check": "torchdoctor.cli.check:check",
        "dist": "torchdoctor.cli.dist:dist",
        "fix": "torchdoctor.cli.fix:fix_cmd",
        "inspect": "torchdoctor.cli.inspect:inspect_cmd",
        "list-checks": "torchdoctor.cli.list_checks:list_checks",
        "scan": "torchdoctor.cli.scan:scan_cmd",
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
            _raise_pending()
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except (Interrupted, KeyboardInterrupt, click.exceptions.Abort):
        _interrupted()
    except BrokenPipeError:
        # `torchdoctor list-checks | head`: the reader went away; not our error.
        os._exit(0)
    except Exception as exc:  # noqa: BLE001 - never a traceback for a user
        if from_ctrl_c(exc):
            _interrupted()
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


def _prepare_process() -> None:
    install_redelivery()
    handle(signal.SIGINT, on_sigint)
    for stream in (sys.stdout, sys.stderr):
        # A Windows console redirected to a file is cp1252: never crash on ✓ or —.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    if hasattr(signal, "SIGTERM"):
        # `docker stop`, a CI timeout: exit through Python so probes are killed at exit.
        handle(signal.SIGTERM, on_sigterm)


def _raise_pending() -> None:
    """A signal a callback dropped, whose second delivery has not come before the end: the run
    still ends as that signal says (interrupts.py)."""
    signum = take_pending()
    if signum == signal.SIGINT:
        raise Interrupted
    if signum is not None:
        raise Terminated(128 + signum)


def _flush_stdout() -> str | None:
    """Output still buffered (list-checks, --version) must fail here, in one line, not at exit."""
    return write_stdout("") if sys.stdout is not None else None


def _interrupted() -> None:
    click.echo("Interrupted.", err=True)
    sys.exit(EXIT_INTERRUPTED)
