"""What names mean in the file: which are torch (`import torch as th`, `from torch import
load`), what the module and its functions bind and where, and which classes and functions
the file defines. Everything but the imports is computed on first use."""

from __future__ import annotations

import ast

from .astutil import dotted, first_stores
from .scopes import Func

DEVICE_VARIABLE = "device"
EMPTY_MODULE = ast.Module(body=[], type_ignores=[])


class Bindings:
    """Import resolution and bindings (part of the scan's Context, which walks `funcs`)."""

    funcs: list[Func]
    memo: dict[str, object]
    _module: ast.Module | None

    def _start_bindings(self) -> None:
        self.torch_names = {"torch"}
        self.imported: dict[str, str] = {}  # local name -> "module.name" of `from m import n`
        self._module = None
        self._module_stores: dict[str, int] | None = None
        self._defined: set[str] | None = None

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == "torch" and a.asname:
                self.torch_names.add(a.asname)
            elif a.asname and a.name.startswith("torch."):
                # `import torch.utils.model_zoo as model_zoo` (pytorch-retinanet's model.py)
                self.imported[a.asname] = a.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level and node.module.split(".")[0] == "torch":
            for a in node.names:
                self.imported[a.asname or a.name] = f"{node.module}.{a.name}"

    def is_torch(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in self.torch_names

    def torch_call(self, node: ast.Call) -> str | None:
        """ "zeros" for `torch.zeros(…)` / `th.zeros(…)`, "cuda.synchronize" for
        `torch.cuda.synchronize()`, the imported name for `from torch import load`; else None."""
        parts = dotted(node.func).split(".")
        if len(parts) > 1 and parts[0] in self.torch_names:
            return ".".join(parts[1:])
        origin = self.imported.get(parts[0])
        if origin and origin.startswith("torch."):
            return ".".join([origin[len("torch.") :], *parts[1:]])
        return None

    def module_stores(self) -> dict[str, int]:
        if self._module_stores is None:
            self._module_stores = first_stores(list(self._module.body) if self._module else [])
        return self._module_stores

    def class_defs(self) -> dict[str, ast.ClassDef]:
        """Classes defined anywhere in the file, by name."""
        got = self.memo.get("class_defs")
        if got is None:
            module = self._module or EMPTY_MODULE
            got = {n.name: n for n in ast.walk(module) if isinstance(n, ast.ClassDef)}
            self.memo["class_defs"] = got
        return got  # type: ignore[return-value]

    def defines(self, name: str) -> bool:
        """Does the file define a function or method of this name?"""
        if self._defined is None:
            self._defined = {
                n.name
                for n in ast.walk(self._module or EMPTY_MODULE)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        return name in self._defined

    def device_in_scope(self, node: ast.AST) -> bool:
        """Is `device` surely bound where `node` runs? A parameter, or assigned on an earlier
        line of the same function; a global only when assigned above at top level and no
        enclosing function rebinds it. Unsure means no: a fix must not raise NameError or
        quietly move the work to another device."""
        line = node.lineno  # type: ignore[attr-defined]
        for f in reversed(self.funcs):
            if DEVICE_VARIABLE in f.params():
                return True
            first = f.stores().get(DEVICE_VARIABLE)
            if first is not None:
                return first < line
        first = self.module_stores().get(DEVICE_VARIABLE)
        return first is not None and first < line
