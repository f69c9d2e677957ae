"""How fast `torchdoctor scan` reads a large real codebase, against the floor for an AST-based
scanner (Python's own `ast.parse` over the same files, same worker processes) and, when it is
installed, `ruff check` over the same files with as many threads.

    python benchmarks/bench_scan.py [--repeat 5] [--jobs N] [PATH]

PATH defaults to the installed torch package (found without importing it). Each measurement is
repeated and the median reported; they run interleaved in one process so that they see the
same machine load. The scan is timed twice per round: cold (an empty cache folder, which the
run fills) and warm (the same folder, the tree unchanged). Timings belong here, not in the
unit tests.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import CHUNK, default_jobs, iter_files, read_source


def torch_dir() -> str:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass a PATH to scan instead")
    return next(iter(spec.submodule_search_locations))


def _parse_chunk(paths: list[str]) -> int:
    n = 0
    for p in paths:
        try:
            ast.parse(read_source(p), filename=p)
            n += 1
        except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
            pass
    return n


def parse_all(files: list[str], jobs: int) -> int:
    """Read and `ast.parse` every file, chunked over `jobs` processes like the scan."""
    chunks = [files[i : i + CHUNK] for i in range(0, len(files), CHUNK)]
    if jobs == 1:
        return sum(map(_parse_chunk, chunks))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return sum(pool.map(_parse_chunk, chunks))


def ruff_all(ruff: str, files: list[str], jobs: int) -> None:
    env = {**os.environ, "RAYON_NUM_THREADS": str(jobs)}
    cmd = [ruff, "check", "--no-cache", "--isolated", "--exit-zero", "--quiet", *files]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--include-tests", action="store_true")
    ap.add_argument("--jobs", type=int, default=None, help="default: the usable CPUs")
    args = ap.parse_args()
    path = args.path or torch_dir()
    jobs = args.jobs or default_jobs()
    opts = ScanOptions(include_tests=args.include_tests)
    files = [p for p, skipped in iter_files([path], args.include_tests) if not skipped]
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    results: dict[str, list[float]] = {
        "scan cold": [],
        "scan warm": [],
        "ast.parse": [],
        "ruff check": [],
    }
    scan = None
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="td-bench-cache-") as cache:
            cached = dataclasses.replace(opts, cache=True, cache_dir=cache)
            t0 = time.perf_counter()
            scan = scan_paths([path], cached, jobs)
            results["scan cold"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            warm = scan_paths([path], cached, jobs)
            results["scan warm"].append(time.perf_counter() - t0)
            assert warm.cache_hits == scan.files_scanned, "the warm run missed the cache"
        results["ast.parse"].append(timed(lambda: parse_all(files, jobs)))
        if ruff:
            results["ruff check"].append(timed(lambda: ruff_all(ruff, files, jobs)))
    assert scan is not None
    size = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"path:      {Path(path)}")
    print(f"files:     {scan.files_scanned} scanned, {scan.files_skipped} test files skipped")
    print(f"lines:     {scan.lines_scanned:,} ({size:.1f} MB)")
    print(f"findings:  {len(scan.findings)}, file errors: {len(scan.errors)}")
    print(f"jobs:      {jobs}, runs: {args.repeat}")
    base = statistics.median(results["ast.parse"])
    for name, times in results.items():
        if not times:
            print(f"{name:<11} (not installed)")
            continue
        med = statistics.median(times)
        print(
            f"{name:<11} median {med:6.2f} s = {scan.lines_scanned / med:>9,.0f} lines/s, "
            f"{med / base:.2f}x ast.parse   (runs: {', '.join(f'{t:.2f}' for t in times)})"
        )
    cold, warm = (statistics.median(results[k]) for k in ("scan cold", "scan warm"))
    print(f"warm/cold: {warm / cold:.3f} (the bound: at most 0.1)")


if __name__ == "__main__":
    main()
