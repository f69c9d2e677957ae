"""The walk over one file's AST that the checks (checks/) hook into.

It keeps the little context the checks need to stay quiet on correct code: whether we are
under a device guard (guards.py), which class is an `nn.Module`, which function is
`__init__`/`forward` and which loop trains (scopes.py), what names are torch and what is bound
where (bindings.py), `no_grad` blocks and enclosing `with` items, and what encloses each call
(calls.py). Everything a check needs only sometimes (a class's registered buffers, a
function's stores) is computed on first use. Statements whose lines hold no word any check
reacts to are not entered at all: that is what keeps the scan near the cost of parsing.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .astutil import (
    DEVICE_SPECIFIC_NAME,
    NO_GRAD_WORD,
    dotted,
    exits,
    imports_cuda_only,
    is_guard,
    is_guard_else,
    names,
)
from .bindings import DEVICE_VARIABLE, Bindings
from .calls import CallSites
from .confidence import lower
from .cuda_only import ASSERTS, DEVICE_RULES, asserts_cuda, cuda_only_reason
from .guards import DeviceGuards
from .hooks import AssignHook, CallHook, Check, Hooks
from .positions import NEWLINE, Judged, Needs, SourcePositions
from .project import FileSummary
from .scopes import Class, Func, Loop

# A file that runs itself: `if __name__ == "__main__":` at the top level.
MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]""", re.M)
# Training code, by its file's name: train.py, trainer.py, sam_trainer.py, pretrain.py (not
# constraints.py).
TRAINING_FILE = re.compile(r"(?:^|[^a-z]|pre)train", re.I)
# or by its own folder's: utils/trainers/base.py (3d-vla, set 156), src/training/
# (cp-swiss-german-asr, set 160). Only the nearest folder: the path may be absolute, and a
# folder above the project says nothing of it.
TRAINING_DIR = re.compile(r"^(?:train|trainers?|training)$", re.I)
# The file picks the CPU where CUDA is absent: `… if torch.cuda.is_available() else "cpu"`,
# `if not torch.cuda.is_available():`; or runs there by default: `--device` defaults to "cpu"
# (Grounded-Segment-Anything's OSX demo, twentieth blind corpus). Four patterns, each tried
# only where the text holds its literal: a third of one alternation's cost on torch's tree.
# Not when the `else` value is no device: a GPU's name or its count for a log line
# (`get_device_name(0) if … else ""`, 3d-vla's trainer, set 156).
NOT_A_DEVICE = r"""\s*(?:None|False|True|0\b|["'](?!(?:cpu|cuda|mps|xpu|npu)\b))"""
AVAILABLE_ELSE = re.compile(
    r"is_available\(\)\s*else\s(?!" + NOT_A_DEVICE + r")|if\s+not\s+torch\.cuda\.is_available\(\)"
)
ELSE_CPU = re.compile(r"""else\s+(?:torch\.device\(\s*)?["']cpu["']""")
# The same choice as a statement: `else:` and, first in its block, `device = "cpu"` (or
# `torch.device("cpu")`; PPO-Jumpstart's test.py, blind set 309).
ELSE_BLOCK_CPU = re.compile(
    r"""else\s*:[ \t]*\n\s*[\w.]+(?:\[[^\]\n]*\])?\s*=\s*(?:torch\.device\(\s*)?["']cpu["']"""
)
DEVICE_OPTION_CPU = re.compile(r"""--device["'][^)]*?default\s*=\s*["']cpu["']""")


def _picks_compute_device(text: str, pattern: re.Pattern[str]) -> bool:
    """Does `pattern` match outside a `map_location` choice? `map_location = None if
    cuda.is_available() else "cpu"` says where a checkpoint's tensors land, which a loader
    copied into CUDA-only code says too (AlphaPose's tracker utilities, whose `.cuda()`
    helpers nothing calls: thirty-second blind corpus); the device the code runs on is
    chosen elsewhere."""
    for m in pattern.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        if "map_location" not in text[start : end if end >= 0 else len(text)]:
            return True
    return False


def falls_back(text: str) -> bool:
    """Does the file pick (or default to) the CPU where CUDA is absent, for the device it
    runs on?"""
    if "is_available()" in text and _picks_compute_device(text, AVAILABLE_ELSE):
        return True
    if "cpu'" not in text and 'cpu"' not in text:
        return False
    return (
        _picks_compute_device(text, ELSE_CPU)
        or _picks_compute_device(text, ELSE_BLOCK_CPU)
        or ("--device" in text and bool(DEVICE_OPTION_CPU.search(text)))
    )


