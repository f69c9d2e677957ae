"""Option types and helpers shared by torchdoctor's commands."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import click


def write_or_usage_error(path: str, option: str, write: Callable[[str], object]) -> None:
    """Run ``write(path)``; a failure (disk full, /proc file) is a usage error, exit 2."""
    try:
        write(path)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {path!r}: {exc.strerror or exc}", param_hint=option
        ) from exc


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses nan and inf (nan would disable every deadline)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def check_writable(path: str | None, option: str) -> None:
    """Refuse an unwritable FILE up front (exit 2), before minutes of probing are spent."""
    if not path:
        return
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise click.BadParameter(f"{path!r} is a directory", param_hint=option)
    if not parent.is_dir():
        raise click.BadParameter(f"directory {str(parent)!r} does not exist", param_hint=option)
    if not os.access(p if p.exists() else parent, os.W_OK):
        raise click.BadParameter(f"{path!r} is not writable", param_hint=option)


def use_color(stream) -> bool:
    # NO_COLOR: "when present and not an empty string" (no-color.org).
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def report_format_options(formats: tuple[str, ...], output_help: str):
    """--format, --json and -o/--output, spelled the same on every command that writes a report."""

    def decorate(fn):
        fn = click.option(
            "-o", "--output", type=click.Path(dir_okay=False), default=None, help=output_help
        )(fn)
        fn = click.option("--json", "as_json", is_flag=True, help="Short for --format json.")(fn)
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(formats),
            default=None,
            help="Report format (default: text).",
        )(fn)

    return decorate


def resolve_format(fmt: str | None, as_json: bool) -> str:
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json conflicts with --format {fmt}")
    return "json" if as_json else (fmt or "text")
