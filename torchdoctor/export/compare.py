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


# ONNX Runtime's execution provider for each target this audit runs ONNX models on
PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


def onnx_cannot_run(target: str) -> str | None:
    """Why ONNX Runtime cannot run on ``target`` here (None: it can). Asked with a provider it
    lacks, ONNX Runtime only warns and runs on the CPU: a CUDA audit would compare CPU outputs."""
    import onnxruntime as ort

    provider = PROVIDERS.get(torch.device(target).type)
    if provider is None:
        return f"this audit runs ONNX models on {' or '.join(PROVIDERS)} only"
    if provider not in ort.get_available_providers():
        return (
            f"this onnxruntime has no {provider} (the `onnxruntime` package runs on the CPU; "
            "`onnxruntime-gpu` runs on CUDA)"
        )
    return None


class ProviderFellBack(RuntimeError):
    """ONNX Runtime lists the provider but could not start it (onnxruntime-gpu without the CUDA
    or cuDNN libraries it loads) and made the session on another one."""


def run_onnx(path: Path, args, kwargs, target: str) -> list[Any]:
    import onnxruntime as ort

    provider = PROVIDERS[torch.device(target).type]
    session = ort.InferenceSession(str(path), providers=[provider])
    if provider not in session.get_providers():
        raise ProviderFellBack(
            f"ONNX Runtime could not start its {provider} and runs on "
            f"{', '.join(session.get_providers())} instead"
        )
    feeds = [t.detach().cpu().numpy() for t in tensor_leaves((args, kwargs))]
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, feeds, strict=False)))


def mismatch(target: str, via: str, detail: dict[str, Any], baked: bool = False) -> AuditFinding:
    """``baked``: the graph pins another device (export.baked-device), the likely cause of an
    error on the target."""
    if "error" in detail and baked:
        what = f"does not run on {target}: {detail['error']}"
        why = "The device baked into the graph (export.baked-device) meets the target's tensors."
        fix = "Fix what export.baked-device names, then export again."
    elif "error" in detail:
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
