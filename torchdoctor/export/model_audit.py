"""`torchdoctor.audit(model, *example_inputs)`: find device mix-ups in a live nn.Module.

Imports torch, so it is only loaded on first use (`torchdoctor.__getattr__`). Three findings:

- ``mixed-devices``: parameters and buffers live on more than one device;
- ``tensor-attribute``: a plain tensor attribute, which `model.to(device)` leaves behind;
- ``forward-mixed-devices``: with example inputs, one forward pass runs under hooks and names
  the first module whose inputs (with its own tensors) or outputs span several devices, or the
  innermost module running when the pass failed with a device error;
- ``scripted-not-traced``: TorchScript submodules, which refuse hooks, were not traced inside.

The forward pass runs under `torch.no_grad()` in eval mode (training flags are restored), so the
model's weights and running statistics are not changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..report.docs import finding_url
from ..report.result import Remedy

MAX_NAMES = 5


@dataclass
class AuditFinding:
    id: str
    module: str  # dotted module path (the finding's subject); "" is the model itself
    message: str
    devices: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    level: str = "error"  # error | warning | note
    remedies: list[Remedy] = field(default_factory=list)

    def __str__(self) -> str:
        where = self.module or "<model>"
        return f"{self.id} at {where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The shared finding (torchdoctor.report.findings); the subject is the module path."""
        return {
            "id": self.id,
            "level": self.level,
            "message": self.message,
            "subject": self.module or "<model>",
            "remedies": [r.to_dict() for r in self.remedies],
            "details": self.details,
            "doc": finding_url(self.id),
            "module": self.module,
            "devices": self.devices,
        }


def _tensors(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 4 and isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, depth + 1)


def _plain_tensor_attrs(module: nn.Module) -> dict[str, torch.Tensor]:
    return {
        k: v
        for k, v in vars(module).items()
        if isinstance(v, torch.Tensor) and not isinstance(v, nn.Parameter)
    }


def _own_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    own = dict(module.named_parameters(recurse=False))
    own.update(module.named_buffers(recurse=False))
    own.update(_plain_tensor_attrs(module))
    return own


def _devices(tensors: Iterator[torch.Tensor] | list[torch.Tensor]) -> list[str]:
    return sorted({str(t.device) for t in tensors})


def tensors_by_device(model: nn.Module) -> dict[str, list[str]]:
    """Parameter and buffer names grouped by the device they live on."""
    by_device: dict[str, list[str]] = {}
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        by_device.setdefault(str(t.device), []).append(name)
    return by_device


def names_by_device(by_device: dict[str, list[str]]) -> str:
    """`cpu: 2 (a, b); meta: 1 (c)`, at most MAX_NAMES names per device."""
    return "; ".join(
        f"{dev}: {len(names)} ({', '.join(names[:MAX_NAMES])}{', …' if len(names) > MAX_NAMES else ''})"
        for dev, names in sorted(by_device.items())
    )


def _placement(model: nn.Module) -> list[AuditFinding]:
    by_device = tensors_by_device(model)
    if len(by_device) <= 1:
        return []
    summary = names_by_device(by_device)
    return [
        AuditFinding(
            "mixed-devices",
            "",
            f"parameters and buffers are spread over {len(by_device)} devices: {summary}. "
            "Move the whole model once with model.to(device).",
            sorted(by_device),
            {"by_device": by_device},
        )
    ]


def _attributes(model: nn.Module) -> list[AuditFinding]:
    out = []
    for path, module in model.named_modules():
        for attr, t in _plain_tensor_attrs(module).items():
            full = f"{path}.{attr}" if path else attr
            out.append(
                AuditFinding(
                    "tensor-attribute",
                    path,
                    f"`{full}` is a plain tensor attribute on {t.device}: model.to(device) will "
                    f'not move it. Use self.register_buffer("{attr}", tensor, persistent=False).',
                    [str(t.device)],
                    {"attribute": attr},
                )
            )
    return out


