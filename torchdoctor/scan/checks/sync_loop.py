"""TD402: `.item()` / `torch.cuda.synchronize()` on every iteration of a hot loop.

Not every per-step sync is worth changing: a training loop that shows its loss every step
(printed, logged, put on a progress bar) syncs on purpose, and a loop that times itself must
sync. The confidence says which are avoidable: a sync in a loop nested inside the training
step (one per parameter or loss term) is `high`; a value summed or collected and never shown
is `medium`; the rest (shown every step or after the loop, or used in a Python decision) is
`low`."""

from __future__ import annotations

import ast
import re

from ..astutil import call_name, dotted
from ..context import Check, Context, Loop

# Calls that show a value to a person: print, loggers, progress bars, trackers.
SHOWING = re.compile(
    r"^(print|log\w*|info|debug|warning|set_postfix\w*|set_description\w*|add_scalars?|"
    r"write|update|put_scalars?|display|pprint|echo|format|track\w*)$"
)
ACCUMULATE = frozenset(["append", "extend", "add"])


def _statement_of(loop: ast.AST, node: ast.AST) -> ast.stmt | None:
    """The statement of `loop`'s body (at any depth) that holds `node`, innermost."""
    best = None
    for stmt in ast.walk(loop):
        if isinstance(stmt, ast.stmt) and stmt is not loop and _holds(stmt, node):
            best = stmt
    return best


def _holds(tree: ast.AST, node: ast.AST) -> bool:
    return any(sub is node for sub in ast.walk(tree))


def _shown(loop: ast.AST, stmt: ast.stmt, node: ast.Call) -> bool:
    """Does the value reach a print / logger / progress bar in this iteration?"""
    names: set[str] = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and SHOWING.match(call_name(sub)) and _holds(sub, node):
            return True
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = {dotted(t) or dotted(getattr(t, "value", t)) for t in targets} - {""}
    if not names:
        return False
    for sub in ast.walk(loop):
        if isinstance(sub, ast.Call) and SHOWING.match(call_name(sub)):
            used = {dotted(n) for n in ast.walk(sub) if isinstance(n, (ast.Name, ast.Attribute))}
            if names & used:
                return True
    return False


def _accumulated(stmt: ast.stmt, node: ast.Call) -> bool:
    if isinstance(stmt, ast.AugAssign):
        return True
    return any(
        isinstance(sub, ast.Call) and call_name(sub) in ACCUMULATE and _holds(sub, node)
        for sub in ast.walk(stmt)
    )


def _accumulator(stmt: ast.stmt, node: ast.Call) -> str:
    """The name a value is summed or collected into: `total += …`, `xs.append(…)`."""
    if isinstance(stmt, ast.AugAssign):
        target = stmt.target
        # `token_counts["raw"] += …`: the dict is what is shown or returned (litgpt)
        return dotted(target.value if isinstance(target, ast.Subscript) else target)
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and call_name(sub) in ACCUMULATE and _holds(sub, node):
            return dotted(getattr(sub.func, "value", sub.func))
    return ""


def _shown_later(ctx: Context, stmt: ast.stmt, node: ast.Call) -> bool:
    """Is the accumulator shown somewhere in the function (at module level: the outermost
    loop), e.g. `writer.add_scalar("clipfrac", np.mean(clipfracs))` after the epoch, or
    returned for the caller to show (PPO's `return value_loss_epoch, …`, twelfth corpus)?"""
    name = _accumulator(stmt, node)
    if not name:
        return False
    scope = ctx.func.node if ctx.func else ctx.loops[0].node
    names = {name} | _derived(scope, name)
    if _formatted(scope, names):
        return True
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Return) and sub.value is not None:
            used = {dotted(n) for n in ast.walk(sub.value) if isinstance(n, ast.Name)}
            if names & used:
                return True
        if _recorded(sub, names):
            return True
        if isinstance(sub, ast.Call) and SHOWING.match(call_name(sub)) and not _holds(stmt, sub):
            used = {dotted(n) for n in ast.walk(sub) if isinstance(n, (ast.Name, ast.Attribute))}
            if names & used:
                return True
    return False


def _recorded(node: ast.AST, names: set[str]) -> bool:
    """`stats["train/loss"] = np.mean(losses)`: stored under a key of a statistics record,
    which is there to be reported (rlkit's VAE trainer fills `self.eval_statistics` after each
    epoch; twenty-fourth blind corpus)."""
    if not isinstance(node, ast.Assign) or not any(
        isinstance(t, ast.Subscript) for t in node.targets
    ):
        return False
    return bool(names & {dotted(n) for n in ast.walk(node.value) if isinstance(n, ast.Name)})


