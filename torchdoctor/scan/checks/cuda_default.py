"""TD005: a parameter that defaults to "cuda" (`def build(device="cuda")`).

Whoever calls without the argument gets CUDA, and on a Mac or a CPU machine that raises.
The project view decides (project.py, needs "callers"): when every call in the scanned tree
passes the argument the default is never used and nothing is reported; a call that leaves it
out makes the finding `high`; one no scanned file calls is `low`: in fourteen labelled corpora
1 of 5 such public defaults was a pitfall to its labeller (the calls were in notebooks, which
the scan does not read). A module's `forward` is called through the module, `m(x)`, so its
callers cannot be found: `low`."""

from __future__ import annotations

import ast

from ..astutil import CUDA_STRING, dotted
from ..context import Check, Context

CALLED_THROUGH = frozenset(["forward", "__call__"])  # run as `m(…)`, never by name


def _defaults(node: ast.FunctionDef | ast.AsyncFunctionDef):
    """(parameter, default, index among the positional arguments or -1)."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    for i, (arg, default) in enumerate(
        zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
    ):
        yield arg.arg, default, len(positional) - len(a.defaults) + i
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if kw_default is not None:
            yield arg.arg, kw_default, -1


def cuda_default(default: ast.expr) -> str | None:
    """The default as written when it names CUDA: `"cuda"`, `"cuda:0"` or `torch.device("cuda")`
    (sam2's load_video_frames(…, compute_device=torch.device("cuda")), fifth blind corpus)."""
    text = default
    if isinstance(default, ast.Call) and dotted(default.func).rsplit(".", 1)[-1] == "device":
        text = default.args[0] if len(default.args) == 1 and not default.keywords else None
    if (
        isinstance(text, ast.Constant)
        and isinstance(text.value, str)
        and CUDA_STRING.fullmatch(text.value)
    ):
        return f'"{text.value}"' if text is default else ast.unparse(default)
    return None


def _self_attr(target: ast.expr) -> str | None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return target.attr if target.value.id == "self" else None
    return None


def _unused(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str, module: ast.AST) -> bool:
    """The parameter is only kept, `self.x = param`, and `self.x` is read nowhere in the file:
    its default reaches no tensor (eai-vc's FrozenEmbeddingDataset keeps `device="cuda"` while
    its `.to(self.device)` lines are commented out; twentieth blind corpus). A parameter never
    read at all is still reported: a stub or base method whose overrides use it."""
    kept: set[str] = set()
    stored: set[int] = set()  # the `param` of each `self.x = param`
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name):
            attrs = [_self_attr(t) for t in sub.targets]
            if sub.value.id == param and all(attrs):
                kept.update(a for a in attrs if a)
                stored.add(id(sub.value))
    for sub in ast.walk(node):
        is_read = isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id == param
        if is_read and id(sub) not in stored:
            return False
    return bool(kept) and not any(
        isinstance(sub, ast.Attribute) and sub.attr in kept and isinstance(sub.ctx, ast.Load)
        for sub in ast.walk(module)
    )


def on_def(ctx: Context, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    header = ctx.lines[node.lineno - 1 : node.body[0].lineno]
    if not any("cuda" in line for line in header) or ctx.guard:
        return
    cls = ctx.classes[-1] if ctx.classes and not ctx.funcs else None
    method = cls is not None and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
    )
    name = cls.node.name if cls is not None and node.name == "__init__" else node.name
    # a method other than the constructor is called on an object: `x.name(…)` (callsites.py)
    wanted = f".{name}" if cls is not None and node.name != "__init__" else name
    for param, default, index in _defaults(node):
        value = cuda_default(default)
        if value is None or _unused(node, param, ctx.module):
            continue
        at = index - 1 if method and index >= 0 else index  # callers do not pass self
        # a script's default is the machine its author runs it on (a CLI's default device:
        # descript-audio-codec's decode.py, ninth blind corpus), unless the script itself
        # falls back to the CPU
        if ctx.is_script:
            scope = "private" if ctx.falls_back_to_cpu else "script"
        else:
            scope = "private" if name.startswith("_") else "public"
        # a module's forward is called through the module, `m(x, device)`: its calls cannot be
        # told from other modules' (stable-audio-tools' conditioners, eighth blind corpus)
        judged: dict = (
            {
                "confidence": "low",
                "why": f"`{node.name}` is called through its object: callers unseen",
            }
            if method and node.name in CALLED_THROUGH
            else {"confidence": "medium", "needs": ("callers", wanted, param, str(at), scope)}
        )
        ctx.report(
            "TD005",
            default,
            f"`{name}(…, {param}={value})`: a call without `{param}=` runs on CUDA "
            "and fails where there is none",
            f"default to None and pick the device inside (`{param} = {param} or "
            "('cuda' if torch.cuda.is_available() else 'cpu')`), or take it from an input",
            **judged,
        )


CHECK = Check(rules=("TD005",), words=("cuda",), on_def=on_def)
