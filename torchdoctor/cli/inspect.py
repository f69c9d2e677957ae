"""`torchdoctor inspect`: is a checkpoint safe to load with weights_only=True, and what does it hold?"""

from __future__ import annotations

import click

from .options import (
    child_process_options,
    finding_selection,
    selection_decorator,
)


@click.command("inspect")
@click.argument("checkpoint", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@selection_decorator
@child_process_options(
    "Read it with the torch of this Python: an interpreter, a venv or conda directory, "
    "or a command on PATH (default: this one).",
    120.0,
    "Seconds the reading child process may take before it is killed.",
)
def inspect_cmd(
    checkpoint: str,
    as_json: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    python: str | None,
    timeout: float,
) -> None:
    """Read a torch.save or safetensors file safely and say how to load it here.

    Never unpickles anything beyond what torch.load(weights_only=True) allows.
    """
    import json
    import sys

    from ..inspect import checkpoint as ckpt

    selection = finding_selection("inspect", select, ignore)
    report = ckpt.inspect(checkpoint, python or sys.executable, timeout, selection)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(ckpt.render_text(report), nl=False)
    raise click.exceptions.Exit(ckpt.exit_code(report))
