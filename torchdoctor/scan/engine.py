"""Find Python files, parse each (never import or run it), analyze, apply suppressions.

A file that cannot be read, decoded or parsed becomes a per-file error and the scan goes on.
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .analyzer import analyze
from .model import FileError, Finding, ScanResult
from .rules import resolve

SKIP_DIRS = frozenset(
    [
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".eggs",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
    ]
)
# Build outputs, skipped only when they are not a package (a `dist/` of distributed helpers is).
OUTPUT_DIRS = frozenset({"build", "dist"})
TEST_DIRS = frozenset({"test", "tests", "testing"})
SUPPRESS = re.compile(r"#\s*torchdoctor:\s*ignore(?:\[([^\]]*)\])?", re.I)
ALL = "*"


@dataclass
class ScanOptions:
    include_tests: bool = False
    select: frozenset[str] | None = None  # rule ids; None = all
    ignore: frozenset[str] = frozenset()


def is_test_file(path: Path) -> bool:
    name = path.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in TEST_DIRS for part in path.parts[:-1])


def _skip_dir(dirpath: str, name: str) -> bool:
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return name in OUTPUT_DIRS and not os.path.exists(os.path.join(dirpath, name, "__init__.py"))


def _regular(path: str, errors: list[FileError]) -> bool:
    """A FIFO or device named `*.py` would block `read()` forever: only regular files are read.
    A path that cannot be stat'ed is left to scan_file, which reports why."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    if stat.S_ISREG(mode):
        return True
    errors.append(FileError(path, "not a regular file"))
    return False


def iter_files(
    paths: Iterable[str], include_tests: bool, errors: list[FileError] | None = None
) -> Iterator[tuple[str, bool]]:
    """(path, skipped_as_test), each file once. A file named on the command line is always
    scanned. Unreadable directories and non-regular files go to `errors`."""
    errors = [] if errors is None else errors
    seen: set[str] = set()

    def first(p: str) -> bool:
        real = os.path.realpath(p)
        if real in seen:
            return False
        seen.add(real)
        return True

    def walk_error(exc: OSError) -> None:
        errors.append(FileError(exc.filename or "?", f"cannot read: {exc.strerror or exc}"))

    for raw in paths:
        root = Path(raw)
        if not root.is_dir():
            if first(raw) and _regular(raw, errors):
                yield raw, False
            continue
        for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error):
            dirnames[:] = sorted(d for d in dirnames if not _skip_dir(dirpath, d))
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    p = os.path.join(dirpath, fn)
                    if not first(p) or not _regular(p, errors):
                        continue
                    rel = Path(p).relative_to(root)
                    yield p, (not include_tests and is_test_file(rel))


def read_source(path: str) -> str:
    """Decode like Python does: a coding cookie or BOM, else UTF-8."""
    with open(path, "rb") as fh:
        data = fh.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def suppressions(text: str) -> dict[int, set[str]]:
    """line -> rule ids silenced there (`*` = all) from `# torchdoctor: ignore[TD001,…]`."""
    out: dict[int, set[str]] = {}
    if "torchdoctor" not in text:
        return out
    for no, line in enumerate(text.splitlines(), 1):
        m = SUPPRESS.search(line)
        if not m:
            continue
        if m.group(1) is None:
            out[no] = {ALL}
        else:
            ids = set()
            for tok in m.group(1).split(","):
                rule = resolve(tok.strip())
                if rule:
                    ids.add(rule.id)
            out[no] = ids
    return out


def scan_source(path: str, text: str, opts: ScanOptions) -> tuple[list[Finding], int]:
    """Findings of one file's text (raises SyntaxError/ValueError/RecursionError), and how
    many were suppressed."""
    tree = ast.parse(text, filename=path)
    found = analyze(path, text, tree)
    quiet = suppressions(text)
    kept, suppressed = [], 0
    for f in found:
        if (opts.select is not None and f.rule not in opts.select) or f.rule in opts.ignore:
            continue
        silenced = quiet.get(f.line, ())
        if ALL in silenced or f.rule in silenced:
            suppressed += 1
            continue
        kept.append(f)
    return kept, suppressed


def scan_file(path: str, opts: ScanOptions, result: ScanResult) -> str | None:
    """Scan one file into `result`; returns its text (for --fix) or None on error."""
    try:
        text = read_source(path)
    except OSError as exc:
        result.errors.append(FileError(path, f"cannot read: {exc.strerror or exc}"))
        return None
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        result.errors.append(FileError(path, f"cannot decode: {exc}"))
        return None
    try:
        findings, suppressed = scan_source(path, text, opts)
    except SyntaxError as exc:
        result.errors.append(FileError(path, f"syntax error: {exc.msg}", exc.lineno))
        return None
    except (ValueError, RecursionError, MemoryError) as exc:
        result.errors.append(FileError(path, f"cannot parse: {type(exc).__name__}: {exc}"))
        return None
    result.files_scanned += 1
    result.lines_scanned += text.count("\n") + (not text.endswith("\n") and bool(text))
    result.suppressed += suppressed
    result.findings.extend(findings)
    return text


PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves
CHUNK = 32


def _scan_chunk(args: tuple[list[str], ScanOptions]) -> ScanResult:
    paths, opts = args
    part = ScanResult()
    for p in paths:
        scan_file(p, opts, part)
    return part


def _merge(into: ScanResult, part: ScanResult) -> None:
    into.findings.extend(part.findings)
    into.errors.extend(part.errors)
    into.files_scanned += part.files_scanned
    into.lines_scanned += part.lines_scanned
    into.suppressed += part.suppressed


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def scan_paths(
    paths: Iterable[str], opts: ScanOptions | None = None, jobs: int | None = None
) -> ScanResult:
    """Scan files and directories; with several CPUs, big trees are parsed in parallel.
    Results come back in file order whatever the number of jobs."""
    opts = opts or ScanOptions()
    result = ScanResult()
    files = []
    for path, skipped in iter_files(paths, opts.include_tests, result.errors):
        if skipped:
            result.files_skipped += 1
        else:
            files.append(path)
    jobs = default_jobs() if jobs is None else jobs
    chunks = [(files[i : i + CHUNK], opts) for i in range(0, len(files), CHUNK)]
    parts: list[ScanResult] | None = None
    if jobs > 1 and len(files) >= PARALLEL_MIN_FILES:
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                parts = list(pool.map(_scan_chunk, chunks))
        except (OSError, BrokenProcessPool):
            parts = None  # no worker processes here (sandbox, no semaphores): scan serially
    if parts is None:
        parts = [_scan_chunk(c) for c in chunks]
    for part in parts:
        _merge(result, part)
    return result
