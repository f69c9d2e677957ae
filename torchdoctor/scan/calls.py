"""Expressions the checks hook into: each call (and assignment) fires the hooks of the checks
that asked for its name or keywords, after noting what encloses it (`parents`), whether its
result is moved right away (`.to(…)`) and whether it goes straight into `load_state_dict`."""

from __future__ import annotations

import ast

from .hooks import Hooks


class CallSites:
    """Call and assignment visitors, mixed into the scan's Context (whose walk is
    `generic_visit`)."""

    hooks: Hooks

    def _start_calls(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self.compare = 0  # depth of comparisons around the current node
        self.parents: dict[int, ast.AST] = {}  # call -> enclosing call/compare/assignment
        self.placed: set[int] = set()  # calls moved right away: `torch.arange(n).to(x.device)`
        # torch.load calls passed straight to load_state_dict, which copies every tensor onto
        # the module's own device: only there is map_location="cpu" a behaviour-free fix.
        self.into_load_state_dict: set[int] = set()
        # a call whose result is called on right away -> that method: `x.double().cpu()`
        self.then: dict[int, str] = {}

    def visit_Compare(self, node: ast.Compare) -> None:
        self.compare += 1
        for sub in (node.left, *node.comparators):
            self.parents[id(sub)] = node
        self.generic_visit(node)
        self.compare -= 1

    def visit_Subscript(self, node: ast.Subscript) -> None:
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for sub in index:
            self.parents[id(sub)] = node
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        if node.value is not None:
            self.parents[id(node.value)] = node  # `x = torch.device("cuda")`: a definition
        self.generic_visit(node)
        for hook in self.hooks.assigns:
            hook(self, node)  # type: ignore[arg-type]

    visit_AnnAssign = visit_Assign

    def _mark_placed(self, expr: ast.expr) -> None:
        """Every call in the receiver chain of `.to(…)` (`torch.arange(n).view(1, n).to(d)`), and
        calls passed straight into one."""
        while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
            if isinstance(expr, ast.Call):
                self.placed.add(id(expr))
                # `proj(torch.tensor(t)).to(d)`: what goes in comes out moved
                self.placed.update(id(a) for a in expr.args if isinstance(a, ast.Call))
                expr = expr.func
            else:
                expr = expr.value

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else None
        name = attr or (func.id if isinstance(func, ast.Name) else "")
        if attr in ("to", "type_as", "cuda"):
            self._mark_placed(func.value)  # type: ignore[union-attr]
        if attr == "load_state_dict":
            self.into_load_state_dict.update(id(a) for a in node.args)
        if attr and isinstance(func.value, ast.Call):  # type: ignore[union-attr]
            self.then[id(func.value)] = attr  # type: ignore[union-attr]
        for arg in node.args:
            self.parents[id(arg)] = node
        hooks = list(self.hooks.calls.get(name, ()))
        for k in node.keywords:
            for hook in self.hooks.keywords.get(k.arg or "", ()):
                if hook not in hooks:
                    hooks.append(hook)
        for hook in hooks:
            hook(self, node)  # type: ignore[arg-type]
        self.generic_visit(node)
