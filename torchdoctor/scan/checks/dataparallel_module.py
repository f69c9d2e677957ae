"""TD203: `.module` of a model that (Distributed)DataParallel wraps only on some machines.

`if args.cuda: self.model = nn.DataParallel(self.model)` and later, unguarded,
`self.model.module.state_dict()`: on the CPU (or one GPU, or outside torchrun) the model was
never wrapped and `.module` raises AttributeError, typically when the first checkpoint is
saved. Seven such lines in three of the blind corpora (deeplab-xception's trainer,
decision-transformer's Atari trainer, Conv-TasNet's solver), none flagged by another rule.
The wrap and the access are matched within one class (`self.x`) or one function (a local
name), so Conv-TasNet's, wrapped in train.py and read in solver.py, is not found. An access
under any test that could rule the unwrapped model out (`hasattr`, `isinstance`, a device or
distributed flag) or inside a `try` that catches AttributeError is left alone.
"""

from __future__ import annotations

import ast

from ..astutil import GUARD_WORD, dotted, names, parent_map
from ..context import Check, Context

WRAPPERS = frozenset(["DataParallel", "DistributedDataParallel", "DDP"])
# Tests that can tell the wrapped model from the plain one.
INTROSPECTION = frozenset(["hasattr", "isinstance", "getattr", "type"])
CATCHES = frozenset(["AttributeError", "Exception", "BaseException"])
Scope = ast.AST


def _wrapper_call(value: ast.AST | None) -> bool:
    """`DataParallel(m)`, `nn.DataParallel(m).to(device)`, `DDP(m, device_ids=[rank])`."""
    while isinstance(value, (ast.Call, ast.Attribute)):
        if isinstance(value, ast.Call):
            if dotted(value.func).rsplit(".", 1)[-1] in WRAPPERS:
                return True
            value = value.func
        else:
            value = value.value
    return False


def _wraps(stmt: ast.stmt, target: str) -> bool:
    if isinstance(stmt, ast.Assign):
        return _wrapper_call(stmt.value) and any(dotted(t) == target for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return _wrapper_call(stmt.value) and dotted(stmt.target) == target
    return False


def _always_wraps(body: list[ast.stmt], target: str) -> bool:
    """Does every path through `body` wrap `target` (or stop: `if not cuda: raise`)?"""
    for s in body:
        if _wraps(s, target) or isinstance(s, ast.Raise):
            return True
        if (
            isinstance(s, ast.If)
            and _always_wraps(s.body, target)
            and _always_wraps(s.orelse, target)
        ):
            return True
        if isinstance(s, ast.Try) and _always_wraps(s.body, target):
            return True
    return False


def _condition(node: ast.AST, parents: dict[int, ast.AST], scope: Scope) -> ast.expr | None:
    """The nearest `if` test above `node` that names a device, GPU count or distributed flag."""
    while id(node) in parents and node is not scope:
        parent = parents[id(node)]
        if (
            isinstance(parent, ast.If)
            and node is not parent.test
            and any(GUARD_WORD.search(n) for n in names(parent.test))
        ):
            return parent.test
        node = parent
    return None


def _tests_around(node: ast.AST, parents: dict[int, ast.AST], scope: Scope) -> list[ast.AST]:
    """The tests that decide whether `node` runs: enclosing `if`/`while`/conditional
    expressions, the other operands of an `and`/`or`, and `try` handlers' exception types."""
    tests: list[ast.AST] = []
    while id(node) in parents and node is not scope:
        parent = parents[id(node)]
        if isinstance(parent, (ast.If, ast.While, ast.IfExp)) and node is not parent.test:
            tests.append(parent.test)
        elif isinstance(parent, ast.BoolOp):
            tests.extend(v for v in parent.values if v is not node)
        elif isinstance(parent, ast.Try) and node in parent.body:
            tests.extend(h.type or ast.Name(id="BaseException") for h in parent.handlers)
        node = parent
    return tests


def _guarded(node: ast.AST, parents: dict[int, ast.AST], scope: Scope, target: str) -> bool:
    """Is the read under a test that can tell the wrapped model from the plain one: one on
    the model itself (`is_parallel(model)`, yolov7's trainer), `hasattr`/`isinstance`, a
    device or distributed flag, or a handler that catches AttributeError?"""
    for test in _tests_around(node, parents, scope):
        if any(w in INTROSPECTION or w in CATCHES or GUARD_WORD.search(w) for w in names(test)):
            return True
        if any(dotted(sub) == target for sub in ast.walk(test)):
            return True
    return False


def _scope(ctx: Context, target: str) -> Scope | None:
    """Where `target` lives: the class for `self.x`, else the function (or module)."""
    if target.startswith("self."):
        for f in reversed(ctx.funcs):
            if f.cls is not None:
                return f.cls.node
        return ctx.classes[-1].node if ctx.classes else None
    if "." in target:
        return None  # `args.model`, `trainer.model`: stored where this file cannot follow
    return ctx.funcs[-1].node if ctx.funcs else ctx.module


def _wrap_stmts(scope: Scope, target: str) -> list[ast.stmt]:
    return [s for s in ast.walk(scope) if isinstance(s, ast.stmt) and _wraps(s, target)]


def _home(parents: dict[int, ast.AST], node: ast.AST) -> ast.AST:
    """The function (or module, or class body) that holds `node`."""
    while id(node) in parents and not isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)
    ):
        node = parents[id(node)]
    return node


