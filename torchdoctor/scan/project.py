"""The project view: what one file tells the others, and the findings that need it.

Each file's analysis (cached per file) leaves a `FileSummary` — does it pick an MPS device,
which files does it save from CPU-only data — and findings whose verdict depends on other
files carry `needs`. After every file is analysed, `resolve` decides those findings against
the whole scanned tree. This step is never cached: an edit to one file changes the verdict on
another at the next run (the callers of a function are looked up in the current sources).

needs:
- ("mps",): the finding crashes only on an MPS device; kept as reported when some file of the
  project picks one, lowered to `low` otherwise.
- ("saved", mode, key, …): a `torch.load` of a file; dropped when the project itself writes a
  file of that key from CPU-only data (RNG or scheduler state, a dataset cache), or when the
  load's fixed path ("at:"/"glob:" keys) names a file the tree ships that holds no CUDA
  tensors (committed.py reads its pickle's opcodes; one that does is named in the grounds). With mode
  "caller" (code that takes its device from a caller), lowered to `low` unless a file of the
  project that imports this one falls back to the CPU (a main.py that passes the device on).
- ("shipped", path): a `torch.load` without `weights_only` of a fixed relative path; `low`
  when the scanned tree holds that file (or its .zip) at the loading file's folder or a
  parent up to the repository's root: weights committed with the code.
- ("shipped-import", module, name): the same for a path named by a constant the file imports
  from a module of the project (`from config import TRAIN_PATH`), read there (constants.py).
- ("callers", name, param, index, "public"|"private"|"script"): a `param="cuda"` default of
  `name`; dropped when every call of `name` in the project passes `param` (by keyword, or by
  position `index`), `high` when some call leaves it out, else as reported (public) or `low`
  (private: an `_name`, or a function of a script). A script with no CPU fallback of its own
  stays `low` even when called without it: its default is its author's machine. Calls in files
  made to run on CUDA only (cuda_only.py: a Cog predictor, an NCCL trainer) are not looked at:
  there the default is the machine.
"""

from __future__ import annotations

import ast
import glob
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from .callsites import calls_in, passes, shadows
from .committed import committed_locations, on_cpu
from .confidence import lower
from .constants import project_relative, reexports, string_constant
from .cuda_only import CUDA_KERNEL_PACKAGES, DEVICE_RULES, cuda_only_reason
from .model import Finding


@dataclass
class FileSummary:
    mps: bool = False  # the file picks (or offers) an MPS device
    cpu_saves: list[str] = field(default_factory=list)  # keys of files saved from CPU data
    cuda_only: str | None = None  # why importing the file needs CUDA (compiles_cuda_at_import)
    imports: list[str] = field(default_factory=list)  # modules it imports ("model", "..op")
    fallback: bool = False  # the file picks the CPU where CUDA is absent (context.falls_back)
    saves: bool = False  # the file calls torch.save: it writes files of its own (calibration)
    cuda_calls: int = 0  # `.cuda()` calls outside any guard (TD001 reported, any confidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "mps": self.mps,
            "cpu_saves": list(self.cpu_saves),
            "cuda_only": self.cuda_only,
            "imports": list(self.imports),
            "fallback": self.fallback,
            "saves": self.saves,
            "cuda_calls": self.cuda_calls,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> FileSummary:
        only = doc["cuda_only"]
        return cls(
            bool(doc["mps"]),
            [str(k) for k in doc["cpu_saves"]],
            None if only is None else str(only),
            [str(m) for m in doc["imports"]],
            bool(doc["fallback"]),
            bool(doc["saves"]),
            int(doc["cuda_calls"]),
        )


MPS_HINTS = ("'mps", '"mps', "backends.mps", "mps.is_available")


DEVICE_WORDS = ("cuda", "mps", "xpu", "device", ".to(")
# Rules whose harm needs a tensor off the CPU: a module attribute left behind by .to(), a
# factory result meeting a device tensor, a host sync, .numpy() of a device tensor.
CPU_MOOT = frozenset(["TD301", "TD302", "TD303", "TD402", "TD403"])