def _formatted(scope: ast.AST, names: set[str]) -> bool:
    """Is the value written into text (an f-string, `.format`, `%`)? Text is for a person:
    Real-Time-Voice-Cloning's `msg = f"… {loss_window.average:#.4} …"`, then `stream(msg)`."""
    for sub in ast.walk(scope):
        if isinstance(sub, ast.JoinedStr) or (
            isinstance(sub, ast.BinOp)
            and isinstance(sub.op, ast.Mod)
            and isinstance(sub.left, ast.Constant)
            and isinstance(sub.left.value, str)
        ):
            used = {dotted(n) for n in ast.walk(sub) if isinstance(n, (ast.Name, ast.Attribute))}
            if names & used or any(u.split(".")[0] in names for u in used if u):
                return True
    return False


def _derived(scope: ast.AST, name: str) -> set[str]:
    """Names assigned from the accumulator: `mean_loss = loss_value / 5`, then printed
    (EasyOCR's CRAFT trainer, fourth blind corpus)."""
    out = set()
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Assign) and any(
            dotted(n) == name for n in ast.walk(sub.value) if isinstance(n, ast.Name)
        ):
            out |= {dotted(t) for t in sub.targets} - {""}
    return out


def _host_number(loop: Loop, node: ast.Call) -> bool:
    """`int(lengths[i].item() / 2)`: a Python int that sizes or slices what comes next
    (StyleTTS2's per-utterance loop, seventh blind corpus); the host needs it, so the sync is
    the point."""
    stmt = _statement_of(loop.node, node)
    return stmt is not None and any(
        isinstance(sub, ast.Call) and dotted(sub.func) == "int" and _holds(sub, node)
        for sub in ast.walk(stmt)
    )


def _metrics_dict(loop: Loop) -> bool:
    """`for key, val in metrics.items(): metrics[key] = val.item()`: the step's metrics made
    numbers to be logged, one sync each (jukebox's train.py, fifteenth blind corpus)."""
    it = getattr(loop.node, "iter", None)
    return isinstance(it, ast.Call) and call_name(it) == "items" and not it.args


def _item_confidence(ctx: Context, node: ast.Call) -> tuple[str, str] | None:
    """(confidence, grounds) of an `.item()` sync, or None when it is not per step."""
    loops = ctx.loops
    inner = loops[-1]
    if ctx.if_depth != inner.if_depth:
        return None  # under an `if` in the loop: every N steps
    if inner.kind()[0]:
        training: Loop = inner
    else:
        outer = next((o for o in reversed(loops[:-1]) if o.kind()[0]), None)
        if outer is None or inner.if_depth != outer.if_depth:
            return None  # no training loop, or the inner loop runs every N steps (validation)
        if _host_number(inner, node):
            return "low", "the value sizes or indexes work on the host: a sync it needs"
        if _metrics_dict(inner):
            return "low", "a dict of metrics turned into numbers for logging"
        return "high", "a sync on every iteration of a loop inside the training step"
    stmt = _statement_of(training.node, node)
    if stmt is None:
        return None
    if _shown(training.node, stmt, node):
        return "low", "the value is shown every step: a sync on purpose"
    if _accumulated(stmt, node):
        if _shown_later(ctx, stmt, node):
            return "low", "collected every step to be shown after the loop: a sync on purpose"
        return "medium", "summed or collected on the host every step, not shown"
    return "low", "the value is used on the host every step"


def on_call(ctx: Context, node: ast.Call) -> None:
    if not ctx.loops or not isinstance(node.func, ast.Attribute):
        return
    loop = ctx.loops[-1]
    if node.func.attr == "synchronize":
        if ctx.if_depth != loop.if_depth:
            return  # under an `if` in the loop: every N steps (DINOv2's logging and checkpoints)
        if ctx.torch_call(node) == "cuda.synchronize" and not loop.kind()[1]:
            ctx.report(
                "TD402",
                node,
                "`torch.cuda.synchronize()` in a loop stalls the GPU pipeline every iteration",
                "synchronize once after the loop (or only when timing)",
                confidence="medium",
            )
        return
    if node.args or node.keywords:
        return
    judged = _item_confidence(ctx, node)
    if judged is None:
        return
    confidence, grounds = judged
    ctx.report(
        "TD402",
        node,
        "`.item()` in a training loop waits for the GPU every step",
        "accumulate on the device; call .item() every N steps (inside an `if`)",
        confidence=confidence,
        why=grounds,
    )


CHECK = Check(
    rules=("TD402",),
    words=("synchronize",),
    attrs=frozenset(["item"]),
    calls=frozenset(["item", "synchronize"]),
    on_call=on_call,
)
