"""Find Python files, parse each (never import or run it), analyze, apply suppressions.

A file that cannot be read, decoded or parsed becomes a per-file error and the scan goes on.
"""

from __future__ import annotations

import ast
import gc
import io
import json
import os
import re
import stat
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .analyzer import analyze
from .cache import ScanCache, config_key, default_dir, digest
from .calibration import calibrated, writes_files
from .confidence import DEFAULT as DEFAULT_CONFIDENCE
from .confidence import shown
from .config import ProjectConfig, config_for, config_for_dir
from .context import ProjectFacts, falls_back
from .model import FileError, Finding, ScanResult
from .project import (
    FileSummary,
    Project,
    Wanted,
    compiles_cuda_at_import,
    module_imports,
    picks_mps,
    resolve,
    search_calls,
    wanted_calls,
)
from .record import FileRecord
from .rules import RULES
from .rules import resolve as resolve_rule
from .vendored import lowered, vendored_files

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
    confidence: str | None = None  # the lowest shown; None: the project's config, else medium
    portable: bool | None = None  # the code must run without CUDA; None: the project's config
    cache: bool = False  # the command line's default is on (--no-cache)
    cache_dir: str | None = None  # None: cache.default_dir()

    def key(self) -> str:
        """What of the options changes a file's record (the confidence floor and the files
        picked do not: they apply after the records)."""
        select = None if self.select is None else sorted(self.select)
        return json.dumps([select, sorted(self.ignore), self.use_config])