def names_a_device(text: str) -> bool:
    """Does the file name a device or an accelerator at all? Where no scanned file does, the
    tensors never leave the CPU (seungeunrho/minimalRL, fifth blind corpus)."""
    return any(w in text for w in DEVICE_WORDS)


def picks_mps(text: str) -> bool:
    """A string naming the device (`"mps"`, `'mps:0'`) or torch's MPS backend: plain
    substring tests, as the whole text is searched in every file."""
    return any(h in text for h in MPS_HINTS)


# What the project view looks up: the calls of function `name` defined in file `home` that
# give (or not) its parameter `param`, at positional `index`. A name starting with "." is a
# method's: only `x.name(…)` calls it.
Wanted = tuple[str, str, int, str]


@dataclass
class Call:
    path: str
    line: int
    passes: bool  # the call gives the parameter (or may, through *args / **kwargs)


class Project:
    """The scanned tree's summaries, and the callers of a function (looked up on demand).

    `read` gives a file's bytes. `key` names the tree's exact contents (every file's digest):
    the callers found for it can be kept (`memo`) and reused only for the very same tree."""

    def __init__(
        self,
        summaries: dict[str, FileSummary],
        read: Callable[[str], bytes | None],
        key: str = "",
        memo: dict[str, Any] | None = None,
    ) -> None:
        self.summaries = summaries
        self.read = read
        self.key = key
        self.mps = any(s.mps for s in summaries.values())
        self.cpu_saved = {k for s in summaries.values() for k in s.cpu_saves}
        self.cuda_calls = sum(s.cuda_calls for s in summaries.values())
        self._cpu_only: bool | None = None  # computed on first need
        self._cuda_only: dict[str, str] | None = None  # computed on first need
        self._fallback_importers: dict[str, str] | None = None  # computed on first need
        self._calls: dict[Wanted, list[Call]] = {}
        self._constants: dict[tuple[str, str, int], str | None] = {}
        self._modules: dict[str, ast.Module | None] = {}
        if key and memo and memo.get("key") == key:
            self._load_memo(memo)

    def _load_memo(self, memo: dict[str, Any]) -> None:
        try:
            for wanted, calls in memo["calls"].items():
                name, param, index, home = wanted.split("\0")
                self._calls[(name, param, int(index), home)] = [
                    Call(p, int(n), bool(ok)) for p, n, ok in calls
                ]
        except (KeyError, TypeError, ValueError, AttributeError):
            self._calls = {}  # not what we wrote: look the callers up again

    def memo(self) -> dict[str, Any]:
        """The callers looked up, to be stored with the tree's key."""
        calls = {
            "\0".join((n, p, str(i), h)): [[c.path, c.line, c.passes] for c in found]
            for (n, p, i, h), found in self._calls.items()
        }
        return {"key": self.key, "calls": calls}

    def find_calls(self, wanted: Iterable[Wanted]) -> None:
        """Every call of the wanted functions in the project. A file's text is
        searched only when its bytes show it can call one (`_callers_of`); nothing is parsed
        (callsites.py)."""
        todo = self.missing(wanted)
        if todo:
            self.add_calls(todo, search_calls(list(self.summaries), todo, self.read))

    def missing(self, wanted: Iterable[Wanted]) -> list[Wanted]:
        return sorted(w for w in set(wanted) if w not in self._calls)

    def add_calls(self, todo: list[Wanted], found: list[tuple[int, Call]]) -> None:
        """Calls found by `search_calls` (perhaps in parts, in worker processes)."""
        for w in todo:
            self._calls.setdefault(w, [])
        for i, call in found:
            self._calls[todo[i]].append(call)

    def calls(self, wanted: Wanted) -> list[Call]:
        self.find_calls([wanted])
        return self._calls[wanted]

    @property
    def cpu_only(self) -> bool:
        """A project of several files none of which names a device; one file alone is too small
        a view (its model may be moved by a caller that was not scanned). Asked only when a
        finding it could lower exists, and the first file naming a device ends the look."""
        if self._cpu_only is None:
            self._cpu_only = len(self.summaries) > 1 and not any(
                names_a_device((self.read(p) or b"device").decode("latin-1"))
                for p in self.summaries
            )
        return self._cpu_only

    def cuda_only_via_import(self, path: str) -> str | None:
        """Why `path` runs on CUDA only through what it imports, or None."""
        if self._cuda_only is None:
            self._cuda_only = imports_cuda_only(self.summaries)
        return self._cuda_only.get(path)

    def imported_constant(self, path: str, module: str, name: str, depth: int = 3) -> str | None:
        """The string a module of the project binds `name` to, imported from `path` (through
        `from m import *` and re-exports, `depth` files deep); None when not known."""
        for candidate in _candidates(path, module):
            if candidate not in self.summaries:
                continue
            key = (candidate, name, depth)
            if key not in self._constants:
                self._constants[key] = self._constant_in(candidate, name, depth)
            if self._constants[key] is not None:
                return self._constants[key]
        return None

    def _module(self, path: str) -> ast.Module | None:
        """The file's tree, parsed once however many of its names are looked up."""
        if path not in self._modules:
            data = self.read(path)
            try:
                self._modules[path] = ast.parse(data) if data is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._modules[path] = None
        return self._modules[path]

    def _constant_in(self, path: str, name: str, depth: int) -> str | None:
        tree = self._module(path)
        if tree is None:
            return None
        text = string_constant(tree, name)
        if text is not None or depth <= 1:
            return text
        for source, original in reexports(tree, name):
            text = self.imported_constant(path, source, original, depth - 1)
            if text is not None:
                return text
        return None

    def fallback_importer(self, path: str) -> str | None:
        """A file of the project that imports `path` and falls back to the CPU itself: code
        that takes its device from a caller is then run without CUDA (BCQ's agents, given the
        device by a main.py that picks the CPU where CUDA is absent; thirteenth blind corpus)."""
        if self._fallback_importers is None:
            self._fallback_importers = {}
            # only the files that fall back: resolving every import of torch's 2,000 files
            # would cost more than the warm run itself
            falling = [p for p, s in self.summaries.items() if s.fallback]
            for src, targets in import_edges(self.summaries, falling).items():
                for t in targets:
                    self._fallback_importers.setdefault(t, src)
        return self._fallback_importers.get(path)


