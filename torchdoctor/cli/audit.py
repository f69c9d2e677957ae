"""`torchdoctor audit MODULE:FACTORY`: registered lazily on the main group (cli/__init__.py)."""

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
@report_format_options(REPORT_FORMATS, "Also write the report to FILE.")
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
    fmt: str | None,
    as_json: bool,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    python: str | None,
    timeout: float,
) -> None:
    """Check that MODEL (MODULE:FACTORY or FILE.py:FACTORY) exports and runs on the target.

    The factory is imported and called in a child process (never unpickled); a deep copy of
    the model it returns is exported in memory and run on the target.
    """
    import sys

    from ..export import report as er

    fmt = resolve_format(fmt, as_json)
    check_writable(output, "--output")
    try:
        req = er.request(model, list(shapes), inputs, via, target)
    except er.UsageError as exc:
        raise click.UsageError(str(exc)) from None
    selection = finding_selection("audit", select, ignore)
    report, run = er.audit(req, python or sys.executable, timeout, selection)
    bad_spec = er.spec_error(report, run)
    if bad_spec:
        raise click.UsageError(bad_spec)
    deliver(report, fmt, output, er.render_text)
    raise click.exceptions.Exit(er.exit_code(report))
