"""--fix: a LibCST codemod driven by the scan's findings.

The analyzer says what is wrong and where; this module decides, per finding, whether a
mechanical edit is certain, and makes it on the concrete syntax tree (so comments, formatting,
CRLF, tabs, a BOM or a coding cookie all survive, and an edit knows which call of a method chain
it applies to). Every edit must leave a file that compiles and reads no name the file does not
bind; an edit that cannot be made surely is declined with a reason and the finding stays.
One declined edit never costs the file its other edits.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import io
import os
import re
import signal
import stat
import threading
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from ..safeio import atomic_write, read_bounded
from . import fix_cst as edits
from .fix_cst import Decline
from .fix_project import ProjectFacts
from .model import Finding

DEVICE = "device"
# The node each rule's finding points at.
TARGET: dict[str, tuple[type, ...]] = {
    "TD001": (cst.Call,),
    "TD002": (cst.SimpleString, cst.ConcatenatedString),
    "TD101": (cst.Call,),
    "TD102": (cst.Call,),
    "TD401": (cst.Call,),
    "TD501": (cst.Name,),
}
DICT_VIEWS = frozenset(["items", "keys", "values"])
NOT_STATE_DICT = (
    "nothing shows this file holds only a state dict (it is not passed to load_state_dict or "
    "saved from a state_dict()); weights_only=True would refuse a pickled module or object on "
    "torch >= 2.6. Pass weights_only=True if it is a state dict, weights_only=False if you "
    "trust the file"
)


@dataclass
class _Edit:
    finding: Finding
    node: cst.CSTNode
    apply: Callable[[cst.CSTNode], cst.CSTNode]
    needs_import: bool = False  # adds `import torch` at the top


@dataclass
class FileFix:
    path: str
    old: str
    new: str
    applied: list[Finding]
    declined: list[tuple[Finding, str]] = field(default_factory=list)

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                f"a/{self.path}",
                f"b/{self.path}",
            )
        )


class _Apply(cst.CSTTransformer):
    def __init__(self, todo: list[_Edit]) -> None:
        super().__init__()
        self.by_node: dict[int, list[_Edit]] = {}
        for e in sorted(todo, key=lambda e: e.finding.rule):  # map_location before weights_only
            self.by_node.setdefault(id(e.node), []).append(e)

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        updated = super().on_leave(original_node, updated_node)
        for e in self.by_node.get(id(original_node), ()):
            updated = e.apply(updated)  # type: ignore[arg-type]
        return updated


def _render(module: cst.Module, todo: list[_Edit]) -> cst.Module:
    new = module.visit(_Apply(todo))
    return edits.add_import_torch(new) if any(e.needs_import for e in todo) else new


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


class _Planner:
    def __init__(self, path: str, wrapper: MetadataWrapper, project: ProjectFacts) -> None:
        self.path = path
        self.module = wrapper.module
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.project = project
        self.at: dict[tuple[int, int, int, int], list[cst.CSTNode]] = {}
        for node, r in wrapper.resolve(PositionProvider).items():
            key = (r.start.line, r.start.column, r.end.line, r.end.column)
            self.at.setdefault(key, []).append(node)
        self._torch: tuple[str, bool] | None = None

    def node_for(self, f: Finding) -> cst.CSTNode:
        for node in self.at.get((f.line, f.col - 1, f.end_line, f.end_col - 1), ()):
            if isinstance(node, TARGET[f.rule]):
                return node
        raise Decline("the fixer cannot find this code in the file")

    def torch_name(self) -> tuple[str, bool]:
        """The name torch is bound to here, and whether `import torch` must be added."""
        if self._torch is None:
            name = edits.module_torch_name(self.module)
            if name is None:
                if edits.binds(self.module, "torch"):
                    raise Decline("`torch` is bound here in a way the fixer does not follow")
                self._torch = ("torch", True)
            else:
                self._torch = (name, False)
        return self._torch

    def edit(self, f: Finding) -> _Edit:
        node = self.node_for(f)
        rule = f.rule
        proposed = f.edit.text if f.edit else None
        if rule in ("TD001", "TD002", "TD101") and proposed is None:
            # The analyzer proposes these only where the name they use is surely bound.
            raise Decline("no `device` variable is bound here" if rule != "TD101" else
                          "map_location='cpu' could move a whole model off its GPU")  # fmt: skip
        if rule == "TD001":
            return _Edit(f, node, lambda n: edits.cuda_to_device(n, DEVICE))  # type: ignore[arg-type]
        if rule == "TD002":
            return _Edit(f, node, lambda n: edits.replace_expression(n, DEVICE))  # type: ignore[arg-type]
        if rule == "TD101":
            m = re.search(r"map_location=(.+)$", proposed or "")
            if not m:
                raise Decline("no map_location was proposed")
            target = m.group(1)
            return _Edit(f, node, lambda n: edits.add_keyword(n, "map_location", target))  # type: ignore[arg-type]
        if rule == "TD102":
            if "pickle_module" in {a.keyword.value for a in node.args if a.keyword}:  # type: ignore[attr-defined]
                raise Decline("torch refuses weights_only=True next to pickle_module")
            if not self.holds_state_dict(node):  # type: ignore[arg-type]
                raise Decline(NOT_STATE_DICT)
            return _Edit(f, node, lambda n: edits.add_keyword(n, "weights_only", "True"))  # type: ignore[arg-type]
        if rule == "TD401":
            return _Edit(f, node, edits.detach_before_numpy)  # type: ignore[arg-type]
        if rule == "TD501":
            torch, add = self.torch_name()
            probe = "accelerator" if self.project.accelerator else "cuda"
            code = f"{torch}.{probe}.is_available()"
            return _Edit(f, node, lambda n: edits.replace_expression(n, code), add)  # type: ignore[arg-type]
        raise Decline("no mechanical fix for this rule")

    # ------------------------------------------------------------ is it a state dict?
    def _is_load_state_dict(self, node: cst.CSTNode | None) -> bool:
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return name == "load_state_dict"

    def _into_load_state_dict(self, node: cst.CSTNode) -> bool:
        arg = self.parents.get(node)
        return isinstance(arg, cst.Arg) and self._is_load_state_dict(self.parents.get(arg))

    def holds_state_dict(self, call: cst.Call) -> bool:
        """weights_only=True is exact only for a state dict: the load goes into
        load_state_dict, its name is only used as one, or the project saves that path from a
        state_dict()."""
        if self._into_load_state_dict(call):
            return True
        where = next((a for a in call.args if a.keyword is None and not a.star), None)
        where = where or next((a for a in call.args if a.keyword and a.keyword.value == "f"), None)
        if where is not None:
            with contextlib.suppress(SyntaxError, ValueError):
                key = ast.unparse(ast.parse(_code(where.value).strip(), mode="eval").body)
                if key in self.project.state_dict_paths:
                    return True
        parent = self.parents.get(call)
        if not (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return False
        return self._used_as_state_dict(parent.targets[0].target.value, parent)

    def _used_as_state_dict(self, name: str, assign: cst.Assign) -> bool:
        scope: cst.CSTNode | None = assign
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self.parents.get(scope)
        uses = [n for n in _names(scope or self.module, name) if n is not assign.targets[0].target]
        into = 0
        for use in uses:
            parent = self.parents.get(use)
            if self._into_load_state_dict(use):
                into += 1
            elif not (
                isinstance(parent, cst.Attribute)
                and parent.value is use
                and parent.attr.value in DICT_VIEWS
                and isinstance(self.parents.get(parent), cst.Call)
            ):
                return False  # used some other way: it may be any object
        return into > 0 or (bool(uses) and "load_state_dict(" in _code(scope or self.module))


def _names(root: cst.CSTNode, name: str) -> Iterator[cst.Name]:
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name) and node.value == name:
            yield node
        todo.extend(node.children)


def plan(
    path: str, text: str, findings: list[Finding], project: ProjectFacts | None = None
) -> FileFix | None:
    """The edits to make in one file and the findings left as they are (with why). None:
    no finding here has a mechanical fix. Never raises for what is in the file."""
    project = project or ProjectFacts()
    seen: set[tuple[str, int, int, int, int]] = set()
    todo: list[Finding] = []
    for f in findings:
        key = (f.rule, f.line, f.col, f.end_line, f.end_col)
        if f.rule in TARGET and key not in seen:  # the same finding twice is one edit
            seen.add(key)
            todo.append(f)
    if not todo:
        return None
    try:
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        planner = _Planner(path, wrapper, project)
    except Exception as exc:  # noqa: BLE001 - LibCST's parser or a deep file: report, never crash
        reason = f"the fixer cannot parse this file ({type(exc).__name__})"
        return FileFix(path, text, text, [], [(f, reason) for f in todo])
    declined: list[tuple[Finding, str]] = []
    chosen: list[_Edit] = []
    for f in todo:
        try:
            e = planner.edit(f)
            e.apply(e.node)  # a Decline shows here, before any rendering
            chosen.append(e)
        except Decline as exc:
            declined.append((f, str(exc)))
        except Exception as exc:  # noqa: BLE001 - an edit that cannot be built is not made
            declined.append((f, f"the fixer could not build this edit ({type(exc).__name__})"))
    accepted, new = _verified(path, planner.module, chosen, declined)
    return FileFix(path, text, new, [e.finding for e in accepted], declined)


def _problem(path: str, module: cst.Module, todo: list[_Edit], before: set[str]) -> str | None:
    """Why the file with these edits is not acceptable; None: it is."""
    try:
        code = _render(module, todo).code
        compile(code, path, "exec", dont_inherit=True)
    except Decline as exc:
        return str(exc)
    except SyntaxError as exc:
        return f"the edit would not compile ({exc.msg})"
    except Exception as exc:  # noqa: BLE001
        return f"the edit could not be made ({type(exc).__name__})"
    new_names = edits.unbound_names(cst.parse_module(code)) - before
    if new_names:
        return f"the edit would read an unbound name ({', '.join(sorted(new_names))})"
    return None


def _verified(
    path: str, module: cst.Module, chosen: list[_Edit], declined: list[tuple[Finding, str]]
) -> tuple[list[_Edit], str]:
    """All edits if together they are fine; else each one kept only if it still is."""
    if not chosen:
        return [], module.code
    before = edits.unbound_names(module)
    if _problem(path, module, chosen, before) is not None:
        kept: list[_Edit] = []
        for e in chosen:
            why = _problem(path, module, [*kept, e], before)
            if why is None:
                kept.append(e)
            else:
                declined.append((e.finding, why))
        chosen = kept
    return chosen, _render(module, chosen).code


# ---------------------------------------------------------------- reading and writing files
@dataclass(frozen=True)
class Source:
    text: str
    encoding: str  # a coding cookie's, or utf-8-sig when the file starts with a BOM
    st: os.stat_result


def read(path: str) -> Source:
    """Decode like Python does (cookie or BOM, else UTF-8); raises OSError/InputError/
    UnicodeDecodeError/SyntaxError."""
    data = read_bounded(path, allow_stdin=False)
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return Source(text[1:] if text.startswith("\ufeff") else text, encoding, os.stat(path))


def why_not_write(src: Source, path: str) -> str | None:
    """Files --fix leaves alone, whatever the edit: read-only files (the owner said so, even
    to root), and files with other hard links (a rename would split them)."""
    if not src.st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
        path, os.W_OK
    ):
        return "the file is read-only"
    if src.st.st_nlink > 1:
        return f"the file has {src.st.st_nlink} hard links; a rewrite would split them"
    return None


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C or SIGTERM during a write arrives after it: the file is either old or new, and
    the temporary file is gone (a signal inside mkstemp could otherwise orphan it)."""
    sigs = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}
    can = (
        hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    )
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs) if can else None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write(fix: FileFix, encoding: str) -> None:
    """Atomic replace in the file's own encoding (safeio keeps mode and owner)."""
    data = fix.new.encode(encoding)  # utf-8-sig puts the BOM back
    with _signals_held():
        atomic_write(fix.path, data)
