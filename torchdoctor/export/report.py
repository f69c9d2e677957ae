"""`torchdoctor audit MODULE:FACTORY`: the export audit of a model built by a factory function.

The factory is imported and called in probes/child/export_probe.py, a child process with a deadline;
this module builds its request, turns the probe's stages into a report and renders it. It never
imports torch.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..probes.runner import child_argv, run_probe
from ..report.findings import Selection, envelope, split

SPEC = re.compile(r"^(?P<where>[^:]+):(?P<attr>[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)$")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")
VIA = ("torch.export", "onnx", "none")
TARGET = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


class UsageError(ValueError):
    """Bad user input: the CLI turns it into one line on stderr and exit 2."""


def parse_spec(spec: str, option: str) -> str:
    if not SPEC.match(spec):
        raise UsageError(f"{option}: expected MODULE:CALLABLE or FILE.py:CALLABLE, got {spec!r}")
    return spec


def parse_shape(text: str) -> dict[str, Any]:
    """`1,3,224,224` or `1,128:int64` -> {"shape": [...], "dtype": ...}."""
    dims, _, dtype = text.partition(":")
    dtype = dtype or "float32"
    if dtype not in DTYPES:
        raise UsageError(f"--input-shape {text!r}: dtype must be one of {', '.join(DTYPES)}")
    try:
        shape = [int(d) for d in dims.split(",")]
    except ValueError:
        raise UsageError(
            f"--input-shape {text!r}: expected comma-separated sizes such as 1,3,224,224"
        ) from None
    if any(d < 0 for d in shape):
        raise UsageError(f"--input-shape {text!r}: sizes cannot be negative")
    return {"shape": shape, "dtype": dtype}


def parse_target(target: str) -> str:
    if not TARGET.match(target):
        raise UsageError(f"--target: expected cpu, cuda, cuda:N or mps, got {target!r}")
    return target


def request(
    model: str, shapes: list[str], inputs: str | None, via: str, target: str
) -> dict[str, Any]:
    if bool(shapes) == bool(inputs):
        raise UsageError("give the example inputs with --input-shape (repeatable) or --inputs")
    return {
        "model": parse_spec(model, "MODEL"),
        "inputs_factory": parse_spec(inputs, "--inputs") if inputs else None,
        "input_shapes": [parse_shape(s) for s in shapes],
        "via": None if via == "none" else via,
        "target": parse_target(target),
        "cwd": os.getcwd(),
    }


def build_report(req: dict[str, Any], run, selection: Selection | None = None) -> dict[str, Any]:
    """Pure: the request and the probe's stages (a ProbeRun) -> the report, in the shared
    findings envelope (command ``audit``); ``problems`` says why the audit did not finish."""
    audit = run.stages.get("audit") or {}
    found = [f for f in audit.get("findings", []) if isinstance(f, dict) and "id" in f]
    kept, silenced = split(found, selection or Selection())
    problems: list[str] = []
    for name in ("model", "audit"):
        if name in run.errors:
            err = run.errors[name]
            problems.append(f"{name}: {err.get('type')}: {err.get('message')}")
    if run.status != "ok":
        where = f" (phase: {run.phase})" if run.phase and run.status == "timeout" else ""
        problems.append(f"the audit did not finish: {run.message}{where}")
    report = envelope(
        "audit",
        kept,
        silenced=silenced,
        fail_on="warning",
        model=req["model"],
        via=req["via"],
        target=req["target"],
        built=run.stages.get("model"),
        timings_s=audit.get("timings_s", {}),
        problems=problems,
        probe=run.summary(),
    )
    if problems:  # an audit that did not finish is not a pass
        report["summary"]["exit_code"] = 1
    return report


def spec_error(report: dict[str, Any], run) -> str | None:
    """The message when MODEL/--inputs named nothing importable (a usage error, exit 2)."""
    err = run.errors.get("model") or {}
    return err.get("message") if err.get("type") == "SpecError" else None


def audit(req: dict[str, Any], python: str, timeout_s: float, selection: Selection | None = None):
    run = run_probe(child_argv(python, "export_probe", json.dumps(req)), timeout_s)
    return build_report(req, run, selection), run


def exit_code(report: dict[str, Any]) -> int:
    """0: nothing at warning or above; 1: findings, or the audit did not complete."""
    return report["summary"]["exit_code"]


MARK = {"error": "✗", "warning": "!", "note": "·"}


def render_text(r: dict[str, Any]) -> str:
    timings = ", ".join(f"{k} {v:.2f} s" for k, v in r.get("timings_s", {}).items())
    via = r["via"] or "checklist only"
    out = [
        f"{r['model']}  (via {via}, target {r['target']})" + (f"  [{timings}]" if timings else "")
    ]
    built = r.get("built") or {}
    if built:
        inputs = ", ".join(
            f"{p} {'×'.join(map(str, i['shape']))} {i['dtype']}"
            for p, i in built.get("inputs", {}).items()
        )
        out.append(f"  model:  {built['type']}, {built['parameters']:,} parameters")
        out.append(f"  inputs: {inputs or '-'}")
    for f in r["findings"]:
        where = f" at {f['module']}" if f.get("module") else ""
        out.append(f"  {MARK.get(f.get('level'), '?')} {f['id']}{where}: {f['message']}")
        for remedy in f.get("remedies", []):
            out.append(f"      fix: {remedy['text']}")
            out.extend(f"        $ {c}" for c in remedy.get("commands", []))
    for p in r["problems"]:
        out.append(f"  ✗ {p}")
    if exit_code(r):
        verdict = "not ready: see above"
    else:
        verdict = "ready to export" if r["via"] else "checklist clean (nothing was exported)"
    out.append(f"  verdict: {verdict}")
    return "\n".join(out) + "\n"
