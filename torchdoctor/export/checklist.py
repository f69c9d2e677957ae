"""The pre-export checklist: what people check by hand before `torch.export` or ONNX export.

Each check reads the model and the example inputs and changes nothing. Imports torch, so it is
only loaded through `torchdoctor.audit_export` (see `torchdoctor.__getattr__`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..report.result import Remedy
from .model_audit import MAX_NAMES, AuditFinding, names_by_device, tensors_by_device

# Modules whose forward differs between train() and eval(): captured as they are at export.
MODE_DEPENDENT = (
    nn.modules.dropout._DropoutNd,
    nn.modules.batchnorm._BatchNorm,
    nn.modules.instancenorm._InstanceNorm,
    nn.MultiheadAttention,  # applies its own dropout
)
WRAPPERS = (nn.DataParallel, nn.parallel.DistributedDataParallel)
LOW_PRECISION = (torch.float16, torch.bfloat16)


def _listed(names: list[str]) -> str:
    shown = ", ".join(n or "<model>" for n in names[:MAX_NAMES])
    return shown + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def flat_inputs(obj: Any, path: str, depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    """(path, tensor) for each tensor in nested inputs: `args[0]`, `args[1]['mask']`."""
    if isinstance(obj, torch.Tensor):
        return [(path, obj)]
    if depth >= 4:
        return []
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in flat_inputs(v, f"{path}[{i}]", depth + 1)]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in flat_inputs(v, f"{path}[{k!r}]", depth + 1)]
    return []


def named_inputs(args: tuple, kwargs: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Example input tensors by where they are passed: `args[0]`, `kwargs['mask']`."""
    return flat_inputs(args, "args") + flat_inputs(kwargs, "kwargs")


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside DataParallel/DistributedDataParallel wrappers (nested ones too)."""
    while isinstance(model, WRAPPERS):
        model = model.module
    return model


def data_parallel(model: nn.Module) -> list[AuditFinding]:
    found = [(path, m) for path, m in model.named_modules() if isinstance(m, WRAPPERS)]
    if not found:
        return []
    path, wrapper = found[0]
    inner = f"{path}.module" if path else "model.module"
    return [
        AuditFinding(
            "export.data-parallel",
            path,
            f"`{path or '<model>'}` is wrapped in {type(wrapper).__name__}: export {inner} "
            "instead (torchdoctor exported the unwrapped module below). A state dict saved from "
            "the wrapper has `module.`-prefixed keys that the bare model does not accept.",
            details={"wrapper": type(wrapper).__name__, "wrapped": [p for p, _ in found]},
            level="warning",
            remedies=[
                Remedy(f"Export the wrapped module: torch.export.export({inner}, args)."),
                Remedy(
                    "Load a wrapper's state dict into the bare model by stripping the prefix: "
                    "model.load_state_dict({k.removeprefix('module.'): v for k, v in sd.items()})"
                ),
            ],
        )
    ]


def training_mode(model: nn.Module) -> list[AuditFinding]:
    training = [path for path, m in model.named_modules() if m.training]
    if not training:
        return []
    dependent = [
        path for path, m in model.named_modules() if m.training and isinstance(m, MODE_DEPENDENT)
    ]
    what = (
        f"{len(dependent)} of them behave differently in eval(): {_listed(dependent)}"
        if dependent
        else "none is dropout or batch norm, but forward code that reads self.training would "
        "be captured in its training branch"
    )
    return [
        AuditFinding(
            "export.training-mode",
            dependent[0] if dependent else training[0],
            f"{len(training)} modules are in training mode and would be exported that way; {what}.",
            details={"training": training, "mode_dependent": dependent},
            level="error" if dependent else "warning",
            remedies=[Remedy("Call model.eval() before exporting.")],
        )
    ]


def model_device(model: nn.Module) -> str | None:
    """The one device of all parameters and buffers; None when there are none, or several."""
    devices = tensors_by_device(model)
    return next(iter(devices)) if len(devices) == 1 else None


def mixed_devices(model: nn.Module) -> list[AuditFinding]:
    by_device = tensors_by_device(model)
    if len(by_device) <= 1:
        return []
    # The module that owns the first tensor on a minority device is where to look.
    minority = min(by_device, key=lambda d: len(by_device[d]))
    first = by_device[minority][0]
    return [
        AuditFinding(
            "export.mixed-devices",
            first.rpartition(".")[0],
            f"parameters and buffers are on {len(by_device)} devices: "
            f"{names_by_device(by_device)}. The exporter fails with 'Expected all tensors to be "
            "on the same device' or bakes the mix into the graph.",
            sorted(by_device),
            {"by_device": by_device},
            remedies=[Remedy("Move the whole model once before exporting: model.to(device).")],
        )
    ]


def input_device(model: nn.Module, args: tuple, kwargs: dict) -> list[AuditFinding]:
    device = model_device(model)
    if device is None:
        return []
    inputs = named_inputs(args, kwargs)
    elsewhere = [(p, str(t.device)) for p, t in inputs if str(t.device) != device]
    if not elsewhere:
        return []
    listed = ", ".join(f"{p} on {d}" for p, d in elsewhere[:MAX_NAMES])
    return [
        AuditFinding(
            "export.input-device",
            "",
            f"the model is on {device} but example inputs are not: {listed}.",
            sorted({device, *(d for _, d in elsewhere)}),
            {"model_device": device, "inputs": dict(elsewhere)},
            remedies=[Remedy(f"Move the example inputs to the model's device: x.to({device!r}).")],
        )
    ]


def _autocast_active() -> list[str]:
    active = []
    for device_type in ("cpu", "cuda", "mps", "xpu"):
        try:
            if torch.is_autocast_enabled(device_type):
                active.append(device_type)
        except (RuntimeError, TypeError):  # a backend this build does not know
            continue
    return active


def autocast(model: nn.Module, target: str) -> list[AuditFinding]:
    out = []
    active = _autocast_active()
    if active:
        out.append(
            AuditFinding(
                "export.autocast",
                "",
                f"autocast is active for {', '.join(active)}: the exported graph would capture "
                "its casts (or ignore them, depending on the exporter) and differ from the "
                "float32 model you deploy.",
                active,
                {"autocast": active},
                remedies=[Remedy("Export outside the `with torch.autocast(...)` block.")],
            )
        )
    if torch.device(target).type == "cpu":
        low = [
            (name, str(t.dtype).replace("torch.", ""))
            for name, t in [*model.named_parameters(), *model.named_buffers()]
            if t.dtype in LOW_PRECISION
        ]
        if low:
            dtypes = sorted({d for _, d in low})
            out.append(
                AuditFinding(
                    "export.autocast",
                    low[0][0].rpartition(".")[0],
                    f"{len(low)} parameters/buffers are {', '.join(dtypes)} (left from AMP or "
                    f".half()) while the target is {target}: CPU kernels and ONNX Runtime's CPU "
                    f"provider are slow or missing for them. First: {_listed([n for n, _ in low])}.",
                    details={"dtypes": dtypes, "tensors": [n for n, _ in low]},
                    level="warning",
                    remedies=[Remedy("Convert back to float32 before exporting: model.float().")],
                )
            )
    return out


def _hook_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def hooks(model: nn.Module) -> list[AuditFinding]:
    found: dict[str, list[str]] = {}
    for path, m in model.named_modules():
        registered = [*m._forward_pre_hooks.values(), *m._forward_hooks.values()]
        if registered:
            found[path] = [_hook_name(h) for h in registered]
    glob = nn.modules.module
    global_hooks = [*glob._global_forward_pre_hooks.values(), *glob._global_forward_hooks.values()]
    if global_hooks:
        found["<global>"] = [_hook_name(h) for h in global_hooks]
    if not found:
        return []
    listed = "; ".join(f"{p or '<model>'}: {', '.join(h)}" for p, h in list(found.items())[:5])
    first = next(iter(found))
    return [
        AuditFinding(
            "export.hooks",
            "" if first == "<global>" else first,
            f"forward hooks are registered ({listed}): they run while the exporter traces "
            "forward, so what they compute is frozen into the graph, and their side effects "
            "(printing, saving tensors) happen once at export, never at inference.",
            details={"hooks": found},
            level="warning",
            remedies=[
                Remedy(
                    "Remove debugging hooks before exporting (keep the handle from "
                    "register_forward_hook and call handle.remove()), or make what they do part "
                    "of forward."
                )
            ],
        )
    ]


def checklist(model: nn.Module, args: tuple, kwargs: dict, target: str) -> list[AuditFinding]:
    return [
        *data_parallel(model),
        *training_mode(unwrap(model)),  # the wrapper is not exported: its mode is moot
        *mixed_devices(model),
        *input_device(model, args, kwargs),
        *autocast(model, target),
        *hooks(model),
    ]
