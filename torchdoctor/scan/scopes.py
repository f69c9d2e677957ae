"""The function, class and loop a node is in, and what the checks ask of each: a function's
parameters, first stores and autograd use; whether a class is an `nn.Module` and which names
it registers; whether a loop trains or times. Each is computed on first use."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .astutil import dotted, first_stores

OPTIMIZER = re.compile(r"optim|^opt|scaler|accelerator", re.I)
# `metric_logger.log_every(loader, …)`: the MetricLogger of torchvision's reference scripts,
# copied into DETR, DINO, DeiT, MAE…, times every iteration it yields (dino's main_dino.py
# syncs for it; fifteenth blind corpus).
TIMING_WORD = re.compile(
    r"^(time|perf_counter|monotonic|elapsed_time|Event|Timer|record|log_every)$"
)


class Func:
    """A function being visited; its facts are computed on first use."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: Class | None) -> None:
        self.node = node
        self.cls = cls
        self._params: set[str] | None = None
        self._stores: dict[str, int] | None = None
        self._grad: tuple[bool, set[str]] | None = None

    def params(self) -> set[str]:
        if self._params is None:
            a = self.node.args
            self._params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        return self._params

    def stores(self) -> dict[str, int]:
        if self._stores is None:
            self._stores = first_stores(list(self.node.body))
        return self._stores

    def _scan_grad(self) -> tuple[bool, set[str]]:
        if self._grad is None:
            grad, from_call = False, set()
            for sub in ast.walk(self.node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                    grad = grad or sub.func.attr in ("backward", "requires_grad_")
                elif isinstance(sub, ast.keyword) and sub.arg == "requires_grad":
                    grad = grad or (isinstance(sub.value, ast.Constant) and sub.value.value is True)
                elif isinstance(sub, ast.Assign) and isinstance(sub.value, (ast.Call, ast.BinOp)):
                    from_call.update(t.id for t in sub.targets if isinstance(t, ast.Name))
            self._grad = (grad, from_call)
        return self._grad

    def trains(self) -> bool:
        """Visible autograd: the function calls .backward() or asks for requires_grad."""
        return self._scan_grad()[0]

    def from_call(self, name: str) -> bool:
        return name in self._scan_grad()[1]


class Class:
    """A class being visited. Registered names are what only TD301 needs: computed lazily
    (eagerly, they were 41% of the analysis time on a large model library)."""

    def __init__(self, node: ast.ClassDef) -> None:
        self.node = node
        self.is_module = _is_module_class(node)
        self._registered: set[str] | None = None

    def registered(self) -> set[str]:
        if self._registered is None:
            self._registered = _registered_names(self.node)
        return self._registered


def _is_module_class(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = dotted(base).rsplit(".", 1)[-1]
        if name.endswith("Module") or name in ("Sequential", "ModuleList", "ModuleDict"):
            return True
    has_forward = any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "forward"
        for s in node.body
    )
    return has_forward and bool(node.bases)


def _registered_names(node: ast.ClassDef) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            fn = dotted(sub.func).rsplit(".", 1)[-1]
            if fn in ("register_buffer", "register_parameter", "setattr") and sub.args:
                key = sub.args[1] if fn == "setattr" and len(sub.args) > 1 else sub.args[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out.add(key.value)
        elif (  # self.x = nn.Parameter(self.x) after a plain assignment
            isinstance(sub, ast.Assign)
            and isinstance(sub.value, ast.Call)
            and dotted(sub.value.func).endswith("Parameter")
        ):
            out.update(t.attr for t in sub.targets if isinstance(t, ast.Attribute))
    return out


def _outside_loops(loop: ast.AST):
    """The loop's own nodes, not those of loops nested in it."""
    todo = list(ast.iter_child_nodes(loop))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(ast.iter_child_nodes(node))


@dataclass
class Loop:
    node: ast.For | ast.AsyncFor | ast.While
    if_depth: int
    _kind: tuple[bool, bool] | None = None  # (training, timing)

    def kind(self) -> tuple[bool, bool]:
        if self._kind is None:
            training = timing = False
            # An epoch loop around a batch loop is not itself the per-step loop.
            for sub in _outside_loops(self.node):
                if isinstance(sub, ast.Call):
                    attr = sub.func.attr if isinstance(sub.func, ast.Attribute) else None
                    name = attr or (sub.func.id if isinstance(sub.func, ast.Name) else "")
                    # scheduler.step() in a sampling loop is not training: optimizers only
                    training = (
                        training
                        or attr == "backward"
                        or (
                            attr == "step" and bool(OPTIMIZER.search(dotted(sub.func.value)))  # type: ignore[union-attr]
                        )
                    )
                    timing = timing or bool(TIMING_WORD.match(name or ""))
            self._kind = (training, timing)
        return self._kind
