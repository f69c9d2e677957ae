"""Compiled extensions linked against another torch, found by reading files, not importing them.

An extension built with torch.utils.cpp_extension (flash-attn, mmcv, detectron2, torch-scatter,
a project's own CUDA ops) needs torch's libraries (libc10.so, libtorch_cpu.so, ...) and leaves
torch's C++ functions undefined for the loader to take from them. Built against another torch,
some of those functions do not exist in the installed one, and ``import`` fails with
``undefined symbol: _ZN3c104cuda9SetDeviceEi`` (Dao-AILab/flash-attention#931). The same answer
comes from the files: each extension's undefined torch symbols looked up in torch's libraries.

Where it looks: every directory the examined interpreter imports from (its sys.path, which
holds site-packages, PYTHONPATH and ``setup.py develop`` checkouts) and the working directory
(a project run from there imports its own build), a few levels deep, within a budget of
directory entries and time, and only where ``import`` can reach: folders and files named like
modules (not ``build/lib.linux-x86_64-3.10``, not a stray ``pytest-of-root`` under /tmp).
torch's own libraries and its companions (judged by importing them) are not examined. Runs in
torchdoctor's own process: nothing of the extension is executed.
"""

from __future__ import annotations

import os
import re
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..data.torch_symbols import TORCH_OWN_MODULES, TORCH_SYMBOL
from .elf import Elf, Lookup

# Sonames of torch's own libraries, as an extension's DT_NEEDED names them.
TORCH_LIB = re.compile(r"^lib(?:c10|torch|caffe2|shm)\w*\.so")
# Judged elsewhere (torch itself; companions are imported by the probe) or never linked to torch.
SKIP_PACKAGES = frozenset({*TORCH_OWN_MODULES, "nvidia", "functorch"})
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
DEPTH = 4  # mmdet/ops/dcn/deform_conv_cuda.so below a checkout: four levels
MAX_ENTRIES = 40_000  # directory entries visited, all roots together
MAX_LIBRARIES = 2_000  # .so files opened
BUDGET_S = 2.0
# The search that runs while the probe child imports torch may take longer: it costs nothing
# until the import ends. On a recorded H100 the first check after boot read 632 libraries of
# site-packages cold, 2.2 ms each, and stopped at 2 s with nothing judged.
EARLY_BUDGET_S = 6.0
SHOWN = 5  # missing symbols recorded per library


@dataclass
class Linked:
    """An extension library that links to torch: what it needs of torch's."""

    path: str
    needs: list[str]  # torch's sonames in its DT_NEEDED
    wanted: list[str]  # torch symbols it leaves undefined


@dataclass
class Found:
    """What a search found, and where it looked (real paths), so a later one skips those."""

    linked: list[Linked] = field(default_factory=list)
    searched: set[str] = field(default_factory=set)
    truncated: bool = False

    def merge(self, other: Found) -> Found:
        return Found(
            self.linked + other.linked,
            self.searched | other.searched,
            self.truncated or other.truncated,
        )


def search(roots: Iterable[str], budget_s: float = BUDGET_S) -> Found:
    """The extensions under ``roots`` that link to torch. Needs no torch: it can run while the
    probe imports torch, and is judged against torch's libraries after (``judge``)."""
    walk = _Walk(budget_s)
    linked = [found for path in walk.libraries(roots) if (found := _read(path))]
    return Found(linked, set(walk.seen), walk.truncated)


def judge(torch_dir: str | None, found: Found) -> dict[str, Any]:
    """{status, torch_lib, scanned, truncated, mismatched: [{path, needs_missing, missing,
    missing_count}]}: each extension found against torch's libraries."""
    if not torch_dir or not os.path.isdir(os.path.join(torch_dir, "lib")):
        return {"status": "skipped", "error": "torch's library directory was not found"}
    lib_dir = os.path.join(torch_dir, "lib")
    real_torch = os.path.realpath(torch_dir) + os.sep
    linked = [x for x in found.linked if not os.path.realpath(x.path).startswith(real_torch)]
    torch_libs = _TorchLibs(lib_dir)  # opened at the first extension that links to torch
    try:
        verdicts = [_against(x, torch_libs) for x in linked]
    finally:
        torch_libs.close()
    return {
        "status": "ok",
        "torch_lib": lib_dir,
        "scanned": len(linked),
        "truncated": found.truncated,
        "mismatched": [v for v in verdicts if v["needs_missing"] or v["missing_count"]],
    }


def gather(
    torch_dir: str | None, roots: Iterable[str], budget_s: float = BUDGET_S
) -> dict[str, Any]:
    """``search`` then ``judge``, in one go."""
    return judge(torch_dir, search(roots, budget_s))