class _Tracer:
    """Forward hooks that record the first module whose tensors span devices."""

    def __init__(self, model: nn.Module) -> None:
        self.names = {m: n for n, m in model.named_modules()}
        self.active: list[nn.Module] = []
        self.found: AuditFinding | None = None

    def pre(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        self.active.append(module)
        if self.found:
            return
        inputs = list(_tensors([args, kwargs]))
        own = _own_tensors(module)
        devices = _devices([*inputs, *own.values()])
        if len(devices) > 1:
            self.found = AuditFinding(
                "forward-mixed-devices",
                self.names.get(module, "?"),
                f"`{self.names.get(module) or '<model>'}` ({type(module).__name__}) gets inputs "
                f"on {', '.join(_devices(inputs)) or 'no tensors'} while its own tensors are on "
                f"{', '.join(_devices(list(own.values()))) or 'no device'}",
                devices,
                {
                    "input_devices": _devices(inputs),
                    "own_tensors": {k: str(v.device) for k, v in own.items()},
                },
            )

    def post(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        if self.active and self.active[-1] is module:
            self.active.pop()
        if self.found:
            return
        devices = _devices(list(_tensors(output)))
        if len(devices) > 1:
            self.found = AuditFinding(
                "forward-mixed-devices",
                self.names.get(module, "?"),
                f"`{self.names.get(module) or '<model>'}` ({type(module).__name__}) returns "
                f"tensors on {', '.join(devices)}",
                devices,
                {"output_devices": devices},
            )


def _forward(model: nn.Module, inputs: tuple, kwargs: dict) -> list[AuditFinding]:
    tracer = _Tracer(model)
    handles = []
    modes = {m: m.training for m in model.modules()}
    scripted: list[str] = []
    error: BaseException | None = None
    try:
        # Inside the try: hooks already registered are removed even if one registration fails.
        for m in model.modules():
            if isinstance(m, torch.jit.ScriptModule):  # refuses Python hooks
                scripted.append(tracer.names.get(m, "") or "<model>")
                continue
            handles.append(m.register_forward_pre_hook(tracer.pre, with_kwargs=True))
            handles.append(m.register_forward_hook(tracer.post, with_kwargs=True))
        model.eval()
        with torch.no_grad():
            model(*inputs, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        error = exc
    finally:
        for h in handles:
            h.remove()
        for m, training in modes.items():
            m.training = training
    notes = []
    if scripted:
        notes.append(
            AuditFinding(
                "scripted-not-traced",
                scripted[0] if scripted[0] != "<model>" else "",
                "TorchScript modules cannot carry hooks, so the forward pass was not traced "
                f"inside: {', '.join(scripted[:5])}",
                details={"modules": scripted},
                level="note",
            )
        )
    if tracer.found:
        if error is not None:
            tracer.found.details["error"] = f"{type(error).__name__}: {error}"
        return [tracer.found, *notes]
    if error is None:
        return notes
    culprit = tracer.active[-1] if tracer.active else model
    path = tracer.names.get(culprit, "")
    return [
        AuditFinding(
            "forward-failed",
            path,
            f"the forward pass failed inside `{path or '<model>'}` ({type(culprit).__name__}): "
            f"{type(error).__name__}: {error}. A tensor created there without device= (or a "
            "plain tensor attribute) is the usual cause when the message names two devices.",
            _devices(list(_own_tensors(culprit).values())),
            {"error": f"{type(error).__name__}: {error}"},
        ),
        *notes,
    ]


def audit(model: nn.Module, *example_inputs: Any, **example_kwargs: Any) -> list[AuditFinding]:
    """Findings about where `model`'s tensors live; an empty list means none were seen."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"audit() needs an nn.Module, got {type(model).__name__}")
    findings = _placement(model) + _attributes(model)
    if example_inputs or example_kwargs:
        findings += _forward(model, example_inputs, example_kwargs)
    return findings
