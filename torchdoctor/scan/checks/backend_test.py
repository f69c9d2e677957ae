"""TD008: a test that a backend's module exists, taken for a test that the backend is usable.

`hasattr(torch, "xpu")` is true in every torch release since 2.4, the CPU and CUDA wheels
included (the module is there; its functions raise "Torch not compiled with XPU enabled"), and
`hasattr(torch.backends, "mps")` / `hasattr(torch, "mps")` on every build since 1.12 / 2.0,
Linux and Windows included ("Cannot execute emptyCache() without MPS backend"). Code written
for Intel GPUs and CUDA that picks its stream with `torch.xpu.stream(s) if hasattr(torch,
"xpu") else torch.cuda.stream(s)` takes the XPU branch on the CUDA machine it also targets and
raises there (B580-diffusion-training's train step, blind set 154). Reported at the test, only
where the branch it selects calls what raises without the backend (checked on torch 2.13.0+cpu:
`torch.xpu.synchronize()`, `current_stream()`, `get_device_name()`; `torch.mps.empty_cache()`,
`synchronize()`) or names the device; not where an `is_available()` test or a `try` is
around that call."""

from __future__ import annotations

import ast
from collections import deque

from ..astutil import dotted
from ..context import Check, Context

# hasattr(<owner>, "<name>") -> the backend it seems to test
NAMESPACES = {("", "xpu"): "xpu", ("", "mps"): "mps", ("backends", "mps"): "mps"}
# What does not raise without the backend (torch 2.13.0+cpu, every public function called)
HARMLESS = {
    "xpu": frozenset(
        [
            "device_count",
            "empty_cache",
            "is_available",
            "is_bf16_supported",
            "is_initialized",
            "is_tf32_supported",
            "manual_seed",
            "manual_seed_all",
            "seed",
            "seed_all",
            "get_arch_list",
            "get_gencode_flags",
            "get_rng_state_all",
            "memory_allocated",
            "memory_reserved",
            "max_memory_allocated",
            "max_memory_reserved",
            "memory_stats",
            "memory_stats_as_nested_dict",
            "memory_snapshot",
        ]
    ),
    "mps": frozenset(["device_count", "is_available", "manual_seed"]),
}
SINCE = {("", "xpu"): "2.4", ("", "mps"): "2.0", ("backends", "mps"): "1.12"}
# backend -> (its name, the machines that take the branch, what they raise)
OUTCOME = {
    "xpu": ("XPU", "CUDA and CPU machines", "'Torch not compiled with XPU enabled'"),
    "mps": ("MPS", "Linux and Windows", "'Cannot execute ... without MPS backend'"),
}
FIX = {"xpu": "torch.xpu.is_available()", "mps": "torch.backends.mps.is_available()"}
# Stream contexts: a no-op on a CPU machine, but on a CUDA machine StreamContext takes CUDA's
# current device for its own and asks torch.xpu for a stream, which raises (recorded on an H100,
# torch 2.11.0+cu130: tests/facts/device_claims)
STREAMS = frozenset(["xpu.stream", "xpu.StreamContext"])
# a test inside the branch that does ask (`if torch.xpu.is_available():`)
ASKS = ("is_available", "device_count")


def _namespace(ctx: Context, node: ast.expr) -> tuple[str, str] | None:
    """(owner, name) of `hasattr(torch, "xpu")` / `hasattr(torch.backends, "mps")`, or None."""
    if not (isinstance(node, ast.Call) and dotted(node.func) == "hasattr" and len(node.args) == 2):
        return None
    owner, name = node.args
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    parts = dotted(owner).split(".")
    if parts[0] not in ctx.torch_names:
        return None
    key = (".".join(parts[1:]), name.value)
    return key if key in NAMESPACES else None


def _asks(test: ast.expr) -> bool:
    return any(a in ast.unparse(test) for a in ASKS)


def _names(value: object, backend: str) -> bool:
    """A string naming the backend's device: "xpu", "xpu:0"."""
    return isinstance(value, str) and value.split(":")[0] == backend


def _uses(ctx: Context, nodes: list[ast.AST], backend: str) -> ast.AST | None:
    """The first call in these statements that raises without the backend, or a string naming
    its device, outside any inner test that asks and any `try`."""
    todo = deque(nodes)  # breadth first: the outermost use is the one reported
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.Try):
            continue
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and _asks(node.test):
            continue
        if isinstance(node, ast.Call):
            called = ctx.torch_call(node) or ""
            head, _, fn = called.partition(".")
            if head == backend and fn and fn not in HARMLESS[backend]:
                return node
        if isinstance(node, ast.Constant) and _names(node.value, backend):
            return node
        todo.extend(ast.iter_child_nodes(node))
    return None


def _atoms(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [a for v in test.values for a in _atoms(v)]
    return [test]


def on_test(ctx: Context, node: ast.If | ast.IfExp) -> None:
    if _asks(node.test):
        return  # `hasattr(torch, "xpu") and torch.xpu.is_available()`: the test is there
    body = node.body if isinstance(node, ast.If) else [node.body]
    for atom in _atoms(node.test):  # the atoms of a conjunction: each true when the body runs
        key = _namespace(ctx, atom)
        used = None if key is None else _uses(ctx, body, NAMESPACES[key])
        if key is None or used is None:
            continue
        backend = NAMESPACES[key]
        name, where, raises = OUTCOME[backend]
        outcome = f"raises {raises}"
        if isinstance(used, ast.Call) and ctx.torch_call(used) in STREAMS:
            outcome = (
                f"`{dotted(used.func)}(...)` raises {raises} on a CUDA machine (it does nothing "
                "on the CPU)"
            )
        ctx.report(
            "TD008",
            atom,
            f"`{ast.unparse(atom)}` is true in every torch build since {SINCE[key]}, without "
            f"{name} support too: the branch runs on {where} and {outcome}",
            f"test `{FIX[backend]}`",
        )
        return


# Triggered by the backend's name in quotes, not by `hasattr` (in most files of any tree, each
# then walked: 5 % on torch's own tree), so `hasattr(th, "xpu")` under any alias still counts.
CHECK = Check(rules=("TD008",), words=('"xpu"', "'xpu'", '"mps"', "'mps'"), on_test=on_test)