def _before(wraps: list[tuple[ast.stmt, ast.AST]], node: ast.AST, home: ast.AST) -> bool:
    """Is `node` (in `home`) read before a wrap in the same function (not wrapped yet)?"""
    return any(h is home and node.lineno <= w.lineno for w, h in wraps)  # type: ignore[attr-defined]


def findings(scope: Scope, target: str) -> list[tuple[ast.Attribute, ast.expr]]:
    """The unguarded `<target>.module` reads of a target wrapped only under a device test,
    each with that test. A script's global is followed at the top level only: a function's
    `model` may be its own parameter."""
    parents = parent_map(scope)
    wraps = _wrap_stmts(scope, target)
    conditions = [_condition(w, parents, scope) for w in wraps]
    if not wraps or any(c is None for c in conditions):
        return []  # wrapped unconditionally somewhere, or under a test about something else
    homed = [(w, _home(parents, w)) for w in wraps]
    if any(_always_wraps(list(getattr(h, "body", [])), target) for _, h in homed):
        return []  # `if ddp: m = DDP(m) else: m = DataParallel(m)`: wrapped either way
    out = []
    for node in ast.walk(scope):
        if not (
            isinstance(node, ast.Attribute)
            and node.attr == "module"
            and isinstance(node.ctx, ast.Load)
            and dotted(node.value) == target
        ):
            continue
        home = _home(parents, node)
        if (
            not _before(homed, node, home)
            and (not isinstance(scope, ast.Module) or home is scope)
            and not _guarded(node, parents, scope, target)
        ):
            out.append((node, conditions[0]))  # type: ignore[arg-type]
    return out


def on_assign(ctx: Context, node: ast.Assign | ast.AnnAssign) -> None:
    if not _wrapper_call(node.value):
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        target = dotted(t)
        scope = _scope(ctx, target) if target else None
        key = f"TD203:{id(scope)}:{target}"
        if scope is None or key in ctx.memo:
            continue
        ctx.memo[key] = True  # one analysis per wrapped name and scope
        for access, test in findings(scope, target):
            ctx.report(
                "TD203",
                access,
                f"`{target}.module` exists only where the model was wrapped, and it is wrapped "
                f"only when `{ast.unparse(test)}` (line {test.lineno}): elsewhere this raises "
                "AttributeError",
                f"getattr({target}, 'module', {target}), or keep the unwrapped model in its own "
                "variable",
            )


CHECK = Check(
    rules=("TD203",),
    words=("DataParallel", "DDP"),
    on_assign=on_assign,
)
