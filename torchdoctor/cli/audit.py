"""`torchdoctor audit MODULE:FACTORY`: registered lazily on the main group (cli/__init__.py)."""

from __future__ import annotations

import click

from .options import child_process_options, finding_selection, selection_decorator


@click.command("audit")
@click.argument("model")
@click.option(
    "--input-shape",
    "shapes",
    multiple=True,
    metavar="SHAPE[:DTYPE]",
    help="One positional example input, e.g. 1,3,224,224 or 1,128:int64 (repeat for more); "
    "random values, on the model's device.",
)
@click.option(
    "--inputs",
    "inputs",
    metavar="MODULE:CALLABLE",
    default=None,
    help="A function returning the example inputs (a tensor, a tuple, or a dict of kwargs).",
)
@click.option(
    "--export",
    "via",
    type=click.Choice(["torch.export", "onnx", "none"]),
    default="torch.export",
    show_default=True,
    help="Exporter to try; 'none' runs the checklist only.",
)
@click.option(
    "--target",
    default="cpu",
    show_default=True,
    help="Device the exported model will run on: cpu, cuda, cuda:N, mps.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@selection_decorator
@child_process_options(
    "Build and export the model with this interpreter's torch (default: this one).",
    300.0,
    "Seconds the child process (import, export, run) may take before it is killed.",
)
def audit_cmd(
    model: str,
    shapes: tuple[str, ...],
    inputs: str | None,
    via: str,
    target: str,
    as_json: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    python: str | None,
    timeout: float,
) -> None:
    """Check that MODEL (MODULE:FACTORY or FILE.py:FACTORY) exports and runs on the target.

    The factory is imported and called in a child process (never unpickled); a deep copy of
    the model it returns is exported in memory and run on the target.
    """
    import json
    import sys

    from ..export import report as er

    try:
        req = er.request(model, list(shapes), inputs, via, target)
    except er.UsageError as exc:
        raise click.UsageError(str(exc)) from None
    selection = finding_selection("audit", select, ignore)
    report, run = er.audit(req, python or sys.executable, timeout, selection)
    bad_spec = er.spec_error(report, run)
    if bad_spec:
        raise click.UsageError(bad_spec)
    click.echo(json.dumps(report, indent=2) + "\n" if as_json else er.render_text(report), nl=False)
    raise click.exceptions.Exit(er.exit_code(report))
