"""No rule of its own: notes, for the project view, the files a `torch.save` writes from
CPU-only data (RNG or scheduler state, dataset caches, `.cpu()` tensors). A `torch.load` of
such a file needs no `map_location` (TD101 is dropped for it, in any file of the project)."""

from __future__ import annotations

import ast

from ..context import Check, Context
from ..saved_files import cpu_only, path_argument, path_keys


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.torch_call(node) != "save":
        return
    obj, dest = path_argument(node, 0, "obj"), path_argument(node, 1, "f")
    if obj is None or dest is None:
        return
    scope = ctx.func.node if ctx.func else ctx.module
    if cpu_only(obj, scope, frozenset(ctx.torch_names)):
        ctx.summary.cpu_saves.extend(path_keys(ctx.path, dest))


CHECK = Check(
    rules=("TD101",), attrs=frozenset(["save"]), calls=frozenset(["save"]), on_call=on_call
)
