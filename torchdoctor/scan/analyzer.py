"""One pass over a file's AST that applies every rule (see rules.py).

The analyzer never imports or runs the code. It keeps the little context the rules need to
stay quiet on correct code: whether we are under a device guard (`if torch.cuda.is_available()`,
a `cuda`/`gpu` named function or decorator, a `"cuda" if … else "cpu"` expression), which
class is an `nn.Module`, which function is `__init__`/`forward`, loops, and `no_grad` blocks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .model import Edit, Finding

NEWLINE = re.compile(r"\r\n|\r|\n")
CUDA_STRING = re.compile(r"cuda(:\d+)?")
# A name that shows the author thought about the device: guards, device-specific functions.
GUARD_WORD = re.compile(r"cuda|gpu|device|accelerator|is_available", re.I)
DEVICE_SPECIFIC_NAME = re.compile(r"cuda|gpu|cudnn|nccl|triton|cutlass", re.I)
NO_GRAD_WORD = re.compile(r"no_grad|inference_mode")
TIMING_WORD = re.compile(r"^(time|perf_counter|monotonic|elapsed_time|Event|Timer|record)$")
# A file (or block) that imports one of these cannot run without an NVIDIA GPU anyway.
CUDA_ONLY_LIBS = frozenset(
    ["triton", "cutlass", "cuda", "pycuda", "cupy", "nvmath", "apex", "flash_attn", "tensorrt"]
)
# `check_device(x, device="cuda")` compares, it does not place a tensor.
PREDICATE_CALL = re.compile(r"^_?(check|is|has|assert|expect|require|skip)", re.I)
SKIP_CALL_WORD = re.compile(r"skip|exit|abort", re.I)

# Factories that take device= and are the usual way to make a tensor inside forward.
FORWARD_FACTORIES = frozenset([
    "zeros", "ones", "empty", "randn", "rand", "randint", "randperm", "arange", "tensor", "full",
    "eye", "linspace",
])  # fmt: skip
TENSOR_FACTORIES = FORWARD_FACTORIES | frozenset([
    "logspace", "as_tensor", "from_numpy", "normal", "Tensor", "FloatTensor", "LongTensor",
    "IntTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "ByteTensor",
])  # fmt: skip
# torch.<name>_like exists for these only (no arange_like, tensor_like, eye_like…).
LIKE_FACTORIES = frozenset(["zeros", "ones", "empty", "rand", "randn", "randint", "full"])
PLACING_METHODS = frozenset(["to", "type_as", "cuda"])
DEVICE_VARIABLE = "device"


def _names(node: ast.AST) -> Iterator[str]:
    """Identifiers and string constants in an expression (for the guard heuristics)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def is_guard(expr: ast.AST) -> bool:
    return any(GUARD_WORD.search(n) for n in _names(expr))


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _exits(stmts: list[ast.stmt]) -> bool:
    """Does this block end the enclosing flow (return/raise/continue/skip)?"""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and bool(SKIP_CALL_WORD.search(_dotted(last.value.func)))
    )


