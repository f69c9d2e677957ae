"""TD401: `.numpy()` on a tensor that requires grad; TD403: `.numpy()` on a tensor that may
live on a GPU, without `.cpu()` first."""

from __future__ import annotations

import ast
import re

from ..astutil import chain, own_nodes
from ..context import Check, Context

# Results that never require grad: integer or boolean tensors (indices, comparisons).
NO_GRAD_RESULT = frozenset([
    "argmax", "argmin", "argsort", "long", "int", "bool", "nonzero", "eq", "ne", "gt", "lt",
    "ge", "le", "isnan", "isfinite",
])  # fmt: skip
DTYPE_WORD = re.compile(r"float|half|int|long|bool|double|dtype|complex|bfloat", re.I)
# An integer or boolean dtype given to `.to(…)` / `.type(…)`: the result cannot require grad
# (PixArt's `image.mul(255)…to("cpu", torch.uint8).numpy()`, eighteenth blind corpus).
INT_DTYPE = re.compile(r"\b(u?int(8|16|32|64)|long|short|bool|byte)\b")


def _to_integers(receiver: ast.expr) -> bool:
    """`x.to("cpu", torch.uint8)`, `x.type(torch.long)` somewhere in the chain."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("to", "type")
        and any(INT_DTYPE.search(ast.unparse(a)) for a in [*n.args, *(k.value for k in n.keywords)])
        for n in ast.walk(receiver)
    )


def _grad_visible(ctx: Context, receiver: ast.expr, names: list[str], root: ast.expr) -> bool:
    if ctx.no_grad or {"detach", "data", "item", "tolist"} & set(names):
        return False
    if NO_GRAD_RESULT & set(names) or _to_integers(receiver):
        return False
    if {"weight", "bias"} & set(names[-1:]):
        return True
    if isinstance(root, ast.Name) and root.id in ctx.param_loop_vars:
        return True
    f = ctx.func
    return bool(
        f
        and isinstance(root, ast.Name)
        and not _reads_attribute(receiver)
        and f.trains()
        and f.from_call(root.id)
        and not _without_grad(ctx, root.id, receiver.lineno)
    )


LABEL_KEYS = frozenset(["labels", "label", "target", "targets"])
# What a data loader yields: any field of it (`data["image"]`) is input data, not a result of
# the model (sam-hq's train.py, `inputs = data["image"]` … `inputs.cpu().numpy()`).
BATCH_NAMES = frozenset(["data", "batch_data", "data_batch", "inputs_dict"])


def _without_grad(ctx: Context, name: str, line: int) -> bool:
    """Is `name`, as last assigned before `line`, a tensor that cannot require grad: an index
    or comparison result (`preds = logits.argmax(dim=2)`, `mask = gt > begin`), or a label
    read from the batch (`gt = batch["labels"][:, 1:].to(preds.device)`)? openvla's action
    accuracy, tenth blind corpus: six `.cpu().numpy()` of such tensors."""
    found = _last_assigned(ctx, name, line)
    # `inputs = inputs.cuda()`: what it was before the move
    for _ in range(3):
        if found is None:
            return False
        _, root_ = chain(found[1])
        if not (isinstance(root_, ast.Name) and root_.id == name and found[1] is not root_):
            break
        found = _last_assigned(ctx, name, found[0])
    if found is None:
        return False
    last = found[1]
    if isinstance(last, (ast.Compare, ast.BoolOp)):
        return True
    names, root = chain(last)
    if NO_GRAD_RESULT & set(names):
        return True
    first = last
    while isinstance(first, (ast.Call, ast.Attribute)) or (
        isinstance(first, ast.Subscript) and isinstance(first.value, ast.Subscript)
    ):
        first = first.func if isinstance(first, ast.Call) else first.value
    return (
        isinstance(first, ast.Subscript)
        and isinstance(root, ast.Name)
        and isinstance(first.slice, ast.Constant)
        and (
            (root.id in ("batch", "sample") and first.slice.value in LABEL_KEYS)
            or (root.id in BATCH_NAMES and isinstance(first.slice.value, str))
        )
    )


def _reads_attribute(expr: ast.expr) -> bool:
    """`sched.alphas_cumprod` reads a stored attribute (a buffer, not the training output);
    `out.cpu()` only calls methods."""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call):
            expr = expr.func.value if isinstance(expr.func, ast.Attribute) else expr.func
        elif isinstance(expr, ast.Attribute):
            return True
        else:
            expr = expr.value
    return False


def _placement(expr: ast.expr) -> bool | None:
    """Where the outermost move in `expr` sends it: True for a device (`.cuda()`,
    `.to(device)`), False for the CPU (`.cpu()`, `.to("cpu")`, `.to(self._cpu_device)`),
    None when it does not move (or only changes dtype: `.to(torch.float32)`)."""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            attr = expr.func.attr
            if attr in ("cpu", "numpy", "tolist", "item"):
                return False
            if attr == "cuda":
                return True
            if attr == "to" and (expr.args or expr.keywords):
                dev = [k.value for k in expr.keywords if k.arg == "device"] or expr.args[:1]
                text = ast.unparse(dev[0]) if dev else ""
                if "cpu" in text.lower():
                    return False
                if dev and not DTYPE_WORD.search(text):
                    return True
            expr = expr.func.value
        elif isinstance(expr, ast.Call):
            expr = expr.func
        else:
            expr = expr.value
    return None


def _scope(ctx: Context, what: str) -> tuple[str, list[ast.stmt]]:
    """The memo key of `what` for the current function (or module), and that scope's body
    (not copied: asked on every lookup, read only on a miss)."""
    f = ctx.func
    if f is not None:
        return f"{what}:{id(f.node)}", f.node.body
    return f"{what}:module", ctx._module.body if ctx._module else []


def _assignments(ctx: Context) -> list[tuple[int, str, ast.expr]]:
    """(line, name, value) of the plain assignments in the current function (or module)."""
    key, body = _scope(ctx, "assignments")
    got = ctx.memo.get(key)
    if got is None:
        # in source order, by where each value starts: two assignments on one line (`sd =
        # load(p); sd = sd.get(k)`, FunASR) never compare their values (AST nodes)
        got = sorted(
            (
                (n.lineno, t.id, v)
                for n in own_nodes(body)
                if isinstance(n, ast.Assign)
                for t, v in _pairs(n)
            ),
            key=lambda a: (a[0], a[2].col_offset),
        )
        ctx.memo[key] = got
    return got  # type: ignore[return-value]


def _pairs(n: ast.Assign) -> list[tuple[ast.Name, ast.expr]]:
    """(name, value) of `x = v` and of `a, b = u, v` (sam-hq's `inputs, labels =
    data["image"], data["label"]`)."""
    out = []
    for t in n.targets:
        if isinstance(t, ast.Name):
            out.append((t, n.value))
        elif (
            isinstance(t, ast.Tuple)
            and isinstance(n.value, ast.Tuple)
            and len(t.elts) == len(n.value.elts)
        ):
            out += [
                (e, v) for e, v in zip(t.elts, n.value.elts, strict=True) if isinstance(e, ast.Name)
            ]
    return out


def _last_assigned(ctx: Context, name: str, line: int) -> tuple[int, ast.expr] | None:
    """(line, value) of the last plain assignment to `name` before `line`, in this scope."""
    last = None
    for lineno, target, value in _assignments(ctx):
        if lineno >= line:
            break
        if target == name:
            last = (lineno, value)
    return last


def _moves(ctx: Context) -> list[tuple[int, str, bool]]:
    """(line, name, to a device?) of the bare `name.to(device)` / `name.cuda()` / `name.cpu()`
    statements of the current function (or module): a module moves in place."""
    key, body = _scope(ctx, "moves")
    got = ctx.memo.get(key)
    if got is None:
        got = []
        for n in own_nodes(body):
            if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)):
                continue
            func = n.value.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                placed = _placement(n.value)
                if placed is not None:
                    got.append((n.lineno, func.value.id, placed))
        got.sort()
        ctx.memo[key] = got
    return got  # type: ignore[return-value]


def _on_device(ctx: Context, name: str, line: int, depth: int = 0, called: bool = False) -> bool:
    """Is `name`, as last assigned before `line`, a tensor (or model output) on a device?
    `x = x.cuda()`; `model = Net().to(device)` then `out = model(x)`; not after `out = out.cpu()`.
    A model (`called`) also moves in place: `policy.to(DEVICE)` then `policy(obs).numpy()`
    (PPO-Jumpstart's test.py, blind set 309)."""
    last = _last_assigned(ctx, name, line)
    if called:
        since = last[0] if last else 0
        moved = [m for at, target, m in _moves(ctx) if target == name and since <= at < line]
        if moved:
            return moved[-1]
    if last is None or depth > 3:
        return False
    lineno, value = last
    placed = _placement(value)
    if placed is not None:
        return placed
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return _on_device(ctx, value.func.id, lineno, depth + 1, called=True)
    return False


def _calls(expr: ast.expr, root: ast.expr) -> bool:
    """Does the chain `expr` call its root (`policy(obs).detach()`), as a model is called?"""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call) and expr.func is root:
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False


def on_call(ctx: Context, node: ast.Call) -> None:
    func = node.func
    if node.args or node.keywords or not isinstance(func, ast.Attribute):
        return
    names, root = chain(func.value)
    if _grad_visible(ctx, func.value, names, root):
        ctx.report(
            "TD401",
            node,
            "`.numpy()` on a tensor that requires grad raises RuntimeError",
            ".detach().cpu().numpy()",
            ctx.insert_after(root, ".detach()"),
            confidence="medium",
        )
    placed = _placement(func.value)
    if placed is None and isinstance(root, ast.Name):
        placed = _on_device(ctx, root.id, node.lineno, called=_calls(func.value, root))
    if placed and not ctx.on_cpu_branch():
        ctx.report(
            "TD403",
            node,
            "`.numpy()` on a tensor that may be on a GPU raises "
            '"can\'t convert cuda:0 device type tensor to numpy"',
            ".cpu().numpy() (or .detach().cpu().numpy())",
        )


CHECK = Check(
    rules=("TD401", "TD403"),
    attrs=frozenset(["numpy"]),
    calls=frozenset(["numpy"]),
    on_call=on_call,
)
