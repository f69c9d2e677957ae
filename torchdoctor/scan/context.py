"""The walk over one file's AST that the checks (checks/) hook into.

It keeps the little context the checks need to stay quiet on correct code: whether we are
under a device guard (`if torch.cuda.is_available()`, a `cuda`/`gpu` named function or
decorator, a `"cuda" if … else "cpu"` expression), which class is an `nn.Module`, which
function is `__init__`/`forward`, loops, `no_grad` blocks and enclosing `with` items.
Everything a check needs only sometimes (a class's registered buffers, a function's stores)
is computed on first use. Statements whose lines hold no word any check reacts to are not
entered at all: that is what keeps the scan near the cost of parsing.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .astutil import (
    DEVICE_SPECIFIC_NAME,
    NO_GRAD_WORD,
    dotted,
    exits,
    first_stores,
    imports_cuda_only,
    is_guard,
    names,
)
from .model import Edit, Finding

NEWLINE = re.compile(r"\r\n|\r|\n")
DEVICE_VARIABLE = "device"
OPTIMIZER = re.compile(r"optim|^opt|scaler|accelerator", re.I)
TIMING_WORD = re.compile(r"^(time|perf_counter|monotonic|elapsed_time|Event|Timer|record)$")


@dataclass(frozen=True)
class ProjectFacts:
    """What the file's project declares (pyproject.toml / requirements): the lowest torch
    release it supports, when it says."""

    torch_min: tuple[int, int] | None = None


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


CallHook = Callable[["Context", ast.Call], None]
AssignHook = Callable[["Context", "ast.Assign | ast.AnnAssign"], None]


@dataclass(frozen=True)
class Check:
    """One rule module's hooks. A statement is walked only if one of its lines holds one of
    `words` (plain text: "cuda") or `.<attr>` for one of `attrs` (`.zeros`, `. item`): they
    must occur in every statement a finding can come from. `calls`: called names
    (`x.cuda()` / `cuda()` -> "cuda") that trigger `on_call`; `keywords`: keyword names
    that do (`pin_memory=`)."""

    rules: tuple[str, ...]
    words: tuple[str, ...] = ()
    attrs: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    on_call: CallHook | None = None
    on_assign: AssignHook | None = None


@dataclass
class Hooks:
    calls: dict[str, list[CallHook]] = field(default_factory=dict)
    keywords: dict[str, list[CallHook]] = field(default_factory=dict)
    assigns: list[AssignHook] = field(default_factory=list)

    @classmethod
    def of(cls, checks: Sequence[Check]) -> Hooks:
        h = cls()
        for c in checks:
            if c.on_call:
                for n in c.calls:
                    h.calls.setdefault(n, []).append(c.on_call)
                for k in c.keywords:
                    h.keywords.setdefault(k, []).append(c.on_call)
            if c.on_assign:
                h.assigns.append(c.on_assign)
        return h


class Context(ast.NodeVisitor):
    def __init__(
        self,
        path: str,
        text: str,
        hooks: Hooks,
        candidates: list[int] | None = None,
        project: ProjectFacts | None = None,
    ) -> None:
        self.path = path
        self.text = text
        self.hooks = hooks
        self.project = project or ProjectFacts()
        self.candidates = candidates  # sorted lines worth entering; None = every line
        self._lines: list[str] | None = None
        self._line_starts: list[int] | None = None
        self.findings: list[Finding] = []
        self.torch_names = {"torch"}
        self.imported: dict[str, str] = {}  # local name -> "module.name" of `from m import n`
        self._module: ast.Module | None = None
        self._module_stores: dict[str, int] | None = None
        self._defined: set[str] | None = None
        # Device guards around the current node, evaluated only when a check asks (`guard`):
        # (predicate, node) pairs, or None for a known guard.
        self._guards: list[tuple[Callable[[ast.AST], bool], ast.AST] | None] = []
        self._guard_memo: dict[int, bool] = {}
        self.no_grad = 0
        self.if_depth = 0
        self.compare = 0
        self.if_tests: list[ast.expr] = []
        self.withs: list[ast.expr] = []  # context managers around the current node
        self.funcs: list[Func] = []
        self.classes: list[Class] = []
        self.loops: list[Loop] = []
        self.param_loop_vars: set[str] = set()
        self.skip_nodes: set[int] = set()
        self.placed: set[int] = set()  # calls moved right away: `torch.arange(n).to(x.device)`
        # torch.load calls passed straight to load_state_dict, which copies every tensor onto
        # the module's own device: only there is map_location="cpu" a behaviour-free fix.
        self.into_load_state_dict: set[int] = set()
        self.parents: dict[int, ast.AST] = {}  # call -> enclosing call/compare, set on visit
        self.memo: dict[str, object] = {}  # per-file facts a check computes once

    # ------------------------------------------------------------------ positions and output
    @property
    def lines(self) -> list[str]:
        """The text's lines as the tokenizer counts them (unlike str.splitlines)."""
        if self._lines is None:
            self._lines = NEWLINE.split(self.text)
        return self._lines

    def _offset(self, line: int, col_bytes: int) -> int:
        """Character offset in the text of an AST (line, UTF-8 byte column) position."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in NEWLINE.finditer(self.text))]
        return self._line_starts[line - 1] + self.char_col(line, col_bytes)

    def char_col(self, line: int, col_bytes: int) -> int:
        src = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        if src.isascii():
            return col_bytes
        return len(src.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def end(self, node: ast.AST) -> int:
        return self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        end = self.end(node)
        return Edit(end, end, text)

    def replace(self, node: ast.AST, text: str) -> Edit:
        start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return Edit(start, self.end(node), text)

    def dot_before(self, func: ast.Attribute) -> int | None:
        """Offset of the `.` of `recv.attr`: after the receiver's closing parens, as in
        `(x).cuda()`. None when comments or line continuations make it unclear."""
        start = self.end(func.value)
        between = self.text[start : self.end(func) - len(func.attr)]
        m = re.fullmatch(r"([ \t)]*)\.[ \t]*", between)
        return start + len(m.group(1)) if m else None

    def report(
        self, rule: str, node: ast.AST, message: str, fix: str, edit: Edit | None = None
    ) -> None:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        code = self.lines[line - 1].strip() if line - 1 < len(self.lines) else ""
        self.findings.append(
            Finding(
                rule=rule,
                path=self.path,
                line=line,
                col=self.char_col(line, node.col_offset) + 1,  # type: ignore[attr-defined]
                end_line=end_line,
                end_col=self.char_col(end_line, node.end_col_offset or 0) + 1,  # type: ignore[attr-defined]
                code=code,
                message=message,
                fix=fix,
                edit=edit,
            )
        )

    # ------------------------------------------------------------------ facts for the checks
    @property
    def func(self) -> Func | None:
        return self.funcs[-1] if self.funcs else None

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
            module = self._module or ast.Module(body=[], type_ignores=[])
            got = {n.name: n for n in ast.walk(module) if isinstance(n, ast.ClassDef)}
            self.memo["class_defs"] = got
        return got  # type: ignore[return-value]

    def defines(self, name: str) -> bool:
        """Does the file define a function or method of this name?"""
        if self._defined is None:
            self._defined = {
                n.name
                for n in ast.walk(self._module or ast.Module(body=[], type_ignores=[]))
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

    def in_with(self, pattern: re.Pattern[str]) -> bool:
        """Is the node inside a `with` whose context manager's dotted name matches?"""
        return any(
            pattern.search(dotted(w.func if isinstance(w, ast.Call) else w)) for w in self.withs
        )

    # ------------------------------------------------------------------ the walk
    def _worth(self, node: ast.stmt) -> bool:
        if self.candidates is None:
            return True
        i = bisect_left(self.candidates, node.lineno)
        return i < len(self.candidates) and self.candidates[i] <= (node.end_lineno or node.lineno)

    def generic_visit(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self._block(value)
                else:
                    for item in value:
                        if isinstance(item, ast.AST):
                            self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def _block(self, stmts: list[ast.stmt]) -> None:
        """Visit statements; after `if not cuda: return`, `assert cuda…` or `import triton`
        the rest of the block is guarded."""
        depth = len(self._guards)
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)) or self._worth(s):
                self.visit(s)
            if (isinstance(s, ast.If) and exits(s.body)) or isinstance(s, ast.Assert):
                self._guards.append((is_guard, s.test))
            elif imports_cuda_only(s):
                self._guards.append(None)
        del self._guards[depth:]

    def visit_Module(self, node: ast.Module) -> None:
        self._module = node
        self._block(node.body)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == "torch" and a.asname:
                self.torch_names.add(a.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level and node.module.split(".")[0] == "torch":
            for a in node.names:
                self.imported[a.asname or a.name] = f"{node.module}.{a.name}"

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

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._guards.append((is_guard, node.test))
        self.if_depth += 1
        self.if_tests.append(node.test)
        self._block(node.body)
        self._block(node.orelse)
        self.if_tests.pop()
        self.if_depth -= 1
        self._guards.pop()

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

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._guards.append((is_guard, node.test))
        self.generic_visit(node)
        self._guards.pop()

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

    def _decorated_guard(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
        return bool(DEVICE_SPECIFIC_NAME.search(node.name)) or any(
            is_guard(d) for d in node.decorator_list
        )

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
        self.visit(node.args)
        cls = self.classes[-1] if self.classes and not self.funcs else None
        no_grad = any(NO_GRAD_WORD.search(n) for d in node.decorator_list for n in names(d))
        self.funcs.append(Func(node, cls))
        self._guards.append((self._decorated_guard, node))  # type: ignore[arg-type]
        self.no_grad += no_grad
        outer_loops, self.loops = self.loops, []
        outer_classes, self.classes = self.classes, []
        outer_ifs, self.if_tests = self.if_tests, []
        self._block(node.body)
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

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        self.generic_visit(node)
        for hook in self.hooks.assigns:
            hook(self, node)

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
        for arg in node.args:
            self.parents[id(arg)] = node
        hooks = list(self.hooks.calls.get(name, ()))
        for k in node.keywords:
            for hook in self.hooks.keywords.get(k.arg or "", ()):
                if hook not in hooks:
                    hooks.append(hook)
        for hook in hooks:
            hook(self, node)
        self.generic_visit(node)
