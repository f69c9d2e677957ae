"""Which of torchdoctor's variables and allocator keys a released torch wheel names, and where.

Issue 25: the release tables (torchdoctor/data/torch_env.py, alloc_keys.py) rest on each
release's own source. A wheel is built from its release tag, so its members are that tag's
shipped source: the Python files, the headers and the string literals of the compiled
libraries. This script reads one wheel (downloaded with ``pip download --no-deps
--only-binary :all: --platform <tag> --python-version <X.Y> torch==<v>``) and prints, as JSON,
for every variable and key of the tables: each torch library whose strings contain it (with up
to three of those strings, so a name seen only inside a message can be told from a literal the
code looks up), and each Python file or header that contains it, with the line.

Usage: python scripts/release_strings.py WHEEL [MORE_NAMES...] > 2.1.json
       python scripts/release_strings.py --summary DATE LINUX_DIR MACOS_DIR > release_strings.json
The second form folds the per-wheel reports (in each folder, one per release, named after its
minor: 2.1.json) into the compact table committed as torchdoctor/data/release_strings.json: per
release, its wheel and, per name, the members that hold it as a string of its own (or as a merged
tail), and, under "quoted", those that only hold it inside a longer string (a message).
Needs ``unzip``, ``strings`` and ``grep`` (binutils, coreutils); libraries are streamed, never
written to disk.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from torchdoctor.data import alloc_keys, torch_env

# torch's own libraries; the bundled CUDA/cuDNN/NCCL libraries of the 1.x wheels are skipped
LIBRARY = re.compile(
    r"torch/(lib/lib(c10|torch|shm|caffe2_nvrtc)[^/]*\.(so|dylib)[.0-9]*|_C\.[^/]*so)$"
)
SOURCE = re.compile(r"torch/.*\.(py|h|hpp|cuh)$")
EXTRA = (
    "Unrecognized CachingAllocator option",
    "in CUDA allocator config",
    "is deprecated, use PYTORCH_ALLOC_CONF",
    "cudaMallocAsync",
)
CONTEXTS = 3
SOURCE_LINES = 12
MEMBERS = 5  # per name and release in the summary
LONGEST = 200


def names() -> list[str]:
    """Every variable and allocator key the tables hold, and the marker strings above."""
    return sorted({*torch_env.VARIABLES, *alloc_keys.KEYS, *EXTRA})


def library_strings(wheel: Path, member: str, needles: list[str]) -> dict[str, dict]:
    """The strings of one library that contain a needle: per needle, whether it is a string of
    its own ("exact") or ends one ("tail": the linker may merge a literal into the tail of a
    longer string), how many strings hold it, and examples."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as pattern:
        pattern.write("\n".join(needles) + "\n")
        pattern.flush()
        unzip = subprocess.Popen(["unzip", "-p", str(wheel), member], stdout=subprocess.PIPE)
        strings = subprocess.Popen(
            ["strings", "-n", "4"], stdin=unzip.stdout, stdout=subprocess.PIPE
        )
        unzip.stdout.close()
        grep = subprocess.run(
            ["grep", "-F", "-f", pattern.name],
            stdin=strings.stdout,
            capture_output=True,
            check=False,
        )
        strings.stdout.close()
        strings.wait()
        unzip.wait()
    found: dict[str, dict] = {}
    for line in grep.stdout.decode("ascii", "replace").splitlines():
        for needle in needles:
            if needle not in line:
                continue
            entry = found.setdefault(
                needle, {"exact": False, "tail": False, "count": 0, "strings": []}
            )
            entry["count"] += 1
            entry["exact"] = entry["exact"] or line == needle
            own = line.endswith(needle)  # the needle may be a merged tail of this string
            entry["tail"] = entry["tail"] or (own and line != needle)
            shown = entry["strings"]
            if len(shown) < CONTEXTS:
                shown.append(line[:LONGEST])
            elif own and line[:LONGEST] not in shown:
                shown[-1] = line[:LONGEST]  # a literal beats a third message
    return found


def source_lines(zf: zipfile.ZipFile, needles: list[str]) -> dict[str, list[str]]:
    """Per needle, 'member:line: text' for each Python file or header that contains it."""
    found: dict[str, list[str]] = {}
    for info in zf.infolist():
        if not SOURCE.search(info.filename) or info.file_size > 4_000_000:
            continue
        text = zf.read(info).decode("utf-8", "replace")
        for needle in needles:
            if needle not in text:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if needle in line:
                    short = line.strip()[:LONGEST]
                    found.setdefault(needle, []).append(f"{info.filename}:{number}: {short}")
    # a common word ('backend') is in hundreds of files: keep the count and the first few
    return {n: [f"{len(hits)} lines", *hits[:SOURCE_LINES]] for n, hits in found.items()}


def scan(wheel: Path, needles: list[str]) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        members = [i.filename for i in zf.infolist() if LIBRARY.search(i.filename)]
        sources = source_lines(zf, needles)
    libraries = {m: library_strings(wheel, m, needles) for m in members}
    return {
        "wheel": wheel.name,
        "bytes": wheel.stat().st_size,
        "libraries": {m: found for m, found in libraries.items() if found},
        "libraries_read": members,
        "sources": sources,
    }


def _tests(path: str) -> bool:
    return path.startswith("torch/testing/")


def _members(report: dict, name: str) -> tuple[list[str], list[str]]:
    """Members holding ``name`` as a string of its own (or a merged tail), and members that only
    quote it inside a longer string."""
    own, quoted = [], []
    for member, found in report["libraries"].items():
        entry = found.get(name)
        if entry:
            (own if entry["exact"] or entry["tail"] else quoted).append(member)
    lines = report["sources"].get(name, [])
    if lines and int(lines[0].split()[0]) <= SOURCE_LINES:  # a common word says nothing
        own += sorted({h.split(":", 1)[0] for h in lines[1:] if not _tests(h)})
    return own[:MEMBERS], quoted[:MEMBERS]


def summary(folder: Path) -> dict:
    releases = {}
    for path in folder.glob("*.json"):
        report = json.loads(path.read_text())
        found, quoted = {}, {}
        for name in names():
            own, only = _members(report, name)
            if own:
                found[name] = own
            if only:
                quoted[name] = only
        releases[path.stem] = {
            "wheel": report["wheel"],
            "bytes": report["bytes"],
            "found": found,
            "quoted": quoted,
        }
    order = sorted(releases, key=lambda m: tuple(int(p) for p in m.split(".")))
    return {"releases": {m: releases[m] for m in order}}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--summary"] and len(argv) == 4:
        linux, macos = summary(Path(argv[2])), summary(Path(argv[3]))
        text = json.dumps({"checked": argv[1], "linux": linux, "macos": macos}, indent=1)
        # one line per list of member paths (they hold no spaces): a diff shows a release's change
        print(re.sub(r"\[\s+([^\[\]]*?)\s+\]", lambda m: f"[{' '.join(m[1].split())}]", text))
        return 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    wheel = Path(argv[0])
    if not wheel.is_file():
        print(f"not a file: {wheel}", file=sys.stderr)
        return 2
    json.dump(scan(wheel, sorted({*names(), *argv[1:]})), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
