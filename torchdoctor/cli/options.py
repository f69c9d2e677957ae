"""Option types and helpers shared by torchdoctor's commands."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..report.findings import FAIL_ON, FAIL_ON_ALIASES
from ..safeio import write_stdout

if TYPE_CHECKING:
    from ..check.pipeline import CheckOptions


class OutputFailed(click.ClickException):
    """A report or facts file that could not be written: one line, exit 2 (see README)."""

    exit_code = 2


def write_output(path: str, option: str, text: str) -> None:
    """Replace FILE with ``text`` atomically; on failure (disk full, read-only) the old file is
    intact and the user gets one line."""
    from ..safeio import OutputError, atomic_write

    try:
        atomic_write(path, text)
    except OutputError as exc:
        raise OutputFailed(f"{option}: {exc}") from None


def emit(text: str) -> None:
    """The report on stdout, or exit 2 with one line when stdout cannot take it."""
    if why := write_stdout(text):
        raise OutputFailed(why)


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses nan and inf (nan would disable every deadline)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class PythonParam(click.ParamType):
    """--python: an interpreter, a venv or conda directory, or a command on PATH; else exit 2."""

    name = "PYTHON"

    def convert(self, value, param, ctx):
        from ..check.interpreter import resolve  # only when --python is given: --version stays fast

        try:
            return resolve(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


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
    return (
        stream is not None
        and stream.isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM") != "dumb"
    )


def child_process_options(python_help: str, timeout_s: float, timeout_help: str):
    """--python and --timeout, for commands that run torch in a child process with a deadline."""

    def decorate(fn):
        fn = click.option(
            "--timeout",
            type=FiniteFloat(min=1, max=3600),
            default=timeout_s,
            show_default=True,
            help=timeout_help,
        )(fn)
        return click.option(
            "--python", "python", type=PythonParam(), default=None, help=python_help
        )(fn)

    return decorate


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


# The formats of every command that prints a findings report; text is each command's own.
REPORT_FORMATS = ("text", "json", "markdown", "junit", "sarif")


def deliver(doc: dict[str, Any], fmt: str, output: str | None, text: Callable[[dict], str]) -> None:
    """Print the report in ``fmt`` and, with -o FILE, write the same report there (atomically)."""
    from ..report.render.envelope import ENVELOPE_RENDERERS

    rendered = text(doc) if fmt == "text" else ENVELOPE_RENDERERS[fmt](doc, False, False)
    emit(rendered)
    if output:
        write_output(output, "--output", rendered)


def resolve_format(fmt: str | None, as_json: bool) -> str:
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json conflicts with --format {fmt}")
    return "json" if as_json else (fmt or "text")


EXPECT = ("auto", "cpu", "cuda", "mps", "xpu")


def selection_options() -> list:
    """--select/--ignore, spelled the same on every command; [tool.torchdoctor] adds to them."""
    return [
        click.option(
            "--select",
            multiple=True,
            metavar="ID[,ID]",
            help="Report only findings with these ids (or id prefixes).",
        ),
        click.option(
            "--ignore",
            multiple=True,
            metavar="ID[,ID]",
            help="Silence findings with these ids (or id prefixes); they are counted, not shown.",
        ),
    ]


def selection_decorator(fn):
    """--select/--ignore on a command that has no other check-selection options."""
    for option in reversed(selection_options()):
        fn = option(fn)
    return fn


def finding_selection(command: str, select: tuple[str, ...], ignore: tuple[str, ...]):
    """The command line's --select/--ignore merged with pyproject.toml's [tool.torchdoctor]."""
    from .. import config
    from ..report.findings import Selection

    from_file = project_config().selection(command)
    return from_file.merged(Selection(config.split_ids(select), config.split_ids(ignore)))


def project_config():
    """The working directory's ``[tool.torchdoctor]``; a malformed one is one line, exit 2."""
    from .. import config

    try:
        return config.load()
    except config.ConfigError as exc:
        raise click.ClickException(str(exc)) from None  # main() makes every one exit 2


def check_selection_options(scope: str, expect_help: str):
    """What to run and how to judge it, for `check` and for `dist`'s node checks."""
    options = [
        click.option(
            "--expect",
            type=click.Choice(EXPECT),
            default="auto",
            show_default=True,
            help=expect_help,
        ),
        click.option("--only", multiple=True, metavar="ID[,ID]", help=f"Run only these {scope}."),
        click.option("--skip", multiple=True, metavar="ID[,ID]", help=f"Do not run these {scope}."),
        click.option(
            "--fail-on",
            type=click.Choice([*FAIL_ON, *FAIL_ON_ALIASES]),
            default="error",
            show_default=True,
            help="Lowest finding level that makes the exit code 1 ('fail'/'warn': the same as "
            "'error'/'warning').",
        ),
        *selection_options(),
        click.option(
            "--timeout",
            type=FiniteFloat(min=1, max=3600),
            default=30.0,
            show_default=True,
            help="Seconds the whole run may take (torch probe and smoke tests together); what "
            "has not finished by then is killed and reported.",
        ),
        click.option(
            "--no-smoke", is_flag=True, help="Skip the smoke tests that run torch on each device."
        ),
        click.option(
            "--smoke-size",
            type=click.Choice(["quick", "full"]),
            default="quick",
            show_default=True,
            help="How long the smoke tests run.",
        ),
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def selected_ids(only: tuple[str, ...], skip: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """--only/--skip values (repeatable, comma-separated) checked against the check ids."""
    from ..check.checks import by_id

    known = by_id()
    chosen = []
    for values, option in ((only, "--only"), (skip, "--skip")):
        ids = [v.strip() for raw in values for v in raw.split(",") if v.strip()]
        if unknown := [i for i in ids if i not in known]:
            raise click.BadParameter(
                f"unknown check id {', '.join(map(repr, unknown))}; valid ids: {', '.join(known)}",
                param_hint=option,
            )
        chosen.append(ids)
    only_ids, skip_ids = chosen
    if only_ids and not set(only_ids) - set(skip_ids):
        raise click.UsageError("--only and --skip together leave no check to run")
    return only_ids, skip_ids


def from_command_line(command: str, params: Mapping[str, Any]) -> CheckOptions:
    """The values of ``check_selection_options`` (a click context's ``params``),
    checked: an unknown check id is a usage error, exit 2."""
    from ..check.pipeline import CheckOptions

    only_ids, skip_ids = selected_ids(params["only"], params["skip"])
    return CheckOptions(
        expect=params["expect"],
        only=only_ids,
        skip=skip_ids,
        fail_on=params["fail_on"],
        selection=finding_selection(command, params["select"], params["ignore"]),
        timeout_s=params["timeout"],
        smoke=not params["no_smoke"],
        smoke_size=params["smoke_size"],
    )
