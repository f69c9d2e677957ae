"""Devices baked into an exported graph: a constant or a `.to(device)` that pins the program to the
device it was exported on."""

from __future__ import annotations

import re

import torch

from ..report.result import Remedy
from .diagnose import STACK_LINE
from .model_audit import AuditFinding


def _same_place(device: torch.device, target: torch.device) -> bool:
    if device.type != target.type:
        return False
    return target.index is None or device.index in (None, target.index)


def _source(node: torch.fx.Node) -> tuple[str, str]:
    """(file:line, code) of the user's line that made the node, when the graph recorded it."""
    trace = node.meta.get("stack_trace") or ""
    frames = STACK_LINE.findall(trace)
    if not frames:
        return "", ""
    file, line, _fn, code = frames[-1]
    return f"{file}:{line}", code.strip()


def _node_devices(node: torch.fx.Node) -> list[torch.device]:
    values = [*node.args, *node.kwargs.values()]
    return [v for v in values if isinstance(v, torch.device)]


def baked_devices(program: torch.export.ExportedProgram, target: str) -> list[AuditFinding]:
    want = torch.device(target)
    out = []
    seen: set[tuple[str, str]] = set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        for device in _node_devices(node):
            if _same_place(device, want):
                continue
            location, code = _source(node)
            if location and (location, str(device)) in seen:
                break  # `.to("cpu")` makes an assert node and a copy node: one line, one finding
            seen.add((location, str(device)))
            out.append(
                AuditFinding(
                    "export.baked-device",
                    (node.meta.get("nn_module_stack") and _module_path(node)) or "",
                    f"node `{node.name}` ({node.target}) pins its result to {device} but the "
                    f"target is {target}"
                    + (f"; it comes from {location}: `{code}`" if location else "")
                    + ". The exported graph keeps that device wherever it runs.",
                    [str(device)],
                    {"node": node.name, "op": str(node.target), "location": location, "code": code},
                    remedies=[Remedy(_baked_fix(node, device, target))],
                )
            )
            break
    for name, value in program.constants.items():
        if isinstance(value, torch.Tensor) and not _same_place(value.device, want):
            out.append(
                AuditFinding(
                    "export.baked-device",
                    name.rpartition(".")[0],
                    f"constant `{name}` was captured on {value.device} but the target is "
                    f"{target}: a plain tensor attribute, which neither model.to() nor moving "
                    "the exported program carries along.",
                    [str(value.device)],
                    {"constant": name},
                    remedies=[Remedy("Register the tensor as a buffer so model.to() moves it.")],
                )
            )
    return out


def _baked_fix(node: torch.fx.Node, device: torch.device, target: str) -> str:
    if (
        "to" in str(node.target).split(".")
        or "_to_copy" in str(node.target)
        or "assert" in str(node.target)
    ):
        return f"Drop the .to({str(device)!r}) inside forward, or export on {target}."
    return (
        "torch.export records the device of a tensor made in forward, even with device=x.device: "
        f"export with the model and inputs on {target}, or make the tensor once in __init__ as a "
        "buffer (register_buffer), which moves with the model."
    )


def _module_path(node: torch.fx.Node) -> str:
    # nn_module_stack: {key: (qualified path, type)}; the last entry is the innermost module.
    stack = list(node.meta["nn_module_stack"].values())
    path = stack[-1][0] if stack else ""
    return re.sub(r"^L\['self'\]\.?|^L__self__\.?", "", str(path))
