"""TD201: `nn.DataParallel`; TD202: `DataParallel(model.cuda())`."""

from __future__ import annotations

import ast
import re

from ..astutil import names
from ..context import Check, Context

# DataParallel chosen on purpose: a "dp" strategy, or the fallback beside DDP.
DP_STRATEGY = re.compile(r"^(dp|data_?parallel)$|DataParallel(Strategy|Plugin|Accelerator)", re.I)
DDP = re.compile(r"DistributedDataParallel|\bDDP\b|FullyShardedDataParallel")


def _deliberate(ctx: Context) -> bool:
    if DDP.search(ctx.text):
        return True  # the project runs DDP where it can; DataParallel is its fallback
    scopes = [f.node.name for f in ctx.funcs] + [c.node.name for c in ctx.classes]
    scopes += [f.cls.node.name for f in ctx.funcs if f.cls]
    tests = [n for t in ctx.if_tests for n in names(t)]
    return any(DP_STRATEGY.search(n) for n in scopes + tests)


def on_call(ctx: Context, node: ast.Call) -> None:
    first = node.args[0] if node.args else None
    inner_cuda = (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "cuda"
    )
    if inner_cuda and not ctx.guard:
        ctx.skip_nodes.add(id(first))
        ctx.report(
            "TD202",
            node,
            "`DataParallel(model.cuda())` crashes without CUDA, and DataParallel is slow",
            "model.to(device); wrap in DistributedDataParallel when several GPUs are present",
        )
    elif not _deliberate(ctx):
        ctx.report(
            "TD201",
            node,
            "`nn.DataParallel` is single-process and slower than DistributedDataParallel",
            "torch.nn.parallel.DistributedDataParallel, launched with torchrun",
            # advice, not a failure: DataParallel runs (on one device it is a plain call), and
            # inference code uses it on purpose (EasyOCR, stylegan2's FID: the fourth blind
            # corpus judged all six lookalikes); shown with --confidence low
            confidence="low",
        )


CHECK = Check(
    rules=("TD201", "TD202"),
    words=("DataParallel",),
    calls=frozenset(["DataParallel"]),
    on_call=on_call,
)