# Parameters whose callers matter wherever they run: `weights_only` of a load forwarded through
# `**kwargs` (TD102) is a security choice, not a device one.
SECURITY_PARAMS = frozenset(["weights_only"])


def search_calls(
    paths: list[str], todo: list[Wanted], read: Callable[[str], bytes | None]
) -> list[tuple[int, Call]]:
    """(index into todo, call) for the calls of the wanted names in these files. A file's text
    is searched only when its bytes show it can call the function (`_callers_of`); nothing is
    parsed (callsites.py)."""
    out: list[tuple[int, Call]] = []
    needs = [_callers_of(w[0], w[3]) for w in todo]
    decided: set[int] = set()  # one call that leaves the parameter out decides
    for path in paths:
        data = read(path)
        if data is None:
            continue
        text, host = None, False
        for i, (name, param, index, home) in enumerate(todo):
            if i in decided or not _may_call(data, path, needs[i]):
                continue
            if text is None:
                text = data.decode("utf-8", "replace")
                host = cuda_only_reason(text) is not None
            if host and param not in SECURITY_PARAMS:
                continue  # a file made for CUDA only: a CUDA default left out is the machine
            word, method = name.lstrip("."), name.startswith(".")
            own = partial(shadows, text, word, home, method) if path != home else _never
            for line, args in calls_in(text, word, method, own):
                ok = passes(args, param, index)
                out.append((i, Call(path, line, ok)))
                if not ok:
                    decided.add(i)
                    break
    return out


def _callers_of(name: str, home: str) -> tuple[bytes, str, tuple[bytes, ...]]:
    """What a file's bytes must hold to call `name` of `home`: `.name(` for a method; for a
    function `name(`, and, outside home's folder, home's module or package name (the import it
    needs). Searching torch's own tree, the files that hold a name such as `trace` are four
    times those that can call it. Returns (call, home's folder, import words)."""
    word = name.lstrip(".")
    if name.startswith("."):
        return f".{word}(".encode(), "", ()
    folder = os.path.dirname(home)
    stem = os.path.splitext(os.path.basename(home))[0]
    top = folder
    if stem == "__init__":
        top, stem = os.path.dirname(folder), os.path.basename(folder)
    words = tuple(w.encode() for w in (stem, os.path.basename(top)) if w)
    return f"{word}(".encode(), folder, words


