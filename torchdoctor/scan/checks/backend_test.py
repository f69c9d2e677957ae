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

from ..astutil import bindings, dotted, parent_map
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
# the call that asks, per backend (`torch.xpu.is_available()`, `torch.backends.mps.is_available()`)
AVAILABLE = {"xpu": "xpu.is_available", "mps": "mps.is_available"}


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


def _says_available(test: ast.expr, backend: str) -> bool | None:
    """True where `test` holds only with the backend (`….is_available()`, alone or in an `and`),
    False for `not ….is_available()`, None otherwise."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False if _says_available(test.operand, backend) is True else None
    asks = [a for a in _atoms(test) if isinstance(a, ast.Call)]
    if any(dotted(a.func).endswith(AVAILABLE[backend]) for a in asks):
        return True
    return True if any(_is_device_kind(a, backend) for a in _atoms(test)) else None


def _is_device_kind(test: ast.expr, backend: str) -> bool:
    """`device.type == "mps"` (or `str(device) == "mps"`): the device the code was given is the
    backend's, so a branch under it runs only where the backend is (bezier-splatting's
    _synchronize tests it before `hasattr(torch, "mps")`; blind set 203)."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and any(
            isinstance(side, ast.Constant) and _names(side.value, backend)
            for side in (test.left, *test.comparators)
        )
    )


def _asked_around(ctx: Context, backend: str) -> bool:
    """An enclosing test already asks: `if torch.backends.mps.is_available():` around the
    branch, or `if not …is_available(): raise` earlier in its function, or `if MPS_AVAILABLE:`
    where the module binds that name only to such a test (Matrix0's benchmarks/metrics.py,
    blind set 210)."""
    return any(
        entry is not None and _asks_for(ctx, entry[0], backend) is entry[1]
        for entry in ctx.tests_around()
    )


def _asks_for(ctx: Context, test: ast.AST, backend: str) -> bool | None:
    said = _says_available(test, backend)  # type: ignore[arg-type]
    return _flag_available(ctx, test, backend) if said is None else said


def _flag_available(ctx: Context, test: ast.AST, backend: str) -> bool | None:
    """True where `test` is a name the module binds (at its top level, in a `try` or an `if`
    there) only to what holds with the backend alone: `torch.backends.mps.is_available()`, that
    in a conditional expression whose other arm is False, or False itself."""
    if not isinstance(test, ast.Name) or any(test.id in f.params() for f in ctx.funcs):
        return None  # not a name, or a parameter's (the caller's) value
    values = [
        node.value
        for node in _top_level(ctx.module.body)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == test.id for t in node.targets)
    ]
    if len(values) != bindings(ctx.module, test.id):
        return None  # also bound by an import, a loop, `global` in a function…
    return True if values and all(_only_with(v, backend) for v in values) else None


def _top_level(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, those of its top-level `try`s and `if`s included."""
    out = []
    for stmt in stmts:
        out.append(stmt)
        if isinstance(stmt, (ast.Try, ast.If)):
            for field in ("body", "orelse", "finalbody"):
                out += _top_level(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                out += _top_level(handler.body)
    return out


def _only_with(value: ast.expr, backend: str) -> bool:
    if isinstance(value, ast.Constant):
        return value.value is False
    if isinstance(value, ast.IfExp):
        return _only_with(value.body, backend) and _only_with(value.orelse, backend)
    return _says_available(value, backend) is True


def _gates(ctx: Context, backend: str) -> frozenset[str]:
    """The file's functions that raise unless the backend is there (`if not
    torch.backends.mps.is_available(): raise …` among their statements)."""
    key = f"td008-gates:{backend}"
    if key not in ctx.memo:
        ctx.memo[key] = frozenset(
            f.name
            for f in ctx.module.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(
                isinstance(s, ast.If)
                and _says_available(s.test, backend) is False
                and isinstance(s.body[-1], ast.Raise)
                for s in f.body
            )
        )
    return ctx.memo[key]


def _gated_before(ctx: Context, node: ast.AST, backend: str) -> bool:
    """A gate of the file was called earlier in a block that holds the branch, so the branch
    runs only where the backend is (segmentation_w_mps's Mac-only child calls its MPS gate
    before its `hasattr(torch, "mps")` branches; set 177)."""
    gates = _gates(ctx, backend)
    if not gates:
        return False
    scope = ctx.func.node if ctx.func is not None else ctx.module
    key = f"td008-parents:{id(scope)}"
    if key not in ctx.memo:
        ctx.memo[key] = parent_map(scope)
    parents, child = ctx.memo[key], node
    while (parent := parents.get(id(child))) is not None:
        for stmts in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody")):
            if not isinstance(stmts, list):  # a lambda's or an IfExp's body is one expression
                continue
            at = next((i for i, s in enumerate(stmts) if s is child), None)
            if at is not None and any(_calls_gate(s, gates) for s in stmts[:at]):
                return True
        child = parent
    return False


def _calls_gate(stmt: ast.stmt, gates: frozenset[str]) -> bool:
    """`gate(torch)` or `x = gate(torch)` as a statement of its own: a call under an `if`, in a
    `try` or in a nested function may not have run."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in gates
    )


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
        if (
            _says_available(node.test, backend)
            or _asked_around(ctx, backend)
            or _gated_before(ctx, node, backend)
        ):
            return  # the branch runs only where the backend is
        name, where, raises = OUTCOME[backend]
        caught = {"confidence": "low", "why": "inside a try whose handler catches the error"}
        outcome = f"raises {raises}"
        if isinstance(used, ast.Call) and ctx.torch_call(used) in STREAMS:
            if used.args and isinstance(used.args[0], ast.Constant) and used.args[0].value is None:
                return  # torch.xpu.stream(None) does nothing anywhere (tests/facts/device_claims)
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
            **(caught if ctx.catch_all else {}),
        )
        return


# Triggered by the backend's name in quotes, not by `hasattr` (in most files of any tree, each
# then walked: 5 % on torch's own tree), so `hasattr(th, "xpu")` under any alias still counts.
CHECK = Check(rules=("TD008",), words=('"xpu"', "'xpu'", '"mps"', "'mps'"), on_test=on_test)
