"""The ``torchdoctor dist`` command: parse, then hand this rank to the worker (or replay a report)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from ..check import pipeline
from ..cluster import fleet
from ..cluster.bandwidth import parse_sizes
from ..cluster.launch import Launch, LaunchError, export_for_env_rendezvous, from_env
from ..cluster.options import DistOptions
from ..cluster.render import RENDERERS
from ..safeio import read_text_bounded
from ..typed_json import too_deep
from .options import (
    REPORT_FORMATS,
    FiniteFloat,
    check_selection_options,
    check_writable,
    emit,
    from_command_line,
    report_format_options,
    resolve_format,
    use_color,
    write_output,
)

LAUNCH_HELP = (
    "torchdoctor dist runs once per rank under a launcher, e.g.\n"
    "  torchrun --standalone --nproc-per-node=8 -m torchdoctor dist\n"
    "(several nodes, Slurm and Kubernetes: see the README). "
    "To judge a recorded fleet report instead: torchdoctor dist --replay FLEET.json"
)


class LauncherVariableError(click.ClickException):
    exit_code = 2


def _sizes(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    try:
        return parse_sizes(value) if value else None
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _replay(path: str, fmt: str, verbose: bool, color: bool, **judge: Any) -> tuple[dict, str]:
    """A recorded fleet report judged again, and rendered; any fault in it is one line, exit 2."""
    try:
        data = json.loads(read_text_bounded(path))
        if too_deep(data):
            raise ValueError("it is nested too deeply to be a fleet report")
        doc = fleet.reaggregate(data, **judge)
        return doc, RENDERERS[fmt](doc, verbose, color)  # rendering reads recorded fields too
    except Exception as exc:  # noqa: BLE001 - recorded input of any shape: one line, exit 2
        why = f"a record lacks the field {exc.args[0]!r}" if isinstance(exc, KeyError) else exc
        raise click.ClickException(f"--replay: cannot replay {path!r}: {why}") from None


def _replay_and_exit(
    path: str,
    fmt: str,
    verbose: bool,
    color: bool,
    output: str | None,
    slow_ratio: float,
    node: pipeline.CheckOptions,
) -> NoReturn:
    judge = {"slow_ratio": slow_ratio, "fail_on": node.fail_on, "selection": node.selection}
    doc, text = _replay(path, fmt, verbose, color, **judge)
    emit(text)
    if output:
        write_output(output, "--output", RENDERERS["json"](doc, False, False))
    raise click.exceptions.Exit(doc["exit_code"])


def _launch() -> Launch:
    """This rank's place in the job, exported for torch's env:// rendezvous; bad or missing
    launcher variables are one line, exit 2, before torch or a rendezvous starts."""
    try:
        launch = from_env()
    except LaunchError as exc:
        raise LauncherVariableError(str(exc)) from exc
    if launch is None:
        raise click.UsageError(LAUNCH_HELP)
    export_for_env_rendezvous(launch)
    return launch


@click.command("dist")
@click.option(
    "--backend",
    type=click.Choice(["auto", "nccl", "gloo"]),
    default="auto",
    show_default=True,
    help="auto: NCCL when every rank has a CUDA device and NCCL, else gloo (reported).",
)
@click.option(
    "--collective-timeout",
    type=FiniteFloat(min=1, max=3600),
    default=60.0,
    show_default=True,
    help="Deadline in seconds for the rendezvous and each collective.",
)
@check_selection_options("node checks", "What each host must provide (as for check).")
@click.option("--no-checks", is_flag=True, help="Skip the node checks; collectives only.")
@click.option("--no-bandwidth", is_flag=True, help="Skip the bus bandwidth measurements.")
@click.option(
    "--sizes",
    callback=_sizes,
    default=None,
    metavar="SIZE[,SIZE]",
    help="Bandwidth message sizes, e.g. 1M,16M,128M (default: 256K,4M on gloo; "
    "1M,16M,128M on NCCL).",
)
@click.option(
    "--iters",
    type=click.IntRange(min=1, max=10000),
    default=None,
    help="Timed iterations per size (default: 3 on gloo, 20 on NCCL).",
)
@click.option(
    "--slow-ratio",
    type=FiniteFloat(min=0, max=1, min_open=True),
    default=fleet.SLOW_RATIO,
    show_default=True,
    help="Flag a rank whose bandwidth is below this fraction of the fleet median.",
)
@report_format_options(
    REPORT_FORMATS,
    "Rank 0 also writes the fleet JSON document (every rank's report) to FILE.",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every finding's details.")
@click.option(
    "--replay",
    type=click.Path(),
    default=None,
    metavar="FLEET.json",
    help="Judge a recorded fleet report again instead of running (no torch needed).",
)
def dist(
    backend: str,
    collective_timeout: float,
    timeout: float,
    expect: str,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    no_checks: bool,
    no_smoke: bool,
    smoke_size: str,
    no_bandwidth: bool,
    sizes: list[int] | None,
    iters: int | None,
    slow_ratio: float,
    fail_on: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    fmt: str | None,
    as_json: bool,
    output: str | None,
    verbose: bool,
    replay: str | None,
) -> None:
    """Check a whole cluster: node checks, collectives and bandwidth on every rank, one fleet report.

    Start it with torchrun (or srun), one process per GPU; rank 0 prints the fleet report and every
    rank exits with the same code.
    """
    fmt = resolve_format(fmt, as_json)
    node = from_command_line("dist", click.get_current_context().params)
    check_writable(output, "--output")
    color = use_color(sys.stdout) and fmt == "text"
    if replay:
        _replay_and_exit(replay, fmt, verbose, color, output, slow_ratio, node)
    launch = _launch()
    from ..cluster.worker import run

    run(
        DistOptions(
            backend=backend,
            collective_timeout_s=collective_timeout,
            checks=not no_checks,
            node=node,
            measure_bandwidth=not no_bandwidth,
            sizes=sizes,
            iters=iters,
            slow_ratio=slow_ratio,
            fmt=fmt,
            verbose=verbose,
            output=output,
            color=color,
        ),
        launch,
    )