def _may_call(data: bytes, path: str, needs: tuple[bytes, str, tuple[bytes, ...]]) -> bool:
    call, folder, words = needs
    if call not in data:
        return False
    return not words or os.path.dirname(path) == folder or any(w in data for w in words)


def _never() -> bool:
    return False


def wanted_calls(findings: Iterable[Finding]) -> list[Wanted]:
    return [
        (f.needs[1], f.needs[2], int(f.needs[3]), f.path)
        for f in findings
        if f.needs and f.needs[0] == "callers"
    ]


def resolve(findings: list[Finding], project: Project) -> list[Finding]:
    """The findings decided against the project: some dropped, some confidences changed."""
    project.find_calls(wanted_calls(findings))
    out = []
    for f in findings:
        decided = _decide(f, project) if f.needs else f
        if decided is not None:  # a project-wide reason is said even for a finding already low
            out.append(_lowered(decided, project))
    return out


def _lowered(f: Finding, project: Project) -> Finding:
    """Low where the whole project makes the rule moot: the file needs CUDA to be imported at
    all, or no scanned file ever names a device."""
    why = None
    if f.rule in DEVICE_RULES:
        why = project.cuda_only_via_import(f.path)
    if why is None and f.rule in CPU_MOOT and project.cpu_only:
        why = "no scanned file names a device or an accelerator: the tensors stay on the CPU"
    return replace(f, confidence="low", grounds=why) if why else f


def module_imports(tree: ast.Module) -> list[str]:
    """The modules a file imports unconditionally, at its top level: "a.b" for `import a.b`
    and `from a.b import c` (with "a.b.c", which may be a submodule), leading dots kept for
    relative imports. An import inside `try`/`if` has a way around it, and is left out."""
    out: list[str] = []
    for s in tree.body:
        if isinstance(s, ast.Import):
            out += [a.name for a in s.names]
        elif isinstance(s, ast.ImportFrom):
            base = "." * s.level + (s.module or "")
            out.append(base)
            sep = "" if base.endswith(".") else "."
            out += [base + sep + a.name for a in s.names if a.name != "*"]
    return out


BUILDERS = frozenset(["load", "load_inline"])  # torch.utils.cpp_extension's JIT builders


def compiles_cuda_at_import(tree: ast.Module) -> str | None:
    """A top-level `load(..., sources=[...".cu"])` / `load_inline(..., cuda_sources=...)`:
    importing the file compiles CUDA kernels, so nothing that imports it runs without CUDA
    (stylegan2-pytorch's op/upfirdn2d.py). Likewise a top-level import of flash-attn
    (index-tts's accel/attention.py, imported by its paged-attention engine; twenty-second
    blind corpus). Inside a function, `if` or `try` it is optional."""
    for s in tree.body:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            absolute = isinstance(s, ast.Import) or not s.level
            names = [a.name for a in s.names] if isinstance(s, ast.Import) else [s.module or ""]
            kernels = [CUDA_KERNEL_PACKAGES.get(n.split(".")[0]) for n in names]
            if absolute and any(kernels):
                return f"it imports {next(k for k in kernels if k)}, whose kernels run on CUDA only"
            continue
        value = s.value if isinstance(s, (ast.Assign, ast.Expr, ast.AnnAssign)) else None
        if not isinstance(value, ast.Call):
            continue
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in BUILDERS:
            text = ast.unparse(value)
            if ".cu'" in text or '.cu"' in text or "cuda_sources" in text:
                return "it compiles CUDA kernels when imported"
    return None


