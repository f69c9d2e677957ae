"""Does a `torch.load` call surely load a state dict? Only then is `weights_only=True` exact.

On torch >= 2.6 `weights_only=True` refuses a pickled `nn.Module`, a NumPy array or any other
object; a state dict (tensors and plain data) loads the same either way. Evidence, on the AST:
the result goes into `load_state_dict(...)`; or it is bound to a name used only as a state dict
(`load_state_dict(sd)`, `sd.items()`/`keys()`/`values()`); or the project saves that same path
from a `state_dict()` (see fix_project.py).
"""

from __future__ import annotations

import ast
import contextlib

from .astutil import parent_map

DICT_VIEWS = frozenset(["items", "keys", "values"])
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)


class StateDictEvidence:
    def __init__(self, tree: ast.Module, lines: list[str], saved_paths: frozenset[str]) -> None:
        self.tree = tree
        self.lines = lines
        self.saved_paths = saved_paths
        self.parent = parent_map(self.tree)

    def call_at(self, line: int, col: int) -> ast.Call | None:
        """The call starting at 1-based `line` and 0-based character column `col`."""
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col_bytes = len(src[:col].encode("utf-8"))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and (node.lineno, node.col_offset) == (line, col_bytes):
                return node
        return None

    def _into_load_state_dict(self, node: ast.AST) -> bool:
        call = self.parent.get(id(node))
        if not (isinstance(call, ast.Call) and node in call.args):
            return False
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name == "load_state_dict"

    def holds_state_dict(self, call: ast.Call) -> bool:
        if self._into_load_state_dict(call):
            return True
        where = (
            call.args[0]
            if call.args
            else next((k.value for k in call.keywords if k.arg == "f"), None)
        )
        if where is not None and ast.unparse(where) in self.saved_paths:
            return True
        assign = self.parent.get(id(call))
        if (
            isinstance(assign, ast.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)
        ):
            return self._used_as_state_dict(assign.targets[0].id, assign)
        return False

    def _used_as_state_dict(self, name: str, assign: ast.Assign) -> bool:
        scope: ast.AST | None = assign
        while scope is not None and not isinstance(scope, SCOPES):
            scope = self.parent.get(id(scope))
        uses = [
            n
            for n in ast.walk(scope or self.tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        into = 0
        for use in uses:
            up = self.parent.get(id(use))
            if self._into_load_state_dict(use):
                into += 1
            elif not (
                isinstance(up, ast.Attribute)
                and up.attr in DICT_VIEWS
                and isinstance(self.parent.get(id(up)), ast.Call)
            ):
                return False  # used some other way: it may be any object
        if into:
            return True
        with contextlib.suppress(AttributeError):
            return bool(uses) and any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "load_state_dict"
                for n in ast.walk(scope)  # type: ignore[arg-type]
            )
        return False
