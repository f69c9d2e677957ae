"""TD602 for openai-whisper: its model moved to a device that may be MPS.

`Whisper.__init__` registers `alignment_heads` as a sparse COO buffer (`all_heads.to_sparse()`),
and `whisper.load_model(name, device=…)` ends with `model.to(device)`. On MPS that raises
"Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the
'SparseMPS' backend" (pytorch/pytorch#87886, reported there from Whisper). Three projects
of the blind corpora were labelled with it, each picking "mps" on Apple Silicon and handing it
to Whisper: VALL-E-X (set 12), chatterbox-pipeline (200), mlx-whisper (264). Most Whisper
projects give it `"cuda" if … else "cpu"` on purpose (Macs on the CPU): a device the scope
only ever sets to one of those is not flagged.

Sparse MPS support landed from mid-2025 on (pytorch/pytorch#157238, and #165232 of October
2025, which names the Whisper issue as fixed): the finding is not made where the project
requires torch 2.10 or later. Whisper-meetings (set 223, torch unpinned) documents Whisper on
MPS as working, so a recent release may well move it; the older ones crash.

The `whisper` module is openai-whisper's; faster-whisper and whisperX have other loaders (no
torch module to move)."""

from __future__ import annotations

import ast

from ..astutil import assigned_values, call_name, dotted
from ..context import Check, Context
from .mps import SPARSE_MESSAGE, _kept_off_mps, _not_mps

LOADER = "load_model"
# The first torch release after pytorch/pytorch#165232 (merged October 2025).
SPARSE_MPS = (2, 10)


def _whisper_loaders(ctx: Context) -> frozenset[str]:
    """The names that call openai-whisper's load_model here: `whisper.load_model` (or its
    alias) and a `load_model` imported from whisper."""
    if "whisper_loaders" not in ctx.memo:
        found: set[str] = set()
        # a text test first: `.to(` calls reach this hook in every file the walk enters
        for node in ast.walk(ctx.module) if "whisper" in ctx.text else ():
            if isinstance(node, ast.Import):
                found |= {
                    f"{a.asname or a.name}.{LOADER}" for a in node.names if a.name == "whisper"
                }
            elif isinstance(node, ast.ImportFrom) and node.module == "whisper" and not node.level:
                found |= {a.asname or a.name for a in node.names if a.name == LOADER}
        ctx.memo["whisper_loaders"] = frozenset(found)
    return ctx.memo["whisper_loaders"]  # type: ignore[return-value]


def _values_of(ctx: Context, name: str) -> list[ast.expr]:
    """What the enclosing scope assigns to `name`, else what the module does."""
    scope = ctx.func.node if ctx.func is not None else ctx.module
    return assigned_values(scope, name) or assigned_values(ctx.module, name)


def _loads_whisper(ctx: Context, expr: ast.expr | None) -> ast.Call | None:
    """The whisper.load_model call `expr` is, or that a name holds: among the values the scope
    (else the module) gives it, the others being moves of it (`m = m.to(device)`)."""
    values = [expr] if expr is not None else []
    if isinstance(expr, ast.Name):
        values = _values_of(ctx, expr.id)
    loaders = _whisper_loaders(ctx)
    loads = [v for v in values if isinstance(v, ast.Call) and dotted(v.func) in loaders]
    moves = [v for v in values if isinstance(v, ast.Call) and call_name(v) == "to"]
    if len(loads) == 1 and len(loads) + len(moves) == len(values):
        return loads[0]
    return None


def _device_argument(call: ast.Call) -> ast.expr | None:
    """load_model(name, device=None, download_root=None, in_memory=False)'s device; for
    `.to(…)`, its first argument."""
    given = [k.value for k in call.keywords if k.arg == "device"]
    if given:
        return given[0]
    return call.args[1] if len(call.args) > 1 else None


def _device_values(ctx: Context, dev: ast.expr) -> list[ast.expr]:
    """What `dev` may hold: itself, or every value the scope (else the module) gives a name."""
    values = _values_of(ctx, dev.id) if isinstance(dev, ast.Name) else []
    return values or [dev]


def _judged(ctx: Context, dev: ast.expr | None, at: int) -> dict[str, str] | None:
    """None where the device is surely not MPS: absent, a CPU or CUDA literal, a name every
    assignment gives one of those, one moved off MPS before `at`. `medium` where the file
    itself names MPS for it (`device = "mps" if torch.backends.mps.is_available() else
    "cpu"`); `low` for a device chosen elsewhere: on the Whisper projects of sets 153-264, a
    helper or a caller's choice was as often `"cuda" if … else "cpu"` on purpose (Whisper on
    a Mac's CPU) or a pick that catches the sparse error and retries on the CPU."""
    if dev is None or (isinstance(dev, ast.Constant) and dev.value is None):
        return None
    if _not_mps(dev) or _kept_off_mps(ctx, dev, at):
        return None
    values = _device_values(ctx, dev)
    if all(_not_mps(v) for v in values):
        return None
    if any("mps" in ast.unparse(v).lower() for v in values):
        return {"confidence": "medium"}
    why = "the device is chosen elsewhere, which may keep Whisper off MPS"
    return {"confidence": "low", "why": why}


def on_call(ctx: Context, node: ast.Call) -> None:
    loaders = _whisper_loaders(ctx)
    if not loaders:
        return  # no openai-whisper here: most files, and every `.to()` of them reaches this
    if dotted(node.func) in loaders:
        dev = _device_argument(node)
    elif (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and node.args
        and (loaded := _loads_whisper(ctx, node.func.value)) is not None
        and _device_argument(loaded) is None  # already placed by load_model: flagged there
    ):
        dev = node.args[0]
    else:
        return
    floor = ctx.project.torch_min
    judged = None if floor is not None and floor >= SPARSE_MPS else _judged(ctx, dev, node.lineno)
    if judged is None:
        return
    explicit = "mps" in ast.unparse(dev).lower()  # type: ignore[arg-type]
    ctx.report(
        "TD602",
        node,
        "openai-whisper's model holds a sparse buffer (alignment_heads): " + SPARSE_MESSAGE,
        'load Whisper with device="cpu" where MPS would be picked (the rest of the work can '
        "stay on MPS)",
        needs=None if explicit else ("mps",),
        **judged,
    )


CHECK = Check(
    rules=("TD602",),
    words=("whisper", "load_model"),
    calls=frozenset([LOADER, "to"]),
    on_call=on_call,
)