def _candidates(path: str, module: str) -> list[str]:
    """Files `module` may be, imported from `path`: beside it and in each folder above it (a
    script's own folder is on sys.path; so is a package's root), or relative to its package."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    here = os.path.dirname(path)
    if level:
        for _ in range(level - 1):
            here = os.path.dirname(here)
        bases = [here]
    else:
        bases = []
        while True:
            bases.append(here)
            up = os.path.dirname(here)
            if up == here:
                break
            here = up
    out = []
    for base in bases:
        stem = os.path.join(base, *parts)
        out += [stem + ".py", os.path.join(stem, "__init__.py")]
    return out


def import_edges(
    summaries: dict[str, FileSummary], paths: Iterable[str] | None = None
) -> dict[str, list[str]]:
    """path -> the scanned files it imports unconditionally (those it may import), for each
    of `paths` (default: every file)."""
    edges: dict[str, list[str]] = {}
    for path in summaries if paths is None else paths:
        s = summaries[path]
        found = [c for module in s.imports for c in _candidates(path, module) if c in summaries]
        if found:
            edges[path] = found
    return edges


def imports_cuda_only(summaries: dict[str, FileSummary]) -> dict[str, str]:
    """Files that import (directly or through other files of the project, unconditionally) a
    file whose import compiles CUDA kernels: stylegan2-pytorch's fid.py imports model.py, which
    imports op/, which compiles `.cu` kernels at import (fourth blind scan corpus); none of
    them can even be imported without CUDA. path -> why."""
    seeds = {p for p, s in summaries.items() if s.cuda_only}
    if not seeds:
        return {}  # the common case: nothing to propagate, nothing resolved
    edges = {p: t for p, t in import_edges(summaries).items() if p not in seeds}
    # the seed each file is CUDA-only through: "upfirdn2d.py: it compiles CUDA kernels when …"
    origin = {p: f"{os.path.basename(p)}: {summaries[p].cuda_only}" for p in seeds}
    why: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for path, targets in edges.items():
            hit = None if path in origin else next((t for t in targets if t in origin), None)
            if hit is not None:
                origin[path] = origin[hit]
                rel = os.path.relpath(hit, os.path.dirname(path))
                why[path] = f"it imports {rel}, which needs CUDA ({origin[hit]})"
                changed = True
    return why


# How far up from the loading file a relative path is looked for: the repository's root,
# where the code is run from, is rarely deeper than this.
SHIPPED_LEVELS = 4
# A weights file the repository ships compressed (FastSpeech2's hifigan/*.pth.tar.zip).
ARCHIVES = ("", ".zip")
ROOTS = (".git", "pyproject.toml", "setup.py")


def shipped_with(source: str, relative: str, how: str = "at") -> str | None:
    """The file a fixed relative path names, when the scanned tree holds it (or its .zip) in
    the loading file's folder or one of its parents: weights committed with the code, trusted
    like the code itself (stargan-v2's metrics/lpips_weights.ckpt, Amphion's ckpt/*_stats.pt,
    labelled lookalikes in the eighteenth and twenty-seventh blind corpora). How the path is
    read (`how`, the key's prefix of torch_load.py): "at", as written (`../models/best.pt`
    from backend/main.py, classical-music-generation-model, set 294); "glob", a glob of the
    files an f-string may name, one of them enough (dmcontrol-generalization-benchmark's
    src/env/data/color_{easy,hard}.pt, set 111); "tail", the last two or more segments of an
    absolute path of the author's machine (QuadrupedRL's /home/jewel/…/qdpgym/sim/resources/
    acnet_220526.pt, set 290). Only a regular file inside the repository counts; nothing is
    read."""
    folders = [os.path.dirname(os.path.abspath(source))]
    while len(folders) <= SHIPPED_LEVELS:
        here, parent = folders[-1], os.path.dirname(folders[-1])
        if parent == here or any(os.path.exists(os.path.join(here, m)) for m in ROOTS):
            break  # the repository's root: what lies above is not the project's
        folders.append(parent)
    top = folders[-1]
    segments = relative.split("/")
    names = (
        ["/".join(segments[-k:]) for k in range(len(segments), 1, -1)]
        if how == "tail"
        else [relative]
    )
    for folder in folders:
        for name in names:
            for suffix in ARCHIVES:
                candidate = _candidate(folder, name + suffix, how == "glob")
                if candidate and os.path.commonpath([top, candidate]) == top:
                    try:
                        return os.path.relpath(candidate)
                    except ValueError:  # another drive (Windows)
                        return candidate
    return None


def _candidate(folder: str, name: str, pattern: bool) -> str:
    """The regular file (stat only) `name` names from `folder`, or "": for a pattern, the
    first file it matches, the folder's own name taken literally."""
    if pattern:
        matches = glob.glob(os.path.join(glob.escape(folder), name))
        return min((m for m in matches if os.path.isfile(m)), default="")
    candidate = os.path.normpath(os.path.join(folder, name))
    return candidate if os.path.isfile(candidate) else ""


def _committed(source: str, keys: list[str]) -> tuple[str, frozenset[str]] | None:
    """The shipped file a load's fixed path names ("at:", "glob:", "tail:" keys of
    torch_load.py) and where its tensors were saved, when the tree holds it and it can be read
    (committed.py)."""
    for key in keys:
        how, _, relative = key.partition(":")
        if how not in ("at", "glob", "tail"):
            continue
        found = shipped_with(source, relative, how)
        if found is None:
            continue
        locations = committed_locations(found, relative, pattern=how == "glob")
        if locations is not None:
            return found, locations
    return None


def _decide(f: Finding, project: Project) -> Finding | None:
    kind, *args = f.needs or ("",)
    if kind == "mps":
        if project.mps:
            return f
        why = "no scanned file picks an MPS device: it fails only where a user passes one"
        return replace(f, confidence=lower(f.confidence, "low"), grounds=why)
    if kind == "saved":
        if set(args[1:]) & project.cpu_saved:
            return None
        shipped = _committed(f.path, args[1:])
        if shipped is not None:
            found, locations = shipped
            if on_cpu(locations):
                return None  # it loads on any machine as it is
            devices = ", ".join(sorted(locations - {"cpu"}))
            f = replace(
                f,
                grounds="; ".join(
                    filter(None, [f.grounds, f"{found} holds tensors saved on {devices}"])
                ),
                # high: the file falls back to the CPU, where this very file fails to load
                proven=f.confidence == "high",
            )
        if args[0] != "caller" or f.confidence == "low":
            return f
        src = project.fallback_importer(f.path)
        if src is not None:
            return replace(f, grounds=f"{f.grounds}; {src} imports it and falls back to the CPU")
        why = (
            "the code takes its device from a caller, but no scanned file that imports it "
            "falls back to the CPU: a GPU-saved file fails only on a machine it may not be for"
        )
        return replace(f, confidence="low", grounds=why)
    if kind == "shipped":
        found = shipped_with(f.path, args[0], args[1] if args[1:] else "at")
        if found is None:
            return f
        why = f"{found} ships with the code at that fixed path: as trusted as the code loading it"
        return replace(f, confidence="low", grounds=why)
    if kind == "shipped-import":
        text = project.imported_constant(f.path, args[0], args[1])
        relative = project_relative(text) if text is not None else None
        found = shipped_with(f.path, relative) if relative is not None else None
        if found is None:
            return f
        why = (
            f"{found} ships with the code at the fixed path {args[1]} names ({args[0]}): as "
            "trusted as the code loading it"
        )
        return replace(f, confidence="low", grounds=why)
    if kind == "callers":
        name, param, index = args[0], args[1], int(args[2])
        calls = project.calls((name, param, index, f.path))
        left_out = [c for c in calls if not c.passes]
        if left_out:
            c = left_out[0]
            why = f"called without {param}= at {c.path}:{c.line}"
            if args[3:4] == ["script"]:
                why += ", in a script with no CPU fallback: the machine its author runs it on"
                return replace(f, confidence="low", grounds=why)
            return replace(f, confidence="high", grounds=why)
        if calls:
            return None  # every caller in the project chooses the device
        if name.lstrip(".").startswith("_") or args[3:4] in (["private"], ["script"]):
            why = "a private function (or one of a script) no scanned file calls"
        else:  # 1 of 5 such defaults in fourteen blind corpora was a pitfall to its labeller
            why = "no scanned file calls it: the default reaches only callers outside the project"
        return replace(f, confidence=lower(f.confidence, "low"), grounds=why)
    return f