__all__ = [
    "DEVICE_VARIABLE",
    "NEWLINE",
    "AssignHook",
    "CallHook",
    "Check",
    "Class",
    "Context",
    "Func",
    "Hooks",
    "Loop",
    "ProjectFacts",
]


@dataclass(frozen=True)
class ProjectFacts:
    """What the file's project declares (pyproject.toml / requirements): the lowest torch
    release it supports, when it says."""

    torch_min: tuple[int, int] | None = None


class Context(SourcePositions, Bindings, DeviceGuards, CallSites, ast.NodeVisitor):
    """One file's walk: the enclosing scopes, blocks and loops of the current node."""

    def __init__(
        self,
        path: str,
        text: str,
        hooks: Hooks,
        candidates: list[int] | None = None,
        project: ProjectFacts | None = None,
        summary: FileSummary | None = None,
    ) -> None:
        self._start_positions(path, text)
        self._start_bindings()
        self._start_guards()
        self._start_calls(hooks)
        self.project = project or ProjectFacts()
        self.summary = summary if summary is not None else FileSummary()
        self.candidates = candidates  # sorted lines worth entering; None = every line
        self.no_grad = 0
        self.if_depth = 0
        self.if_tests: list[ast.expr] = []
        # the other branch of each `if`/`a if t else b` around the node, innermost last
        self.other_arms: list[Sequence[ast.AST]] = []
        self.withs: list[ast.expr] = []  # context managers around the current node
        self.catch_all = 0  # try bodies around the node whose handler catches AssertionError
        self.handlers: list[tuple[ast.Try, ast.ExceptHandler]] = []  # handlers around the node
        self.try_bodies: list[ast.Try] = []  # `try:` bodies around the node, innermost last
        self.funcs: list[Func] = []
        self.classes: list[Class] = []
        self.loops: list[Loop] = []
        self.param_loop_vars: set[str] = set()
        self.skip_nodes: set[int] = set()
        self.memo: dict[str, object] = {}  # per-file facts a check computes once
        self.in_defaults = 0  # > 0 while a function's parameter defaults are visited

    def _judged(self, rule: str, confidence: str, why: str | None, needs: Needs) -> Judged:
        if rule not in DEVICE_RULES:
            return confidence, why, needs
        reason = self.cuda_only()
        if reason is None:
            return confidence, why, needs
        # callers that leave a CUDA default out cannot raise it: the file runs on CUDA anyway
        kept = None if needs and needs[0] == "callers" else needs
        return lower(confidence, "low"), str(reason), kept

    def cuda_only(self) -> str | None:
        """Why the whole file runs on CUDA only (cuda_only.py), or None."""
        if "cuda_only" not in self.memo:
            reason = cuda_only_reason(self.text)
            if reason is None and "assert" in self.text and asserts_cuda(self.module):
                reason = ASSERTS
            self.memo["cuda_only"] = reason
        return self.memo["cuda_only"]  # type: ignore[return-value]

    @property
    def in_class(self) -> bool:
        """Inside a class: its body, or a method (or a function nested in one)."""
        return bool(self.classes) or any(f.cls is not None for f in self.funcs)

    @property
    def falls_back_to_cpu(self) -> bool:
        """Does the file itself pick the CPU where CUDA is absent? Then it is meant to run on
        machines without CUDA, and what fails there is a pitfall of this file."""
        if "cpu_fallback" not in self.memo:
            self.memo["cpu_fallback"] = falls_back(self.text)
        return bool(self.memo["cpu_fallback"])

    def written_for_its_machine(self, what: str) -> dict[str, str]:
        """How sure a CUDA-only call is a pitfall (TD001-TD003), by where it stands. In a method
        of a library's class it keeps its confidence: users import the class and run it on their
        own machines. In a script, or a function outside any class, it is the author's code for
        the machine they wrote it for, and `low`, unless the file itself falls back to the CPU
        (then the line ignores the file's own choice: `medium`). Of 190 `.cuda()` lines labelled
        blind in ten public corpora (benchmarks/scan_blind*), 30 of 50 in library classes were
        pitfalls their maintainers would change; elsewhere 4 of 6 in files with a CPU fallback
        and 5 of 134 in the others. Hard-coded "cuda" strings and `torch.cuda.*` calls were
        pitfalls even less often (3 of 136 and 1 of 186). Training code is written for the GPUs
        it trains on, class or not: in files named for training (train.py, trainer.py) 1 of
        155 such lines in fourteen corpora was a pitfall (insightface's PBIDR, efficientvit's
        trainers, XMem)."""
        if self.in_class and not self.is_script and not self.trains:
            return {}
        if self.falls_back_to_cpu:
            return {"confidence": "medium"}
        where = (
            "a script (it runs itself)"
            if self.is_script
            else "training code"
            if self.trains
            else "code outside any class"
        )
        return {
            "confidence": "low",
            "why": f"{what} in {where}: code its author runs on the machine it was written for",
        }

    @property
    def trains(self) -> bool:
        """Is the file training code, by its name (TRAINING_FILE) or its folder's?"""
        if "trains" not in self.memo:
            folder, _, name = self.path.replace("\\", "/").rpartition("/")
            stem = name.rsplit(".", 1)[0]
            parent = folder.rsplit("/", 1)[-1]
            self.memo["trains"] = bool(TRAINING_FILE.search(stem) or TRAINING_DIR.match(parent))
        return bool(self.memo["trains"])

    @property
    def is_script(self) -> bool:
        """A script (it runs itself under `if __name__ == "__main__":`): code its author runs,
        not an API for users."""
        if "is_script" not in self.memo:
            self.memo["is_script"] = "__main__" in self.text and bool(MAIN.search(self.text))
        return bool(self.memo["is_script"])

    @property
    def module(self) -> ast.Module:
        """The file's tree (set when the walk starts)."""
        return self._module

    @property
    def func(self) -> Func | None:
        return self.funcs[-1] if self.funcs else None

    def caught(self, name: str) -> bool:
        """Is the node in a `try` body whose handlers catch the exception class `name`?"""
        return any(catches(h.type, name) for t in self.try_bodies for h in t.handlers)

    def in_with(self, pattern: re.Pattern[str]) -> bool:
        """Is the node inside a `with` whose context manager's dotted name matches?"""
        return any(
            pattern.search(dotted(w.func if isinstance(w, ast.Call) else w)) for w in self.withs
        )

    def _worth(self, node: ast.stmt) -> bool:
        if self.candidates is None:
            return True
        i = bisect_left(self.candidates, node.lineno)
        return i < len(self.candidates) and self.candidates[i] <= (node.end_lineno or node.lineno)

    def visit(self, node: ast.AST) -> None:
        kind = node.__class__
        method = _VISITORS.get(kind)
        if method is None:
            method = _VISITORS[kind] = getattr(Context, "visit_" + kind.__name__, _generic)
        method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                if value and isinstance(value[0], ast.stmt):
                    self._block(value)
                else:
                    for item in value:
                        if isinstance(item, ast.AST) and item.__class__ not in LEAVES:
                            self.visit(item)
            elif isinstance(value, ast.AST) and value.__class__ not in LEAVES:
                self.visit(value)

    def _block(self, stmts: list[ast.stmt]) -> None:
        """Visit statements; after `if not cuda: return`, `assert cuda…` or `import triton`
        the rest of the block is guarded."""
        depth = len(self._guards)
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)) or self._worth(s):
                self.visit(s)
            if isinstance(s, ast.If) and exits(s.body):
                self._guards.append((is_guard_else, s.test))  # what follows runs when false
            elif isinstance(s, ast.Assert):
                self._guards.append((is_guard, s.test))
            elif imports_cuda_only(s):
                self._guards.append(None)
        del self._guards[depth:]

    def visit_Module(self, node: ast.Module) -> None:
        self._module = node
        self._block(node.body)

    def visit_If(self, node: ast.If) -> None:
        for hook in self.hooks.tests:
            hook(self, node)
        self.visit(node.test)
        self._guards.append((is_guard, node.test))
        self.if_depth += 1
        self.if_tests.append(node.test)
        self.other_arms.append(node.orelse)
        self._block(node.body)
        self._guards[-1] = (is_guard_else, node.test)
        self.other_arms[-1] = node.body
        self._block(node.orelse)
        self.other_arms.pop()
        self.if_tests.pop()
        self.if_depth -= 1
        self._guards.pop()

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """`a if test else b`: `b` is the test's else branch, as in an `if` statement
        (`torch.device("cpu") if gather_on_cpu else torch.device("cuda")`)."""
        for hook in self.hooks.tests:
            hook(self, node)
        self._guards.append((is_guard, node.test))
        self.visit(node.test)  # `"cuda" in d and torch.cuda.f(d)`: the test guards its own rest
        self.other_arms.append([node.orelse])
        self.visit(node.body)
        self._guards[-1] = (is_guard_else, node.test)
        self.other_arms[-1] = [node.body]
        self.visit(node.orelse)
        self.other_arms.pop()
        self._guards.pop()

    def _comprehension(self, node: ast.AST, parts: list[ast.expr]) -> None:
        """`[get_device_name(d.index) for d in devices if d.type == "cuda"]`: the element is
        under the comprehension's `if`s (RVC's configs/config.py, second blind corpus)."""
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        for gen in generators:
            self.visit(gen)
        tests = [t for gen in generators for t in gen.ifs]
        self._guards.extend((is_guard, t) for t in tests)
        for part in parts:
            self.visit(part)
        del self._guards[len(self._guards) - len(tests) :]

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        words = [n for item in node.items for n in names(item.context_expr)]
        no_grad = any(NO_GRAD_WORD.search(w) for w in words)
        self.no_grad += no_grad
        device_block = any(DEVICE_SPECIFIC_NAME.search(w) for w in words)
        if device_block:
            self._guards.append(None)
        for item in node.items:
            self.visit(item)
        self.withs.extend(item.context_expr for item in node.items)
        self._block(node.body)
        del self.withs[len(self.withs) - len(node.items) :]
        self.no_grad -= no_grad
        if device_block:
            self._guards.pop()

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try) -> None:
        # `torch.cuda.*` without CUDA raises AssertionError: a handler catching it is a fallback
        caught = any(catches(h.type, "AssertionError") for h in node.handlers)
        self.catch_all += caught
        self.try_bodies.append(node)  # type: ignore[arg-type]
        self._block(node.body)
        self.try_bodies.pop()
        self.catch_all -= caught
        for handler in node.handlers:
            self.handlers.append((node, handler))  # type: ignore[arg-type]
            self.visit(handler)
            self.handlers.pop()
        self._block(node.orelse)
        self._block(node.finalbody)

    visit_TryStar = visit_Try

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(d)
        self.classes.append(Class(node))
        self._guards.append((self._decorated_guard, node))  # type: ignore[arg-type]
        outer_loops, self.loops = self.loops, []
        self._block(node.body)
        self.loops = outer_loops
        self._guards.pop()
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.in_defaults += 1  # parameter defaults: TD005 judges a "cuda" there, not TD002
        self.visit(node.args)
        self.in_defaults -= 1
        for hook in self.hooks.defs:
            hook(self, node)
        cls = self.classes[-1] if self.classes and not self.funcs else None
        no_grad = any(NO_GRAD_WORD.search(n) for d in node.decorator_list for n in names(d))
        self.funcs.append(Func(node, cls))
        self._guards.append((self._decorated_guard, node))  # type: ignore[arg-type]
        self.no_grad += no_grad
        outer_loops, self.loops = self.loops, []
        outer_classes, self.classes = self.classes, []
        outer_ifs, self.if_tests = self.if_tests, []
        outer_arms, self.other_arms = self.other_arms, []
        outer_tries, self.try_bodies = self.try_bodies, []  # they catch at the call, not here
        self._block(node.body)
        self.try_bodies = outer_tries
        self.other_arms = outer_arms
        self.if_tests = outer_ifs
        self.classes = outer_classes
        self.loops = outer_loops
        self.no_grad -= no_grad
        self._guards.pop()
        self.funcs.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        added: list[str] = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            it = node.iter
            if isinstance(it, ast.Call) and dotted(it.func).endswith(
                ("parameters", "named_parameters")
            ):
                for sub in ast.walk(node.target):
                    if isinstance(sub, ast.Name) and sub.id not in self.param_loop_vars:
                        added.append(sub.id)
            self.visit(node.target)
            self.visit(node.iter)
        else:
            self.visit(node.test)
        self.param_loop_vars.update(added)
        self.loops.append(Loop(node, self.if_depth))
        self._block(node.body)
        self.loops.pop()
        self._block(node.orelse)
        self.param_loop_vars.difference_update(added)

    visit_AsyncFor = visit_For
    visit_While = visit_For


# Nodes with nothing under them that the walk reacts to (names, constants, operators, Load and
# Store): skipped without a call, as most of a tree's nodes are these.
LEAVES = frozenset(
    [ast.Name, ast.Constant]
    + [
        kind
        for base in (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
        for kind in base.__subclasses__()
    ]
)
# Node class -> Context's visit_ method, looked up once per class rather than once per node.
_VISITORS: dict[type, Callable[[Context, ast.AST], None]] = {}
_generic = Context.generic_visit


def catches(kind: ast.expr | None, name: str) -> bool:
    """Does `except <kind>` catch the exception class `name`: by name, in a tuple, or as
    `Exception`, `BaseException` or a bare `except:`?"""
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    wide = {name, "Exception", "BaseException"}
    return any(k is None or dotted(k).rsplit(".", 1)[-1] in wide for k in kinds)
