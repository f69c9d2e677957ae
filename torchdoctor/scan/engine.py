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
from .config import ProjectConfig, config_for, config_for_dir
from .context import ProjectFacts
from .model import FileError, Finding, ScanResult
from .rules import RULES, resolve

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
# flake8/ruff style: a bare noqa comment silences every rule, `noqa: TD101, E501` only the ids
# listed.
NOQA = re.compile(r"#\s*noqa(?::\s*([A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?", re.I)
ALL = "*"
ALL_IDS = frozenset(r.id for r in RULES)


@dataclass
class ScanOptions:
    include_tests: bool = False
    select: frozenset[str] | None = None  # rule ids; None = all
    ignore: frozenset[str] = frozenset()
    use_config: bool = True  # read [tool.torchdoctor] and torch requirements of the project


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


def _ids(listed: str) -> set[str]:
    ids = set()
    for tok in re.split(r"[\s,]+", listed):
        rule = resolve(tok.strip()) if tok.strip() else None
        if rule:
            ids.add(rule.id)
    return ids


def suppressions(text: str, lines: Iterable[int] | None = None) -> dict[int, set[str]]:
    """line -> rule ids silenced there (`*` = all) from `# torchdoctor: ignore[TD001,…]`,
    `# noqa` or `# noqa: TD001,…` (other tools' codes in a noqa list are not ours). Only
    `lines` are read when given (the lines that have findings)."""
    out: dict[int, set[str]] = {}
    has_ours, has_noqa = "torchdoctor" in text, "noqa" in text.lower()
    if not (has_ours or has_noqa):
        return out
    all_lines = text.splitlines()
    wanted = range(1, len(all_lines) + 1) if lines is None else sorted(set(lines))
    for no in wanted:
        line = all_lines[no - 1] if 0 < no <= len(all_lines) else ""
        if "#" not in line:
            continue
        m = SUPPRESS.search(line) if has_ours else None
        if m:
            out.setdefault(no, set()).update({ALL} if m.group(1) is None else _ids(m.group(1)))
        n = NOQA.search(line) if has_noqa else None
        if n:
            out.setdefault(no, set()).update({ALL} if n.group(1) is None else _ids(n.group(1)))
    return out


def scan_source(
    path: str, text: str, opts: ScanOptions, config: ProjectConfig | None = None
) -> tuple[list[Finding], int]:
    """Findings of one file's text (raises SyntaxError/ValueError/RecursionError), and how
    many were suppressed (inline comments, the project's select, ignore, per-file-ignores)."""
    config = config or ProjectConfig()
    tree = ast.parse(text, filename=path)
    rules = (opts.select if opts.select is not None else ALL_IDS) - opts.ignore
    if not rules:
        return [], 0
    found = analyze(path, text, tree, ProjectFacts(config.torch_min), frozenset(rules))
    if not found:
        return [], 0
    quiet = suppressions(text, (f.line for f in found))
    per_file = config.ignored_for(path)
    kept, suppressed = [], 0
    for f in found:
        if f.rule not in rules:
            continue
        silenced = per_file | quiet.get(f.line, set())
        if not config.selects(f.rule) or ALL in silenced or f.rule in silenced:
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
        config = config_for(path) if opts.use_config else None
        findings, suppressed = scan_source(path, text, opts, config)
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


def _config_problems(files: list[str], result: ScanResult) -> None:
    """Each unreadable or invalid project configuration once, as a file error."""
    seen: set[tuple[str, str]] = set()
    for d in sorted({os.path.dirname(os.path.abspath(p)) for p in files}):
        cfg = config_for_dir(d)
        for problem in cfg.problems:
            if (cfg.root or d, problem) not in seen:
                seen.add((cfg.root or d, problem))
                result.errors.append(
                    FileError(os.path.join(cfg.root or d, "pyproject.toml"), problem)
                )


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
    if opts.use_config:
        _config_problems(files, result)
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
