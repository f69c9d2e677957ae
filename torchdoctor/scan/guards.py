"""Is the current node under a device guard? `if torch.cuda.is_available()`, an early
`if not cuda: return`, `assert cuda…`, `import triton`, a `cuda`/`gpu` named function, class,
decorator or `with` block, a `"cuda" if … else "cpu"` expression. The walk pushes what
encloses a node; a predicate is evaluated only when a check asks, once per node."""

from __future__ import annotations

import ast
from collections.abc import Callable

from .astutil import DEVICE_SPECIFIC_NAME, is_guard

# (predicate, node) for a possible guard, or None for a known one
Guard = tuple[Callable[[ast.AST], bool], ast.AST] | None


class DeviceGuards:
    """The guard stack of the walk (part of the scan's Context)."""

    def _start_guards(self) -> None:
        self._guards: list[Guard] = []
        self._guard_memo: dict[int, bool] = {}

    @property
    def guard(self) -> bool:
        """Is the current node under a device guard?"""
        for entry in self._guards:
            if entry is None:
                return True
            pred, node = entry
            hit = self._guard_memo.get(id(node))
            if hit is None:
                hit = self._guard_memo[id(node)] = pred(node)
            if hit:
                return True
        return False

    def _decorated_guard(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
        return bool(DEVICE_SPECIFIC_NAME.search(node.name)) or any(
            is_guard(d) for d in node.decorator_list
        )