def _test_name(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


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

    def first(p: str, real_dir: str | None = None) -> bool:
        # a walked file that is no link is its real folder's: one lstat, not one per component
        linked = real_dir is None or os.path.islink(p)
        real = os.path.realpath(p) if linked else os.path.join(real_dir, os.path.basename(p))
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
            real_dir = os.path.realpath(dirpath)
            in_tests = any(part in TEST_DIRS for part in Path(dirpath).relative_to(root).parts)
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    p = os.path.join(dirpath, fn)
                    if not first(p, real_dir) or not _regular(p, errors):
                        continue
                    yield p, (not include_tests and (in_tests or _test_name(fn)))


def _ids(listed: str) -> set[str]:
    ids = set()
    for tok in re.split(r"[\s,]+", listed):
        rule = resolve_rule(tok.strip()) if tok.strip() else None
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


def analyze_source(
    path: str, text: str, opts: ScanOptions, config: ProjectConfig | None = None
) -> tuple[list[Finding], int, FileSummary]:
    """One file's findings before the project's facts decide some of them (project.py), how
    many were suppressed (inline comments, the project's select, ignore, per-file-ignores),
    and what the file tells the rest of the project. Raises SyntaxError/ValueError/
    RecursionError."""
    config = config or ProjectConfig()
    tree = ast.parse(text, filename=path)
    summary = FileSummary(
        mps=picks_mps(text),
        cuda_only=compiles_cuda_at_import(tree),
        imports=module_imports(tree),
        fallback=falls_back(text),
        saves=writes_files(text),
    )
    rules = (opts.select if opts.select is not None else ALL_IDS) - opts.ignore
    if not rules:
        return [], 0, summary
    found = analyze(path, text, tree, ProjectFacts(config.torch_min), frozenset(rules), summary)
    if not found:
        return [], 0, summary
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
    return kept, suppressed, summary


def scan_source(
    path: str, text: str, opts: ScanOptions, config: ProjectConfig | None = None
) -> tuple[list[Finding], int]:
    """The findings of one file as a project of its own, at every confidence, and how many
    were suppressed."""
    found, suppressed, summary = analyze_source(path, text, opts, config)
    return resolve(found, Project({path: summary}, lambda _p: text.encode())), suppressed


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _decode(data: bytes) -> str:
    """Decode like Python does: a coding cookie or BOM, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def read_source(path: str) -> str:
    return _decode(_read_bytes(path))


def scan_file(path: str, opts: ScanOptions) -> FileRecord:
    """One file's record; a file that cannot be read, decoded or parsed is an error record."""
    try:
        data = _read_bytes(path)
    except OSError as exc:
        return FileRecord(path, error=FileError(path, f"cannot read: {exc.strerror or exc}"))
    record = FileRecord(path, digest(data))
    try:
        text = _decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        record.error = FileError(path, f"cannot decode: {exc}")
        return record
    try:
        config = config_for(path) if opts.use_config else None
        record.findings, record.suppressed, record.summary = analyze_source(
            path, text, opts, config
        )
    except SyntaxError as exc:
        newer = _newer_python(config)
        record.error = FileError(path, f"syntax error: {exc.msg}{newer}", exc.lineno)
        return record
    except (ValueError, RecursionError, MemoryError) as exc:
        record.digest = ""  # may depend on the machine (stack depth, memory): not cached
        record.error = FileError(path, f"cannot parse: {type(exc).__name__}: {exc}")
        return record
    record.lines = text.count("\n") + (not text.endswith("\n") and bool(text))
    return record


def _newer_python(config: ProjectConfig | None) -> str:
    """Why a file may not parse here: `ast` knows only the syntax of the Python it runs on,
    and the project asks for a newer one (unit-hifigan, blind set 388: `def f[T](…)`, PEP 695,
    under `requires-python = ">=3.13"`, read by a scan on 3.11)."""
    wanted = config.python_min if config is not None else None
    if wanted is None or wanted <= sys.version_info[:2]:
        return ""
    here = "{}.{}".format(*sys.version_info[:2])
    return (
        f" (the project requires Python >= {wanted[0]}.{wanted[1]}; this scan runs on {here},"
        f" which cannot parse newer syntax: run torchdoctor with Python {wanted[0]}.{wanted[1]})"
    )


PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves
CHUNK = 32


# Parsing allocates hundreds of thousands of AST nodes per large file, and CPython's default
# threshold (700) starts a cycle collection every few hundred of them, each walking the young
# objects again. ASTs hold no cycles (refcounting frees them), so collect far less often.
GC_THRESHOLD = (50_000, 20, 20)


def _scan_chunk(args: tuple[list[str], ScanOptions]) -> list[FileRecord]:
    paths, opts = args
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        return [scan_file(p, opts) for p in paths]
    finally:
        gc.set_threshold(*before)


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


def _parallel(pool, fn, chunks: list) -> list | None:
    """fn over chunks in the worker processes, in order; None when there are none (a sandbox
    without semaphores, a broken pool): the caller then works serially."""
    if pool is None:
        return None
    from concurrent.futures.process import BrokenProcessPool

    try:
        return list(pool.map(fn, chunks))
    except (OSError, BrokenProcessPool):
        return None


def _analyze_all(files: list[str], opts: ScanOptions, pool) -> list[FileRecord]:
    """Records of `files`, in parallel when there is a pool; in file order whatever the jobs."""
    chunks = [(files[i : i + CHUNK], opts) for i in range(0, len(files), CHUNK)]
    parts = _parallel(pool, _scan_chunk, chunks) if len(files) >= PARALLEL_MIN_FILES else None
    return [r for part in parts or map(_scan_chunk, chunks) for r in part]


def _search_chunk(args: tuple[list[str], list[Wanted]]):
    paths, todo = args
    return search_calls(paths, todo, _reader({}))


def _find_calls(project: Project, found: list[Finding], pool) -> None:
    """The callers the project view needs, looked up in the worker processes when there are
    any (the serial lookup is resolve's own)."""
    todo = project.missing(wanted_calls(found))
    paths = list(project.summaries)
    if not todo or pool is None or len(paths) < PARALLEL_MIN_FILES:
        return
    chunks = [(paths[i : i + CHUNK * 4], todo) for i in range(0, len(paths), CHUNK * 4)]
    parts = _parallel(pool, _search_chunk, chunks)
    if parts is not None:
        project.add_calls(todo, [c for part in parts for c in part])


def _pool(jobs: int, files: int):
    if jobs <= 1 or files < PARALLEL_MIN_FILES:
        return None
    from concurrent.futures import ProcessPoolExecutor

    try:
        return ProcessPoolExecutor(max_workers=jobs)
    except (OSError, NotImplementedError):
        return None


def _cached(
    files: list[str], opts: ScanOptions
) -> tuple[ScanCache, dict[str, FileRecord], dict[str, str], dict[str, bytes]]:
    """The cache, the records it holds for files whose bytes and configuration are unchanged,
    each file's configuration key, and the bytes read to tell (the project view reads them)."""
    directory = Path(opts.cache_dir) if opts.cache_dir else default_dir()
    cache = ScanCache(directory, opts.key())
    cache.load()
    hits: dict[str, FileRecord] = {}
    keys: dict[str, str] = {}
    held: dict[str, bytes] = {}
    by_config: dict[int, str] = {}  # config_for gives one object per folder: key it once
    for p in files:
        cfg = config_for(p) if opts.use_config else None
        if id(cfg) not in by_config:
            by_config[id(cfg)] = config_key(cfg)
        keys[p] = by_config[id(cfg)]
        if not cache.entries:
            continue  # a cold run: the workers read and hash each file once
        try:
            held[p] = data = _read_bytes(p)
        except OSError:
            continue  # scan_file says why
        got = cache.get(p, digest(data), keys[p])
        if got is not None:
            hits[p] = got
    return cache, hits, keys, held


def _reader(held: dict[str, bytes]):
    def read(path: str) -> bytes | None:
        try:
            return held[path] if path in held else _read_bytes(path)
        except OSError:
            return None

    return read


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # a deleted working folder: the folders named on the command line remain
        return None


def _floor(path: str, opts: ScanOptions) -> str:
    if opts.confidence is not None:
        return opts.confidence
    cfg = config_for(path).confidence if opts.use_config else None
    return cfg or DEFAULT_CONFIDENCE


def _portable(path: str, opts: ScanOptions) -> bool:
    if opts.portable is not None:
        return opts.portable
    return bool(opts.use_config and config_for(path).portable)


def _assemble(
    result: ScanResult,
    records: list[FileRecord],
    opts: ScanOptions,
    held: dict[str, bytes],
    memo: dict | None = None,
    pool=None,
) -> Project:
    """The result of the records: project-wide verdicts, then the confidence floor."""
    found: list[Finding] = []
    summaries = {}
    for r in records:
        if r.error is not None:
            result.errors.append(r.error)
            continue
        result.files_scanned += 1
        result.lines_scanned += r.lines
        result.suppressed += r.suppressed
        summaries[r.path] = r.summary
        found.extend(r.findings)
    result.confidence = opts.confidence or DEFAULT_CONFIDENCE
    tree = digest(json.dumps([[r.path, r.digest] for r in records]).encode())
    project = Project(summaries, _reader(held), tree if memo is not None else "", memo)
    _find_calls(project, found, pool)
    for f in resolve(found, project):
        portable, floor = _portable(f.path, opts), _floor(f.path, opts)
        where = (summaries.get(f.path), result.vendored.get(f.path), project.cuda_calls)
        placed = _placed(f, portable, *where)
        if shown(placed.confidence, floor):
            result.findings.append(placed)
            continue
        result.below_confidence += 1
        # the one setting that would show it: say so, since the scan cannot know the intent
        if not portable:
            alt = _placed(f, True, *where)
            result.below_confidence_portable += shown(alt.confidence, floor)
    return project


def _placed(
    f: Finding, portable: bool, summary: FileSummary | None, vendored: str | None, cuda_calls: int
) -> Finding:
    """The finding at the confidence its class earned, and vendored code's below that."""
    f = calibrated(f, summary, portable, cuda_calls)
    return lowered(f, vendored) if vendored is not None else f


def scan_paths(
    paths: Iterable[str], opts: ScanOptions | None = None, jobs: int | None = None
) -> ScanResult:
    """Scan files and directories; with several CPUs, big trees are parsed in parallel.
    Results come back in file order whatever the number of jobs."""
    opts = opts or ScanOptions()
    paths = list(paths)
    result = ScanResult()
    files = []
    for path, skipped in iter_files(paths, opts.include_tests, result.errors):
        if skipped:
            result.files_skipped += 1
        else:
            files.append(path)
    if opts.use_config:
        _config_problems(files, result)
    result.vendored = vendored_files(files, paths, _cwd())
    records: dict[str, FileRecord] = {}
    held: dict[str, bytes] = {}
    cache = None
    if opts.cache:
        cache, records, keys, held = _cached(files, opts)
    todo = [p for p in files if p not in records]
    pool = _pool(default_jobs() if jobs is None else jobs, len(todo))
    try:
        records.update((r.path, r) for r in _analyze_all(todo, opts, pool))
        ordered = [records[p] for p in files]
        memo = cache.project if cache else None
        project = _assemble(result, ordered, opts, held, memo, pool)
    finally:
        if pool is not None:
            pool.shutdown()
    if cache is not None:
        cache.save(ordered, keys, project.memo())
        result.cache_hits = cache.hits
    return result
