"""How fast `torchdoctor scan` reads a large real codebase: the installed torch's own sources.

    python benchmarks/bench_scan.py [--repeat 5] [--jobs N] [PATH]

Scans PATH (default: the installed torch package, found without importing it) several times
in-process and prints the median wall time, files/s and lines/s. Timings belong here, not in
the unit tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import default_jobs


def torch_dir() -> str:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass a PATH to scan instead")
    return next(iter(spec.submodule_search_locations))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--include-tests", action="store_true")
    ap.add_argument("--jobs", type=int, default=None, help="default: the usable CPUs")
    args = ap.parse_args()
    path = args.path or torch_dir()
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = scan_paths([path], ScanOptions(include_tests=args.include_tests), args.jobs)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"path:      {Path(path)}")
    print(f"files:     {result.files_scanned} scanned, {result.files_skipped} test files skipped")
    print(f"lines:     {result.lines_scanned}")
    print(f"findings:  {len(result.findings)}, file errors: {len(result.errors)}")
    print(f"jobs:      {args.jobs or default_jobs()}")
    print(f"runs:      {', '.join(f'{t:.2f}' for t in times)} s")
    print(
        f"median:    {med:.2f} s = {result.files_scanned / med:.0f} files/s, "
        f"{result.lines_scanned / med:,.0f} lines/s"
    )


if __name__ == "__main__":
    main()
