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
import bisect
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
from libcst.metadata import MetadataWrapper, PositionProvider

from ..safeio import atomic_write, read_bounded
from . import fix_cst as edits
from . import fix_names as names
from .fix_cst import Decline
from .fix_project import ProjectFacts
from .fix_state_dict import StateDictEvidence
from .model import Finding

DEVICE = "device"
# The node each rule's finding points at.
TARGET: dict[str, tuple[type, ...]] = {
    "TD001": (cst.Call,),
    "TD002": (cst.SimpleString, cst.ConcatenatedString),
    "TD101": (cst.Call,),
    "TD102": (cst.Call,),
    "TD009": (cst.Call, cst.SimpleString),
    "TD401": (cst.Call,),
    "TD501": (cst.Name,),
}
READS_DEVICE = frozenset([DEVICE])
LINE = re.compile(r"[^\r\n]*(\r\n|\r|\n)|[^\r\n]+$")
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
    reads: frozenset[str] = frozenset()  # names the new code reads: they must be bound
    chunk: _Chunk | None = None


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


def _read_names(expr: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(expr, mode="eval")):
        if isinstance(node, ast.Name):
            yield node.id


@dataclass
class _Chunk:
    """Top-level statements on lines first..last (1-based, inclusive): LibCST parses and
    rewrites only the chunks that have findings, so a fix costs what the edited code costs."""

    first: int
    last: int
    module: cst.Module | None = None
    at: dict[tuple[int, int, int, int], list[cst.CSTNode]] = field(default_factory=dict)

    def parse(self, lines: list[str]) -> None:
        self.module = cst.parse_module("".join(lines[self.first - 1 : self.last]))
        shift = self.first - 1
        positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        for node, r in positions.items():
            key = (r.start.line + shift, r.start.column, r.end.line + shift, r.end.column)
            self.at.setdefault(key, []).append(node)


def _chunks(tree: ast.Module) -> list[_Chunk]:
    out: list[_Chunk] = []
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        last = stmt.end_lineno or stmt.lineno
        if out and first <= out[-1].last:  # `a = 1; b = 2`, or a statement after a `;`
            out[-1].last = max(out[-1].last, last)
        else:
            out.append(_Chunk(first, last))
    return out


