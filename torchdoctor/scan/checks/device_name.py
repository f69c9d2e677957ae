"""TD009: a device string torch rejects, wherever the line runs.

torch.device() takes a lower-case device type and an optional plain index: "gpu", "CPU" and
"cuda: 0" raise RuntimeError ("Expected one of cpu, cuda, … device type at start of device
string: gpu", "Invalid device string: 'cuda: 0'"). Blind labels found them in a
traffic-forecasting trainer (`device = "gpu" if torch.cuda.is_available() else "cpu"`, set
230), CTGCN's embedding.py (`torch.device('cuda: 0')`) and Amphion's MaskGCT demo
(`'cuda' if … else 'CPU'`, open-mmlab/Amphion#373: it raises on exactly the machines the
fallback is for). Reported where torch takes the string: torch.device(), `.to()` in a file
that imports torch, and the `device=` of a torch function or tensor method (not
torch.hub.load's, which go to the model's entry point). A name counts where its own scope
passes it there, when every binding of it in that scope is a string literal and no test
compares it with the rejected string (`if device == "gpu": device = "cuda"` translates it).
Not reported inside a `try` whose handler catches RuntimeError. A type torch does not know is
left alone: an out-of-tree backend ("npu") registers its own name. Checked on torch 2.13.0;
tests/test_scan_device_name.py asks the installed torch again.
"""

from __future__ import annotations

import ast
import re

from ..astutil import imported_names, own_nodes
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
    if len(text) > 32 or VALID.fullmatch(text):
        return None
    kind, _colon, index = re.sub(r"\s+", "", text).lower().partition(":")
    kind = "cuda" if kind == "gpu" else kind
    if kind not in TYPES or (index and not INDEX.fullmatch(index)):
        return None
    fixed = f"{kind}:{int(index)}" if index else kind
    return fixed if VALID.fullmatch(fixed) else None


INDEX = re.compile(r"[0-9]{1,6}")  # ASCII digits only: str.isdigit() takes "²" and "٣"


def _strings(node: ast.expr, every: bool = True) -> list[ast.Constant]:
    """The string literals an expression can evaluate to: itself, or the arms of `a if t else
    b`. With `every`, [] unless every arm is one; without, the arms that are (each raises
    when taken)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.IfExp):
        body, orelse = _strings(node.body, every), _strings(node.orelse, every)
        return body + orelse if (body and orelse) or not every else []
    return []


def _report(ctx: Context, literal: ast.Constant) -> None:
    fixed = meant(literal.value)
    done = ctx.memo.setdefault("device_name", set())
    if fixed is None or id(literal) in done:
        return
    done.add(id(literal))
    where = ctx.replace(literal, "")
    quote = ctx.text[where.start : where.start + 1]
    # only a plain one-piece literal is rewritten: not r"…", "a" "b" or one with escapes
    plain = quote in ("'", '"') and ctx.text[where.start : where.end] == (
        quote + literal.value + quote
    )
    edit = ctx.replace(literal, f"{quote}{fixed}{quote}") if plain else None
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


def _imports_torch(ctx: Context) -> bool:
    if "imports_torch" not in ctx.memo:
        ctx.memo["imports_torch"] = bool(IMPORTS_TORCH.search(ctx.text))
    return bool(ctx.memo["imports_torch"])


IMPORTS_TORCH = re.compile(r"^[ \t]*(?:import|from)[ \t]+torch\b", re.M)


def _device_arguments(ctx: Context, node: ast.Call) -> list[ast.expr]:
    """What a call takes as a device: torch.device()'s and `.to()`'s first argument, and
    `device=` of a torch function or tensor method."""
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else None
    torch_name = ctx.torch_call(node)
    given = []
    if places_tensor(ctx, node, attr) and not (torch_name or "").startswith("hub."):
        given = [k.value for k in node.keywords if k.arg == "device"]
    if torch_name == "device" or (attr == "to" and _imports_torch(ctx)):
        given += node.args[:1]
    return given


def on_call(ctx: Context, node: ast.Call) -> None:
    given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "device")]
    if not any(isinstance(v, (ast.Constant, ast.IfExp)) for v in given):
        return  # `.to(device)`: a name is followed from its assignment (on_assign)
    if ctx.caught("RuntimeError"):
        return  # a handler takes the RuntimeError: a fallback
    for value in _device_arguments(ctx, node):
        for literal in _strings(value, every=False):
            _report(ctx, literal)


def _binds(node: ast.AST, name: str) -> bool:
    """Does this node bind `name` in its scope, other than by `name = …` (`+=`, `for name`,
    `with … as name`, a walrus, an import, a parameter, a nested def or class)?"""
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return name in imported_names(node)
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names


def _compared(scope_nodes: list[ast.AST], name: str, text: str) -> bool:
    """Does the scope test `name` against this string (`device == "gpu"`, `"gpu" in …`)?"""
    return any(
        isinstance(n, ast.Compare)
        and any(isinstance(e, ast.Name) and e.id == name for e in (n.left, *n.comparators))
        and any(isinstance(e, ast.Constant) and e.value == text for e in (n.left, *n.comparators))
        for n in scope_nodes
    )


def on_assign(ctx: Context, node: ast.Assign | ast.AnnAssign) -> None:
    """`device = "gpu" if torch.cuda.is_available() else "cpu"`, then `.to(device)`: the
    literal is reported where the same scope passes the name, bound to strings only, as a
    device."""
    targets = _targets(node)
    if node.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return
    bad = [c for c in _strings(node.value, every=False) if meant(c.value)]
    if not bad:
        return
    name = targets[0].id
    scope = ctx.func.node if ctx.func is not None else ctx.module
    nodes = list(own_nodes(list(scope.body)))  # type: ignore[attr-defined]
    if ctx.func is not None:  # a parameter of that name: the caller's value
        a = ctx.func.node.args
        nodes += [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
    stores = [
        n
        for n in nodes
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and any(isinstance(t, ast.Name) and t.id == name for t in _targets(n))
    ]
    plain_ids = {id(t) for n in stores for t in _targets(n)}
    if any(_binds(n, name) and id(n) not in plain_ids for n in nodes):
        return  # bound some other way too: what reaches torch is not known
    if not all(n.value is not None and _strings(n.value) for n in stores):
        return  # bound to something else too
    if any(_compared(nodes, name, c.value) for c in bad):
        return  # the code translates the value itself
    uses = (
        a
        for n in nodes
        if isinstance(n, ast.Call)
        for a in _device_arguments(ctx, n)
        if isinstance(a, ast.Name) and a.id == name
    )
    if next(uses, None) is not None:
        for literal in bad:
            _report(ctx, literal)


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


CHECK = Check(
    rules=("TD009",),
    words=WORDS,
    calls=frozenset(["to", "device"]),
    keywords=frozenset(["device"]),
    on_call=on_call,
    on_assign=on_assign,
)
