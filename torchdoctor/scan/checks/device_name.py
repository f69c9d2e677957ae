"""TD009: a device string torch rejects, wherever the line runs.

torch.device() takes a lower-case device type and an optional plain index: "gpu", "CPU" and
"cuda: 0" raise RuntimeError ("Expected one of cpu, cuda, … device type at start of device
string: gpu", "Invalid device string: 'cuda: 0'"). Blind labels found them in a
traffic-forecasting trainer (`device = "gpu" if torch.cuda.is_available() else "cpu"`, set
230), CTGCN's embedding.py (`torch.device('cuda: 0')`) and Amphion's MaskGCT demo
(`'cuda' if … else 'CPU'`, open-mmlab/Amphion#373: it raises on exactly the machines the
fallback is for). Reported where torch takes the string: torch.device(), `.to()`, and the
`device=` of a torch function or tensor method; a name bound only to strings counts where it
is passed there. A type torch does not know is left alone: an out-of-tree backend
("npu") registers its own name. Checked on torch 2.13.0; tests/test_scan_device_name.py asks
the installed torch again.
"""

from __future__ import annotations

import ast
import re

from ..astutil import assigned_values
from ..context import Check, Context
from .device_string import places_tensor

# torch 2.13.0's device types (c10/core/DeviceType.cpp), as its own error message lists them
TYPES = frozenset(
    [
        "cpu",
        "cuda",
        "ipu",
        "xpu",
        "mkldnn",
        "opengl",
        "opencl",
        "ideep",
        "hip",
        "ve",
        "fpga",
        "maia",
        "xla",
        "lazy",
        "vulkan",
        "mps",
        "meta",
        "hpu",
        "mtia",
        "privateuseone",
    ]
)
VALID = re.compile(rf"(?:{'|'.join(sorted(TYPES))})(?::(?:0|[1-9][0-9]*))?")
# The literal opens with a quote: "GPU" in a comment or docstring does not make a line worth
# walking (torch's own tree is full of them)
WORDS = tuple(
    q + w
    for q in "\"'"
    for w in (
        "gpu",
        "GPU",
        "Gpu",
        "CPU",
        "Cpu",
        "CUDA",
        "Cuda",
        "MPS",
        "Mps",
        "cuda: ",
        "cuda:" + q,
    )
)


def meant(text: str) -> str | None:
    """The device string torch would take for one it rejects whose meaning is plain ("gpu" ->
    "cuda", "CPU" -> "cpu", "cuda: 0" -> "cuda:0"); None for an accepted or unknown one."""
    if VALID.fullmatch(text):
        return None
    kind, _colon, index = re.sub(r"\s+", "", text).lower().partition(":")
    kind = "cuda" if kind == "gpu" else kind
    if kind not in TYPES or (index and not index.isdigit()):
        return None
    fixed = f"{kind}:{int(index)}" if index else kind
    return fixed if VALID.fullmatch(fixed) else None


def _strings(node: ast.expr) -> list[ast.Constant]:
    """The string literals an expression can evaluate to: itself, or either arm of `a if t
    else b`; [] when anything else can come out."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.IfExp):
        body, orelse = _strings(node.body), _strings(node.orelse)
        return body + orelse if body and orelse else []
    return []


def _report(ctx: Context, literal: ast.Constant) -> None:
    fixed = meant(literal.value)
    done = ctx.memo.setdefault("device_name", set())
    if fixed is None or id(literal) in done:
        return
    done.add(id(literal))
    where = ctx.replace(literal, "")
    quote = ctx.text[where.start : where.start + 1]  # an r/b/u prefix gets no edit
    edit = ctx.replace(literal, f"{quote}{fixed}{quote}") if quote in ("'", '"') else None
    ctx.report(
        "TD009",
        literal,
        f'"{literal.value}" is no torch device string: torch raises RuntimeError where it is '
        "used, on every machine that runs the line",
        f'"{fixed}"',
        edit,
        why="torch.device() takes a lower-case device type and a plain index",
        proven=True,
    )


def _device_arguments(ctx: Context, node: ast.Call) -> list[ast.expr]:
    """What a call takes as a device: torch.device()'s and `.to()`'s first argument, and
    `device=` of a torch function or tensor method."""
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else None
    given = [k.value for k in node.keywords if k.arg == "device"]
    if not places_tensor(ctx, node, attr):
        given = []
    if attr == "to" or ctx.torch_call(node) == "device":
        given += node.args[:1]
    return given


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.catch_all:
        return  # a handler catching Exception takes the RuntimeError
    for value in _device_arguments(ctx, node):
        for literal in _strings(value):
            _report(ctx, literal)


def on_assign(ctx: Context, node: ast.Assign | ast.AnnAssign) -> None:
    """`device = "gpu" if torch.cuda.is_available() else "cpu"`, then `.to(device)`: the
    literal is reported where the name, bound to strings only, is passed as a device."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if ctx.catch_all or node.value is None or len(targets) != 1:
        return
    if not isinstance(targets[0], ast.Name):
        return
    bad = [c for c in _strings(node.value) if meant(c.value)]
    if not bad:
        return
    name = targets[0].id
    scope = ctx.func.node if ctx.func is not None else ctx.module
    values = [_strings(v) for v in assigned_values(scope, name)]
    if not all(values):
        return  # bound to something else too: what reaches torch is not known
    for call in ast.walk(scope):
        if isinstance(call, ast.Call) and any(
            isinstance(a, ast.Name) and a.id == name for a in _device_arguments(ctx, call)
        ):
            for literal in bad:
                _report(ctx, literal)
            return


CHECK = Check(
    rules=("TD009",),
    words=WORDS,
    calls=frozenset(["to", "device"]),
    keywords=frozenset(["device"]),
    on_call=on_call,
    on_assign=on_assign,
)