class _Planner:
    def __init__(self, text: str, project: ProjectFacts) -> None:
        self.text = text
        self.project = project
        self.tree = ast.parse(text)
        self.lines = [m.group() for m in LINE.finditer(text)]  # as the tokenizer counts lines
        self.chunks = _chunks(self.tree)
        self._starts = [c.first for c in self.chunks]
        self._evidence: StateDictEvidence | None = None
        self._torch: tuple[str, bool] | None = None

    def chunk_of(self, f: Finding) -> _Chunk:
        i = bisect.bisect_right(self._starts, f.line) - 1
        if i < 0 or f.end_line > self.chunks[i].last:
            raise Decline("the fixer cannot find this code in the file")
        chunk = self.chunks[i]
        if chunk.module is None:
            chunk.parse(self.lines)
        return chunk

    def node_for(self, f: Finding) -> tuple[_Chunk, cst.CSTNode]:
        chunk = self.chunk_of(f)
        for node in chunk.at.get((f.line, f.col - 1, f.end_line, f.end_col - 1), ()):
            if isinstance(node, TARGET[f.rule]):
                return chunk, node
        raise Decline("the fixer cannot find this code in the file")

    def torch_name(self) -> tuple[str, bool]:
        """The name torch is bound to here, and whether `import torch` must be added."""
        if self._torch is None:
            name = names.torch_binding(self.tree)
            if name is None:
                if names.binds(self.tree, "torch"):
                    raise Decline("`torch` is bound here in a way the fixer does not follow")
                self._torch = ("torch", True)
            else:
                self._torch = (name, False)
        return self._torch

    def edit(self, f: Finding) -> _Edit:
        chunk, node = self.node_for(f)
        e = self._edit(f, node)
        e.chunk = chunk
        return e

    def _edit(self, f: Finding, node: cst.CSTNode) -> _Edit:
        rule = f.rule
        proposed = f.edit.text if f.edit else None
        if rule in ("TD001", "TD002", "TD101") and proposed is None:
            # The analyzer proposes these only where the name they use is surely bound.
            raise Decline("no `device` variable is bound here" if rule != "TD101" else
                          "map_location='cpu' could move a whole model off its GPU")  # fmt: skip
        if rule == "TD001":
            return _Edit(f, node, lambda n: edits.cuda_to_device(n, DEVICE), reads=READS_DEVICE)  # type: ignore[arg-type]
        if rule == "TD002":
            return _Edit(f, node, lambda n: edits.replace_expression(n, DEVICE), reads=READS_DEVICE)  # type: ignore[arg-type]
        if rule == "TD101":
            m = re.search(r"map_location=(.+)$", proposed or "")
            if not m:
                raise Decline("no map_location was proposed")
            target = m.group(1)
            reads = frozenset(_read_names(target))
            return _Edit(
                f, node, lambda n: edits.add_keyword(n, "map_location", target), reads=reads
            )  # type: ignore[arg-type]
        if rule == "TD102":
            if "pickle_module" in {a.keyword.value for a in node.args if a.keyword}:  # type: ignore[attr-defined]
                raise Decline("torch refuses weights_only=True next to pickle_module")
            if not self.holds_state_dict(f):
                raise Decline(NOT_STATE_DICT)
            return _Edit(f, node, lambda n: edits.add_keyword(n, "weights_only", "True"))  # type: ignore[arg-type]
        if rule == "TD009" and isinstance(node, cst.SimpleString):
            if proposed is None:  # a prefixed literal (r"…"): left to its author
                raise Decline("no mechanical fix for a prefixed string")
            return _Edit(f, node, lambda n: edits.replace_expression(n, proposed))  # type: ignore[arg-type]
        if rule == "TD009":
            if proposed is None:  # autocast's device type is the author's choice
                raise Decline("no mechanical fix: pass the device type autocast runs on")
            func = cst.parse_expression(proposed)
            return _Edit(f, node, lambda n: n.with_changes(func=func))  # type: ignore[attr-defined]
        if rule == "TD401":
            return _Edit(f, node, edits.detach_before_numpy)  # type: ignore[arg-type]
        if rule == "TD501":
            torch, add = self.torch_name()
            probe = "accelerator" if self.project.accelerator else "cuda"
            code = f"{torch}.{probe}.is_available()"
            return _Edit(
                f, node, lambda n: edits.replace_expression(n, code), add, frozenset([torch])
            )  # type: ignore[arg-type]
        raise Decline("no mechanical fix for this rule")

    def holds_state_dict(self, f: Finding) -> bool:
        if self._evidence is None:
            self._evidence = StateDictEvidence(self.tree, self.lines, self.project.state_dict_paths)
        call = self._evidence.call_at(f.line, f.col - 1)
        return call is not None and self._evidence.holds_state_dict(call)

    def render(self, todo: list[_Edit]) -> str:
        """The file's text with these edits: edited chunks re-generated, the rest untouched."""
        lines = list(self.lines)
        by_chunk: dict[int, list[_Edit]] = {}
        for e in todo:
            by_chunk.setdefault(id(e.chunk), []).append(e)
        for chunk in sorted({id(e.chunk): e.chunk for e in todo}.values(), key=lambda c: -c.first):
            assert chunk.module is not None
            code = chunk.module.visit(_Apply(by_chunk[id(chunk)])).code
            lines[chunk.first - 1 : chunk.last] = [code]
        if any(e.needs_import for e in todo):
            at = names.import_line(self.tree) - 1
            newline = LINE.search(self.text)
            eol = newline.group(1) if newline and newline.group(1) else "\n"
            if at > 0 and not lines[at - 1].endswith(("\n", "\r")):
                lines[at - 1] += eol
            lines.insert(at, "import torch" + eol)
        return "".join(lines)


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
        planner = _Planner(text, project)
    except Exception as exc:  # noqa: BLE001 - a file too deep to parse: report, never crash
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
        except Exception as exc:  # noqa: BLE001 - LibCST could not parse or build it: no edit
            declined.append((f, f"the fixer could not make this edit ({type(exc).__name__})"))
    accepted, new = _verified(path, planner, chosen, declined)
    return FileFix(path, text, new, [e.finding for e in accepted], declined)


def _try(path: str, planner: _Planner, todo: list[_Edit]) -> tuple[str | None, str]:
    """(why the file with these edits is not acceptable or None, its text)."""
    try:
        code = planner.render(todo)
        compile(code, path, "exec", dont_inherit=True)
        reads = frozenset().union(*(e.reads for e in todo))
        unbound = names.unbound(code) & reads if reads else set()
    except Decline as exc:
        return str(exc), ""
    except SyntaxError as exc:
        return f"the edit would not compile ({exc.msg})", ""
    except Exception as exc:  # noqa: BLE001
        return f"the edit could not be made ({type(exc).__name__})", ""
    if unbound:
        return f"the edit would read an unbound name ({', '.join(sorted(unbound))})", code
    return None, code


def _verified(
    path: str, planner: _Planner, chosen: list[_Edit], declined: list[tuple[Finding, str]]
) -> tuple[list[_Edit], str]:
    """All edits if together they are fine; else each one kept only if it still is."""
    if not chosen:
        return [], planner.text
    why, code = _try(path, planner, chosen)
    if why is None:
        return chosen, code
    kept: list[_Edit] = []
    for e in chosen:
        why, code = _try(path, planner, [*kept, e])
        if why is None:
            kept.append(e)
        else:
            declined.append((e.finding, why))
    return kept, planner.render(kept) if kept else planner.text


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
