"""Is the current node under a device guard? `if torch.cuda.is_available()`, an early
`if not cuda: return`, `assert cuda…`, `import triton`, a `cuda`/`gpu` named function, class,
decorator or `with` block, a `"cuda" if … else "cpu"` expression. The walk pushes what
encloses a node; a predicate is evaluated only when a check asks, once per node."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from .astutil import (
    DEVICE_SPECIFIC_NAME,
    compares,
    device_arg,
    device_literal,
    dotted,
    is_guard,
    is_guard_else,
    names,
)

NOT_CUDA = frozenset(["cpu", "mps"])
KIND_FLAG = re.compile(r"(use_|on_|is_)?(cpu|mps)(_only)?")
CPU_NAME = re.compile(r"_?(cpu|cpu_device|device_cpu)", re.I)

# (predicate, node) for a possible guard, or None for a known one
Guard = tuple[Callable[[ast.AST], bool], ast.AST] | None


class DeviceGuards:
    """The guard stack of the walk (part of the scan's Context)."""

    def _start_guards(self) -> None:
        self._guards: list[Guard] = []
        self._guard_memo: dict[tuple[int, int], bool] = {}

    @property
    def guard(self) -> bool:
        """Is the current node under a device guard?"""
        for entry in self._guards:
            if entry is None:
                return True
            if self._hit(entry):
                return True
        return False

    def _decorated_guard(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
        return bool(DEVICE_SPECIFIC_NAME.search(node.name)) or any(
            is_guard(d) for d in node.decorator_list
        )

    def narrow_guard(self) -> ast.expr | None:
        """The test of an `if` that guards the current node but rules out only one device
        kind that is not CUDA (`if device != "cpu":`, the `else:` of `if args.cpu:` or of an
        MPS check): on the others (an MPS Mac, XPU) CUDA code behind it still runs and raises.
        None when the node is not guarded, or when some guard around it is a real one."""
        found = None
        for entry in self._guards:
            if entry is None:
                return None
            pred, node = entry
            if not self._hit(entry):
                continue
            narrow = narrow_when_true if pred is is_guard else narrow_when_false
            if pred not in (is_guard, is_guard_else) or not narrow(node):  # type: ignore[arg-type]
                return None
            found = node
        return found  # type: ignore[return-value]

    def tests_around(self) -> list[tuple[ast.AST, bool] | None]:
        """The tests of the `if`s, asserts and early returns around the current node, each with
        whether it holds there (True in an `if` body or after an assert, False in an `else:` or
        after `if …: return`); None for a block known to need CUDA (`with torch.cuda.device`,
        after `import triton`). For rules that ask their own question of a guard (TD007: is
        an accelerator there?), not GUARD_WORD's."""
        out: list[tuple[ast.AST, bool] | None] = []
        for entry in self._guards:
            if entry is None:
                out.append(None)
            elif entry[0] in (is_guard, is_guard_else):
                out.append((entry[1], entry[0] is is_guard))
            elif self._hit(entry):  # a function or class named for CUDA (`def _forward_cuda`)
                out.append(None)
        return out

    def on_cpu_branch(self) -> bool:
        """Is the node in the body of an `if` that holds only on the CPU (`if device ==
        "cpu":`, `if self.device == _CPU_DEVICE:`)? There a tensor is a host one: `.numpy()`
        works (dinov2's log_regression.py, sixth blind corpus)."""
        return any(
            entry is not None and entry[0] is is_guard and _cpu_test(entry[1])
            for entry in self._guards
        )

    def _hit(self, entry: tuple[Callable[[ast.AST], bool], ast.AST]) -> bool:
        pred, node = entry
        key = (id(pred), id(node))  # a test's if and else branches may judge it differently
        hit = self._guard_memo.get(key)
        if hit is None:
            hit = self._guard_memo[key] = pred(node)
        return hit


def _one_kind(node: ast.AST) -> bool:
    """A device kind that is not CUDA: the string "cpu" / "mps", or a flag named after one
    (`args.cpu`, `use_mps`, `torch.backends.mps.is_available()`)."""
    if isinstance(node, ast.Constant):
        return node.value in NOT_CUDA
    if isinstance(node, ast.Call):
        return dotted(node.func).endswith("mps.is_available")
    name = dotted(node).rsplit(".", 1)[-1].lower()
    return bool(name) and KIND_FLAG.fullmatch(name) is not None


def _cpu_side(node: ast.AST) -> bool:
    """`"cpu"`, `torch.device("cpu")`, a name for the CPU device (`_CPU_DEVICE`)."""
    node = device_arg(node)
    if device_literal(node) == "cpu":
        return True
    return isinstance(node, (ast.Name, ast.Attribute)) and bool(
        CPU_NAME.fullmatch(dotted(node).split(".")[-1])
    )


def _cpu_test(test: ast.AST) -> bool:
    """`x == "cpu"`, `x.type == "cpu"`, `device is CPU_DEVICE`, `d == torch.device("cpu")`."""
    return compares(test, (ast.Eq, ast.Is), _cpu_side)


def _compared(test: ast.AST, ops: tuple[type, ...]) -> bool:
    return compares(test, ops, _one_kind)


def _mentions_cuda(test: ast.AST) -> bool:
    return any("cuda" in n.lower() or "gpu" in n.lower() for n in names(test))


def narrow_when_true(test: ast.expr) -> bool:
    """`x != "cpu"`, `x.type != "mps"`, `not args.cpu`: true on every other kind."""
    if _mentions_cuda(test):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _one_kind(test.operand) and not isinstance(test.operand, ast.Constant)
    return _compared(test, (ast.NotEq, ast.IsNot))


def narrow_when_false(test: ast.expr) -> bool:
    """`x == "cpu"`, `args.cpu`, `torch.backends.mps.is_available()`: false on every other
    kind, so the `else:` is no CUDA guard."""
    if _mentions_cuda(test):
        return False
    if isinstance(test, (ast.Name, ast.Attribute, ast.Call)):
        return _one_kind(test)
    return _compared(test, (ast.Eq, ast.Is))