def roots_of(sys_path: Iterable[str] | None, cwd: str | None, prefixes: Iterable[str]) -> list[str]:
    """The directories to search: the interpreter's import path and the working directory,
    without the standard library under its prefixes (it holds no torch extension)."""
    stdlib = tuple(os.path.join(p, "lib") + os.sep for p in prefixes if isinstance(p, str) and p)
    out: list[str] = []
    for entry in [*(sys_path or []), *([cwd] if cwd else [])]:
        if not isinstance(entry, str) or not entry or not os.path.isabs(entry):
            continue
        site = "site-packages" in entry or "dist-packages" in entry
        if stdlib and entry.startswith(stdlib) and not site:
            continue  # lib/pythonX.Y, its zip and lib-dynload
        if os.path.isdir(entry) and entry not in out:
            out.append(entry)
    return out


class _Walk:
    """Depth-, entry- and time-bounded search for ``*.so`` files; symlinks are not followed."""

    def __init__(self, budget_s: float) -> None:
        self.entries = 0
        self.opened = 0
        self.truncated = False
        self.until = time.monotonic() + budget_s
        self.seen: set[str] = set()

    def _over(self) -> bool:
        over = (
            self.entries > MAX_ENTRIES
            or self.opened > MAX_LIBRARIES
            or time.monotonic() > self.until
        )
        self.truncated = self.truncated or over
        return over

    def libraries(self, roots: Iterable[str]) -> Iterator[str]:
        for root in roots:
            real = os.path.realpath(root)
            if real in self.seen:
                continue
            self.seen.add(real)
            yield from self._dir(root, 0)

    def _dir(self, path: str, depth: int) -> Iterator[str]:
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            return
        for entry in entries:
            self.entries += 1
            if self._over():
                return
            name = entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_file() and name.endswith(".so") and _importable(name):
                    self.opened += 1
                    yield entry.path
                elif entry.is_dir() and depth + 1 < DEPTH and self._enter(entry):
                    yield from self._dir(entry.path, depth + 1)
            except OSError:
                continue

    def _enter(self, entry: os.DirEntry) -> bool:
        name = entry.name
        if not name.isidentifier() or name in SKIP_DIRS:
            return False  # import reaches only folders named like modules (not build/lib.linux-…)
        if name in SKIP_PACKAGES or name.startswith("nvidia_"):
            return False
        # a virtual environment inside the project: not what it imports
        return not os.path.isfile(os.path.join(entry.path, "pyvenv.cfg"))


def _importable(name: str) -> bool:
    """An extension module's file name: a module name, then its ABI tag (_C.cpython-311-….so)."""
    return name.split(".", 1)[0].isidentifier()


class _TorchLibs:
    """torch/lib's libraries, opened once, each with its symbol lookup."""

    def __init__(self, lib_dir: str) -> None:
        self.lib_dir = lib_dir
        self.files: list[Elf] = []
        self._lookups: list[Lookup] | None = None
        try:
            self.listing = sorted(os.listdir(lib_dir))[:256]
        except OSError:
            self.listing = []
        self.names = {n for n in self.listing if ".so" in n}

    @property
    def lookups(self) -> list[Lookup]:
        """torch's libraries mapped and their hash tables read, once, when first needed (most
        environments have no extension that links to torch: nothing of torch/lib is read)."""
        if self._lookups is None:
            self._lookups = self._open()
        return self._lookups

    def _open(self) -> list[Lookup]:
        lookups: list[Lookup] = []
        for name in sorted(self.names):
            elf = Elf.open(os.path.join(self.lib_dir, name))
            if elf is None:
                continue
            self.files.append(elf)
            try:
                lookup = elf.defines()
            except (ValueError, IndexError, struct.error):
                lookup = None
            if lookup is not None:
                lookups.append(lookup)
        return lookups

    def defines(self, symbol: str) -> bool:
        return any(symbol in lookup for lookup in self.lookups)

    def close(self) -> None:
        for elf in self.files:
            elf.data.close()


def _read(path: str) -> Linked | None:
    """The extension at ``path``: what it needs of torch; None when it does not link to torch
    (or cannot be read as 64-bit ELF)."""
    elf = Elf.open(path)
    if elf is None:
        return None
    with elf:
        try:
            needs = [n for n in elf.needed() if TORCH_LIB.match(n)]
            if not needs:
                return None
            wanted = sorted({s for s in elf.undefined() if TORCH_SYMBOL.match(s)})
        except (ValueError, IndexError, struct.error):
            return None
    return Linked(path, needs, wanted)


def _against(linked: Linked, torch: _TorchLibs) -> dict[str, Any]:
    """One extension against torch's libraries."""
    # A library torch does not ship (libc10_cuda.so beside a CPU build, libcaffe2.so of 1.0).
    needs_missing = [n for n in linked.needs if n not in torch.names]
    missing = [s for s in linked.wanted if not torch.defines(s)] if torch.lookups else []
    return {
        "path": linked.path,
        "needs_missing": needs_missing,
        "missing": missing[:SHOWN],
        "missing_count": len(missing),
    }
