"""Which names a file binds, for --fix: an edit must never read a name the file lacks.

Done on the AST and with `symtable` (the compiler's own scope analysis, in C), so it costs
about what a compile does, whatever the size of the file.
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable

from .astutil import imported_names

MODULE_NAMES = frozenset(
    ["__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__path__",
     "__builtins__", "__annotations__", "__dict__", "__module__", "__qualname__", "__class__"]
)  # fmt: skip
BUILTINS = frozenset(dir(builtins)) | MODULE_NAMES
STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+\*", re.M)


def torch_binding(tree: ast.Module) -> str | None:
    """The name a top-level `import torch [as t]` (or `import torch.x`) binds, if any."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is None and alias.name.split(".")[0] == "torch":
                    return "torch"
                if alias.asname is not None and alias.name == "torch":
                    return alias.asname
    return None


def binds(tree: ast.Module, name: str) -> bool:
    """Does anything in the file bind `name` (assignment, import, parameter, def, class…)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == name
        ):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and name in imported_names(node):
            return True
    return False


def import_line(tree: ast.Module) -> int:
    """The 1-based line before which `import torch` goes: after a docstring and the
    `from __future__` imports, else before the first statement (comments and a coding cookie
    above it stay first)."""
    at = None
    for i, stmt in enumerate(tree.body):
        docstring = (
            i == 0
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        )
        future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        if not (docstring or future):
            break
        at = stmt.end_lineno
    if at is not None:
        return at + 1
    first = tree.body[0] if tree.body else None
    if first is None:
        return 1
    decorators = getattr(first, "decorator_list", [])
    return min([first.lineno, *(d.lineno for d in decorators)])


def unbound(code: str) -> set[str]:
    """Names read in some scope that no scope binds: ruff's F821, flow-insensitive. Empty
    when a star import makes every name possibly bound."""
    top = symtable.symtable(code, "<fix>", "exec")
    tables, todo = [], [top]
    while todo:
        table = todo.pop()
        tables.append(table)
        todo.extend(table.get_children())
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    bound |= {  # `global x; x = 1` inside a function binds a module name too
        s.get_name()
        for t in tables
        for s in t.get_symbols()
        if s.is_declared_global() and (s.is_assigned() or s.is_imported())
    }
    if STAR_IMPORT.search(code):
        return set()
    return {
        s.get_name()
        for t in tables
        for s in t.get_symbols()
        if s.is_referenced()
        and (t is top or s.is_global())
        and s.get_name() not in bound
        and s.get_name() not in BUILTINS
    }
