"""How fast is `torchdoctor check`, against the floor and against what users run today?

Times whole processes, alternating the commands within each round so that drift in machine load
hits all of them alike, drops warm-up rounds, and prints medians and ratios measured in this run:

1. `torchdoctor check --json` (smoke test included) vs `python -c "import torch"` — the floor:
   any tool that asks torch anything pays its import.            target: median ratio <= 1.25
2. `torchdoctor check --json` vs `python -m torch.utils.collect_env`.  target: ratio <= 0.75
3. `torchdoctor --version` and `torchdoctor list-checks` (no torch).  target: median <= 0.25 s
4. Peak RSS of the torchdoctor parent process (it must not import torch), vs `import torch`.

Usage: python benchmarks/bench_check.py [--rounds 9] [--warmup 2]   (prints Markdown tables)
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from datetime import date

PY = sys.executable
# Report the parent's own peak RSS at exit (RUSAGE_SELF excludes the probe child).
RSS_WRAPPER = (
    "import atexit, resource, sys\n"
    "atexit.register(lambda: sys.stderr.write("
    "f'\\nPEAK_RSS_KB={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n'))\n"
    "{body}"
)

COMMANDS: dict[str, list[str]] = {
    "import torch": [PY, "-c", RSS_WRAPPER.replace("{body}", "import torch")],
    "torchdoctor check --json": [
        PY,
        "-c",
        RSS_WRAPPER.replace("{body}", "from torchdoctor.cli import main; main()"),
        "check",
        "--json",
    ],
    "collect_env": [PY, "-m", "torch.utils.collect_env"],
    "torchdoctor --version": [PY, "-m", "torchdoctor", "--version"],
    "torchdoctor list-checks": [PY, "-m", "torchdoctor", "list-checks"],
}


def run_once(argv: list[str]) -> tuple[float, int | None]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    rss = None
    for line in proc.stderr.splitlines():
        if line.startswith("PEAK_RSS_KB="):
            rss = int(line.split("=", 1)[1])
    return took, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()

    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    rss: dict[str, list[int]] = {k: [] for k in COMMANDS}
    names = list(COMMANDS)
    for r in range(args.warmup + args.rounds):
        # Rotate the order each round: no command always runs right after the same one.
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            took, peak = run_once(COMMANDS[name])
            if r >= args.warmup:
                times[name].append(took)
                if peak:
                    rss[name].append(peak)
        print(f"round {r + 1}/{args.warmup + args.rounds} done", file=sys.stderr)

    med = {k: statistics.median(v) for k, v in times.items()}
    check = med["torchdoctor check --json"]
    rows = [
        ("check / import torch", check / med["import torch"], "<= 1.25"),
        ("check / collect_env", check / med["collect_env"], "<= 0.75"),
    ]
    print(
        f"\ntorchdoctor benchmark, {date.today()}: {platform.machine()}, {_cpus()} CPUs, "
        f"Python {platform.python_version()}, {args.rounds} rounds after {args.warmup} warm-up\n"
    )
    print("| command | median s | min s | max s |")
    print("|---|---|---|---|")
    for name, v in times.items():
        print(f"| `{name}` | {med[name]:.3f} | {min(v):.3f} | {max(v):.3f} |")
    print("\n| ratio (medians, same run) | value | target | met |")
    print("|---|---|---|---|")
    for label, value, target in rows:
        limit = float(target.split()[-1])
        print(f"| {label} | {value:.2f} | {target} | {'yes' if value <= limit else 'NO'} |")
    for name in ("torchdoctor --version", "torchdoctor list-checks"):
        print(
            f"| `{name}` median s | {med[name]:.3f} | <= 0.25 | {'yes' if med[name] <= 0.25 else 'NO'} |"
        )
    parent = statistics.median(rss["torchdoctor check --json"]) / 1024
    floor = statistics.median(rss["import torch"]) / 1024
    print(
        f"\nPeak RSS: torchdoctor parent {parent:.0f} MiB; `import torch` process {floor:.0f} MiB"
    )


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


if __name__ == "__main__":
    main()