def _imports_cuda_only(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name.split(".")[0] in CUDA_ONLY_LIBS for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        return stmt.module.split(".")[0] in CUDA_ONLY_LIBS
    return False


def _chain(node: ast.expr) -> tuple[list[str], ast.expr]:
    """`a.b().c()` -> (['b', 'c'] outermost last, root `a`)."""
    attrs: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return list(reversed(attrs)), node


def _own_nodes(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of one scope: nested functions, lambdas and classes are not entered."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                todo.append(child)


def _first_stores(nodes: list[ast.AST]) -> dict[str, int]:
    """name -> the first line where this scope assigns it."""
    out: dict[str, int] = {}
    for sub in _own_nodes(nodes):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out[sub.id] = min(out.get(sub.id, sub.lineno), sub.lineno)
    return out


@dataclass
class _Func:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: _Class | None
    _params: set[str] | None = None
    _stores: dict[str, int] | None = None
    _grad: bool | None = None
    _assigned_from_call: set[str] | None = None

    def params(self) -> set[str]:
        if self._params is None:
            a = self.node.args
            self._params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        return self._params

    def stores(self) -> dict[str, int]:
        if self._stores is None:
            self._stores = _first_stores(list(self.node.body))
        return self._stores

    def _scan_grad(self) -> None:
        self._grad, self._assigned_from_call = False, set()
        for sub in ast.walk(self.node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if sub.func.attr in ("backward", "requires_grad_"):
                    self._grad = True
            elif (
                isinstance(sub, ast.keyword)
                and sub.arg == "requires_grad"
                and isinstance(sub.value, ast.Constant)
                and sub.value.value is True
            ):
                self._grad = True
            elif isinstance(sub, ast.Assign) and isinstance(sub.value, (ast.Call, ast.BinOp)):
                for t in sub.targets:
                    if isinstance(t, ast.Name):
                        self._assigned_from_call.add(t.id)

    def trains(self) -> bool:
        """Visible autograd: the function calls .backward() or asks for requires_grad."""
        if self._grad is None:
            self._scan_grad()
        return bool(self._grad)

    def from_call(self, name: str) -> bool:
        if self._assigned_from_call is None:
            self._scan_grad()
        return name in (self._assigned_from_call or ())


@dataclass
class _Class:
    is_module: bool
    registered: set[str] = field(default_factory=set)  # register_buffer / Parameter names


def _outside_loops(loop: ast.AST) -> Iterator[ast.AST]:
    """The loop's own nodes, not those of loops nested in it."""
    todo = list(ast.iter_child_nodes(loop))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(ast.iter_child_nodes(node))


@dataclass
class _Loop:
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
                    if attr in ("backward", "step"):
                        training = True
                    if TIMING_WORD.match(name or ""):
                        timing = True
            self._kind = (training, timing)
        return self._kind


def _is_module_class(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = _dotted(base).rsplit(".", 1)[-1]
        if name.endswith("Module") or name in ("Sequential", "ModuleList", "ModuleDict"):
            return True
    has_forward = any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "forward"
        for s in node.body
    )
    return has_forward and bool(node.bases)


def _registered_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        fn = _dotted(sub.func).rsplit(".", 1)[-1]
        if fn in ("register_buffer", "register_parameter", "setattr") and sub.args:
            key = sub.args[1] if fn == "setattr" and len(sub.args) > 1 else sub.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names.add(key.value)
    for sub in ast.walk(node):  # self.x = nn.Parameter(self.x) after a plain assignment
        if (
            isinstance(sub, ast.Assign)
            and isinstance(sub.value, ast.Call)
            and _dotted(sub.value.func).endswith("Parameter")
        ):
            names.update(t.attr for t in sub.targets if isinstance(t, ast.Attribute))
    return names


class Analyzer(ast.NodeVisitor):
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = NEWLINE.split(text)  # as the tokenizer counts lines, unlike str.splitlines
        self._line_starts: list[int] | None = None
        self.findings: list[Finding] = []
        self.torch_names = {"torch"}
        self.load_names: set[str] = set()  # `from torch import load`
        self.module_stores: dict[str, int] = {}  # top-level name -> first line assigned
        self.guard = 0
        self.no_grad = 0
        self.if_depth = 0
        self.compare = 0
        self.funcs: list[_Func] = []
        self.classes: list[_Class] = []
        self.loops: list[_Loop] = []
        self.param_loop_vars: set[str] = set()
        self.skip_nodes: set[int] = set()
        self.placed: set[int] = set()  # calls moved right away: `torch.arange(n).to(x.device)`
        # torch.load calls passed straight to load_state_dict, which copies every tensor onto
        # the module's own device: only there is map_location="cpu" a behaviour-free fix.
        self.into_load_state_dict: set[int] = set()

    # ------------------------------------------------------------------ positions and output
    def _offset(self, line: int, col_bytes: int) -> int:
        """Character offset in the text of an AST (line, UTF-8 byte column) position."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in NEWLINE.finditer(self.text))]
        return self._line_starts[line - 1] + self._char_col(line, col_bytes)

    def _char_col(self, line: int, col_bytes: int) -> int:
        src = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        if src.isascii():
            return col_bytes
        return len(src.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def _end(self, node: ast.AST) -> int:
        return self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        end = self._end(node)
        return Edit(end, end, text)

    def replace(self, node: ast.AST, text: str, *, after: ast.AST | None = None) -> Edit:
        """Replace `node`'s text, or only the part of it after the node `after`."""
        start = (
            self._end(after) if after is not None else self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        )
        return Edit(start, self._end(node), text)

    def _dot_before(self, func: ast.Attribute) -> int | None:
        """Offset of the `.` of `recv.attr`: after the receiver's closing parens, as in
        `(x).cuda()`. None when comments or line continuations make it unclear."""
        start = self._end(func.value)
        between = self.text[start : self._end(func) - len(func.attr)]
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
                col=self._char_col(line, node.col_offset) + 1,  # type: ignore[attr-defined]
                end_line=end_line,
                end_col=self._char_col(end_line, node.end_col_offset or 0) + 1,  # type: ignore[attr-defined]
                code=code,
                message=message,
                fix=fix,
                edit=edit,
            )
        )

    # ------------------------------------------------------------------ scopes and guards
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
        first = self.module_stores.get(DEVICE_VARIABLE)
        return first is not None and first < line

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
        raised = 0
        for s in stmts:
            self.visit(s)
            if (
                (isinstance(s, ast.If) and is_guard(s.test) and _exits(s.body))
                or (isinstance(s, ast.Assert) and is_guard(s.test))
                or _imports_cuda_only(s)
            ):
                self.guard += 1
                raised += 1
        self.guard -= raised

    def visit_Module(self, node: ast.Module) -> None:
        self.module_stores = _first_stores(list(node.body))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == "torch" and a.asname:
                self.torch_names.add(a.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "torch":
            for a in node.names:
                if a.name == "load":
                    self.load_names.add(a.asname or "load")

    def visit_If(self, node: ast.If) -> None:
        guarded = is_guard(node.test)
        self.visit(node.test)
        self.guard += guarded
        self.if_depth += 1
        self._block(node.body)
        self._block(node.orelse)
        self.if_depth -= 1
        self.guard -= guarded

    def visit_Compare(self, node: ast.Compare) -> None:
        self.compare += 1
        self.generic_visit(node)
        self.compare -= 1

    def visit_IfExp(self, node: ast.IfExp) -> None:
        guarded = is_guard(node.test)
        self.guard += guarded
        self.generic_visit(node)
        self.guard -= guarded

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        words = [n for item in node.items for n in _names(item.context_expr)]
        no_grad = any(NO_GRAD_WORD.search(w) for w in words)
        guarded = any(DEVICE_SPECIFIC_NAME.search(w) for w in words)
        self.no_grad += no_grad
        self.guard += guarded
        self.generic_visit(node)
        self.no_grad -= no_grad
        self.guard -= guarded

    visit_AsyncWith = visit_With

    def _decorated_guard(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
        return bool(DEVICE_SPECIFIC_NAME.search(node.name)) or any(
            is_guard(d) for d in node.decorator_list
        )

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        is_module = _is_module_class(node)
        cls = _Class(is_module, _registered_names(node) if is_module else set())
        guarded = self._decorated_guard(node)
        for d in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(d)
        self.classes.append(cls)
        self.guard += guarded
        outer_loops, self.loops = self.loops, []
        self._block(node.body)
        self.loops = outer_loops
        self.guard -= guarded
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        cls = self.classes[-1] if self.classes and not self.funcs else None
        guarded = self._decorated_guard(node)
        no_grad = any(NO_GRAD_WORD.search(n) for d in node.decorator_list for n in _names(d))
        self.funcs.append(_Func(node, cls))
        self.guard += guarded
        self.no_grad += no_grad
        outer_loops, self.loops = self.loops, []
        outer_classes, self.classes = self.classes, []
        self._block(node.body)
        self.classes = outer_classes
        self.loops = outer_loops
        self.no_grad -= no_grad
        self.guard -= guarded
        self.funcs.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        added: list[str] = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            it = node.iter
            if isinstance(it, ast.Call) and _dotted(it.func).endswith(
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
        self.loops.append(_Loop(node, self.if_depth))
        self._block(node.body)
        self.loops.pop()
        self._block(node.orelse)
        self.param_loop_vars.difference_update(added)

    visit_AsyncFor = visit_For
    visit_While = visit_For

    # ------------------------------------------------------------------ rules
    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        self.generic_visit(node)
        f = self.funcs[-1] if self.funcs else None
        if not (f and f.cls and f.cls.is_module and f.node.name == "__init__"):
            return
        value = node.value
        if not isinstance(value, ast.Call):
            return
        chain, root = _chain(value)
        if not (isinstance(root, ast.Name) and root.id in self.torch_names and chain):
            return
        if chain[0] not in TENSOR_FACTORIES:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                and t.attr not in f.cls.registered
            ):
                self.report(
                    "TD301",
                    t,
                    f"`self.{t.attr}` holds a tensor that `model.to(device)` will not move",
                    f'self.register_buffer("{t.attr}", …, persistent=False) or nn.Parameter(…)',
                )

    visit_AnnAssign = visit_Assign

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else None
        fname = func.id if isinstance(func, ast.Name) else None
        if attr in PLACING_METHODS:
            self.placed.add(id(func.value))  # type: ignore[union-attr]
        if attr == "load_state_dict":
            self.into_load_state_dict.update(id(a) for a in node.args)
        if attr == "cuda" and id(node) not in self.skip_nodes:
            self._cuda_call(node, func)  # type: ignore[arg-type]
        elif attr in ("DataParallel",) or fname == "DataParallel":
            self._data_parallel(node)
        elif (
            attr == "load"
            and isinstance(func.value, ast.Name)  # type: ignore[union-attr]
            and func.value.id in self.torch_names  # type: ignore[union-attr]
        ) or (fname and fname in self.load_names):
            self._torch_load(node)
        elif attr == "numpy" and not node.args:
            self._numpy(node, func)  # type: ignore[arg-type]
        elif attr in ("item", "synchronize") and self.loops:
            self._sync_in_loop(node, attr)
        self._cuda_strings(node, attr)
        self._factory_in_forward(node)
        self._pin_memory(node)
        self.generic_visit(node)

    def _cuda_call(self, node: ast.Call, func: ast.Attribute) -> None:
        if self.guard or (isinstance(func.value, ast.Name) and func.value.id in self.torch_names):
            return
        edit = None
        simple = not node.args and all(k.arg == "non_blocking" for k in node.keywords)
        dot = self._dot_before(func)
        if simple and dot is not None and self.device_in_scope(node):
            kws = "".join(f", {ast.unparse(k)}" for k in node.keywords)
            edit = Edit(dot, self._end(node), f".to({DEVICE_VARIABLE}{kws})")
        self.report(
            "TD001",
            node,
            "`.cuda()` crashes where CUDA is absent (CPU machines, Macs)",
            ".to(device) with one device chosen at start-up",
            edit,
        )

    def _cuda_strings(self, node: ast.Call, attr: str | None) -> None:
        if self.guard:
            return
        fname = _dotted(node.func)
        is_ctor = fname in {f"{t}.device" for t in self.torch_names}
        if (is_ctor and self.compare) or PREDICATE_CALL.match(fname.rsplit(".", 1)[-1]):
            return  # `torch.device("cuda") in devices`, `check_device(x, device="cuda")`
        candidates: list[ast.expr] = [k.value for k in node.keywords if k.arg == "device"]
        if attr == "to" or is_ctor:
            candidates += node.args[:1]
        for c in candidates:
            if not (
                isinstance(c, ast.Constant)
                and isinstance(c.value, str)
                and CUDA_STRING.fullmatch(c.value)
            ):
                continue
            # `torch.device("cuda")` is where a device gets defined: no safe rewrite there.
            fixable = not is_ctor and self.device_in_scope(c)
            self.report(
                "TD002",
                c,
                f'"{c.value}" is hard-coded: it fails where CUDA is absent',
                "pass a device variable chosen once "
                "(torch.device('cuda' if torch.cuda.is_available() else 'cpu'))",
                self.replace(c, DEVICE_VARIABLE) if fixable else None,
            )

    def _data_parallel(self, node: ast.Call) -> None:
        first = node.args[0] if node.args else None
        inner_cuda = (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "cuda"
        )
        if inner_cuda and not self.guard:
            self.skip_nodes.add(id(first))
            self.report(
                "TD202",
                node,
                "`DataParallel(model.cuda())` crashes without CUDA, and DataParallel is slow",
                "model.to(device); wrap in DistributedDataParallel when several GPUs are present",
            )
        else:
            self.report(
                "TD201",
                node,
                "`nn.DataParallel` is single-process and slower than DistributedDataParallel",
                "torch.nn.parallel.DistributedDataParallel, launched with torchrun",
            )

    def _torch_load(self, node: ast.Call) -> None:
        if any(k.arg is None for k in node.keywords) or (not node.args and not node.keywords):
            return  # **kwargs may carry the arguments: unsure, so quiet
        kw = {k.arg for k in node.keywords}
        last = max(
            [*node.args, *(k.value for k in node.keywords)],
            key=lambda n: (n.end_lineno, n.end_col_offset),  # type: ignore[attr-defined]
        )
        if "map_location" not in kw and len(node.args) < 2:
            if self.device_in_scope(node):
                target, edit = DEVICE_VARIABLE, True
            else:
                # "cpu" would move a whole pickled model (or tensors used as they are) off the
                # GPU the program expects: only safe straight into load_state_dict.
                target, edit = '"cpu"', id(node) in self.into_load_state_dict
            self.report(
                "TD101",
                node,
                "`torch.load` without `map_location` fails on a CPU machine for a GPU-saved file",
                f"torch.load(…, map_location={target})",
                self.insert_after(last, f", map_location={target}") if edit else None,
            )
        if "weights_only" not in kw:
            # torch refuses weights_only=True next to an explicit pickle_module; elsewhere it
            # refuses a pickled module or object: only a state dict surely loads (fix.py may
            # find more evidence, e.g. a torch.save of a state_dict() to the same path).
            safe = "pickle_module" not in kw and id(node) in self.into_load_state_dict
            edit = self.insert_after(last, ", weights_only=True") if safe else None
            self.report(
                "TD102",
                node,
                "`torch.load` without `weights_only`: unpickling can run arbitrary code",
                "torch.load(…, weights_only=True); weights_only=False only for trusted files",
                edit,
            )

    def _numpy(self, node: ast.Call, func: ast.Attribute) -> None:
        if self.no_grad:
            return
        chain, root = _chain(func.value)
        if {"detach", "data", "item", "tolist"} & set(chain):
            return
        visible = bool({"weight", "bias"} & set(chain[-1:])) or (
            isinstance(root, ast.Name) and root.id in self.param_loop_vars
        )
        f = self.funcs[-1] if self.funcs else None
        if not visible and f and isinstance(root, ast.Name) and f.trains():
            visible = f.from_call(root.id)
        if not visible:
            return
        self.report(
            "TD401",
            node,
            "`.numpy()` on a tensor that requires grad raises RuntimeError",
            ".detach().cpu().numpy()",
            self.insert_after(root, ".detach()"),
        )

    def _sync_in_loop(self, node: ast.Call, attr: str) -> None:
        loop = self.loops[-1]
        training, timing = loop.kind()
        if attr == "synchronize":
            if _dotted(node.func).endswith("cuda.synchronize") and not timing:
                self.report(
                    "TD402",
                    node,
                    "`torch.cuda.synchronize()` in a loop stalls the GPU pipeline every iteration",
                    "synchronize once after the loop (or only when timing)",
                )
        elif not node.args and not node.keywords and training and self.if_depth == loop.if_depth:
            self.report(
                "TD402",
                node,
                "`.item()` in a training loop waits for the GPU every step",
                "accumulate on the device; call .item() every N steps (inside an `if`)",
            )

    def _factory_in_forward(self, node: ast.Call) -> None:
        f = self.funcs[-1] if self.funcs else None
        if not (f and f.cls and f.cls.is_module and f.node.name == "forward"):
            return
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr in FORWARD_FACTORIES
            and isinstance(func.value, ast.Name)
            and func.value.id in self.torch_names
        ):
            return
        if any(k.arg in ("device", None) for k in node.keywords) or id(node) in self.placed:
            return
        hint = f"{_dotted(func)}(…, device=x.device) for an input x"
        if func.attr in LIKE_FACTORIES:
            hint += f", or torch.{func.attr}_like(x)"
        self.report(
            "TD302",
            node,
            f"`{_dotted(func)}(…)` in `forward` makes a CPU tensor whatever the model's device",
            hint,
        )

    def _pin_memory(self, node: ast.Call) -> None:
        if self.guard:
            return
        for k in node.keywords:
            if (
                k.arg == "pin_memory"
                and isinstance(k.value, ast.Constant)
                and k.value.value is True
            ):
                torch = "torch" if "torch" in self.torch_names else min(self.torch_names)
                self.report(
                    "TD501",
                    k.value,
                    "`pin_memory=True` without an accelerator only warns and is ignored",
                    f"pin_memory={torch}.cuda.is_available()",
                    self.replace(k.value, f"{torch}.cuda.is_available()"),
                )


def analyze(path: str, text: str, tree: ast.Module) -> list[Finding]:
    a = Analyzer(path, text)
    a.visit(tree)
    a.findings.sort(key=lambda f: (f.line, f.col, f.rule))
    return a.findings
