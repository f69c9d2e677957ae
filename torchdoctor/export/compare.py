"""Run the exported program (torch.export or ONNX Runtime) and compare its outputs with the eager
model's, within each dtype's tolerance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from ..report.result import Remedy
from .model_audit import AuditFinding

# abs and rel tolerance per output dtype: exporters reorder float maths, so not bit-exact.
TOLERANCE = {
    torch.float64: (1e-7, 1e-5),
    torch.float32: (1e-4, 1e-3),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


def tensor_leaves(obj: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(obj) if isinstance(t, torch.Tensor)]


def _to(obj: Any, device: str) -> Any:
    return pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, obj)


def compare(eager: list[torch.Tensor], exported: list[Any]) -> dict[str, Any] | None:
    """The worst output beyond its dtype's tolerance, or None when all agree."""
    if len(eager) != len(exported):
        return {"problem": f"{len(exported)} outputs instead of {len(eager)}"}
    worst = None
    for i, (want, got) in enumerate(zip(eager, exported, strict=True)):
        got = torch.as_tensor(got).to("cpu")
        want = want.detach().to("cpu")
        if tuple(got.shape) != tuple(want.shape):
            return {
                "output": i,
                "problem": f"shape {tuple(got.shape)} instead of {tuple(want.shape)}",
            }
        atol, rtol = TOLERANCE.get(want.dtype, (0.0, 0.0))
        diff = (got.double() - want.double()).abs()
        bad = diff > atol + rtol * want.double().abs()
        if diff.numel() and bool(bad.any()):
            largest = float(diff.max())
            if worst is None or largest > worst["max_abs_diff"]:
                worst = {
                    "output": i,
                    "dtype": str(want.dtype).replace("torch.", ""),
                    "max_abs_diff": largest,
                    "atol": atol,
                    "rtol": rtol,
                    "elements_beyond": int(bad.sum()),
                }
    return worst


def run_torch_export(program, args, kwargs, target: str) -> list[Any]:
    module = program.module().to(target)
    with torch.no_grad():
        return tensor_leaves(module(*_to(args, target), **_to(kwargs, target)))


def run_onnx(path: Path, args, kwargs, target: str) -> list[Any]:
    import onnxruntime as ort

    provider = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}.get(
        torch.device(target).type
    )
    session = ort.InferenceSession(str(path), providers=[provider])
    feeds = [t.detach().cpu().numpy() for t in tensor_leaves((args, kwargs))]
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, feeds, strict=False)))


def mismatch(target: str, via: str, detail: dict[str, Any]) -> AuditFinding:
    if "error" in detail:
        what = f"does not run on {target}: {detail['error']}"
        why = "A dtype or operator the target's runtime lacks is the usual cause."
        fix = "Export the float32 model (model.float()), or replace the operator the error names."
    else:
        if "problem" in detail:
            what = f"returns {detail['problem']}" + (
                f" for output {detail['output']}" if "output" in detail else ""
            )
        else:
            what = (
                f"differs from the eager model by up to {detail['max_abs_diff']:.3g} on output "
                f"{detail['output']} ({detail['elements_beyond']} elements beyond the "
                f"{detail['dtype']} tolerance atol={detail['atol']}, rtol={detail['rtol']})"
            )
        why = (
            "Python values (random numbers, counters, globals) and branches are frozen at "
            "export time; the eager model recomputes them."
        )
        fix = "Compute such values from tensors inside forward, or pass them as inputs."
    return AuditFinding(
        "export.mismatch",
        "",
        f"the {via} program {what}. {why}",
        [target],
        {"via": via, "target": target, **detail},
        remedies=[Remedy(fix)],
    )
