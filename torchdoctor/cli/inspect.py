"""`torchdoctor inspect`: is a checkpoint safe to load with weights_only=True, and what does it hold?"""

from __future__ import annotations

import click

from .options import (
    REPORT_FORMATS,
    check_writable,
    child_process_options,
    deliver,
    finding_selection,
    report_format_options,
    resolve_format,
    selection_decorator,
)


@click.command("inspect")
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False))
@report_format_options(REPORT_FORMATS, "Also write the report to FILE.")
@selection_decorator
@child_process_options(
    "Read it with the torch of this Python: an interpreter, a venv or conda directory, "
    "or a command on PATH (default: this one).",
    120.0,
    "Seconds the reading child process may take before it is killed.",
)
def inspect_cmd(
    checkpoint: str,
    fmt: str | None,
    as_json: bool,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    python: str | None,
    timeout: float,
) -> None:
    """Read a torch.save or safetensors file safely and say how to load it here.

    Never unpickles anything beyond what torch.load(weights_only=True) allows.
    """
    import sys

    from ..inspect import checkpoint as ckpt

    fmt = resolve_format(fmt, as_json)
    check_writable(output, "--output")
    selection = finding_selection("inspect", select, ignore)
    report = ckpt.inspect(checkpoint, python or sys.executable, timeout, selection)
    deliver(report, fmt, output, ckpt.render_text)
    raise click.exceptions.Exit(ckpt.exit_code(report))
