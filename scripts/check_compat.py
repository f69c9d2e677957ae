"""Check torchdoctor/data/compat.py against PyPI's index (PEP 691 JSON): which torch and companion
versions exist, and the Python and manylinux tags of torch's Linux x86_64 wheels.

    python scripts/check_compat.py        # exit 0: the tables agree with PyPI; 1: they do not

download.pytorch.org (the variant indexes and their arch lists) is not reachable from CI, so the
variants and arch lists are checked for internal consistency only (tests/test_compat_data.py).
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from torchdoctor.data import compat

SIMPLE = "https://pypi.org/simple/{}/"
ACCEPT = "application/vnd.pypi.simple.v1+json"


def index(package: str) -> dict:
    req = urllib.request.Request(SIMPLE.format(package), headers={"Accept": ACCEPT})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def torch_wheels(files: list[dict]) -> dict[str, dict[str, set[str]]]:
    """version -> {"python": {cp311, …}, "platform": {manylinux_2_28_x86_64, …}} (Linux x86_64)."""
    out: dict[str, dict[str, set[str]]] = {}
    for f in files:
        m = re.match(r"torch-([\d.]+)-cp(\d)(\d+)-[^-]+-(.+)\.whl$", f["filename"])
        if m and "linux" in m.group(4) and m.group(4).endswith("x86_64"):
            row = out.setdefault(m.group(1), {"python": set(), "platform": set()})
            row["python"].add(f"{m.group(2)}.{m.group(3)}")
            row["platform"].add(m.group(4).removesuffix("_x86_64"))
    return out


def problems(indexes: dict[str, dict]) -> list[str]:
    out: list[str] = []
    wheels = torch_wheels(indexes["torch"]["files"])
    versions = {p: set(i.get("versions", [])) for p, i in indexes.items()}
    on_pypi = [v for v in wheels if compat.parse_version(v) >= (1, 8)]
    for minor in sorted({compat.torch_minor(v) for v in on_pypi}, key=compat.parse_version):
        if minor not in compat.RELEASES:
            out.append(f"torch {minor} is on PyPI but not in the tables")
    for minor, row in compat.RELEASES.items():
        patches = [v for v in on_pypi if compat.torch_minor(v) == minor]
        if not patches:
            out.append(f"torch {minor}: no Linux x86_64 wheel on PyPI")
            continue
        newest = max(patches, key=compat.parse_version)
        if newest != row.latest:
            out.append(
                f"torch {minor}: newest patch on PyPI is {newest}, the table says {row.latest}"
            )
        pys = sorted(wheels[newest]["python"], key=compat.parse_version)
        if (pys[0], pys[-1]) != row.python:
            out.append(
                f"torch {newest}: PyPI has Python {pys[0]}–{pys[-1]}, the table {row.python}"
            )
        if row.manylinux not in wheels[newest]["platform"]:
            out.append(
                f"torch {newest}: PyPI tags {wheels[newest]['platform']}, the table {row.manylinux}"
            )
        for version in patches:
            for pkg in ("torchvision", "torchaudio", "torchtext"):
                want = compat.companion_version(pkg, version)
                if want and want not in versions[pkg]:
                    out.append(f"torch {version}: {pkg} {want} is not on PyPI")
        for pkg in ("torchvision", "torchaudio", "torchtext", "triton"):
            minor_pair = getattr(row, pkg)
            if minor_pair and not any(compat.torch_minor(v) == minor_pair for v in versions[pkg]):
                out.append(f"torch {minor}: no {pkg} {minor_pair}.x on PyPI")
    return out


def main() -> int:
    try:
        indexes = {
            p: index(p) for p in ("torch", "torchvision", "torchaudio", "torchtext", "triton")
        }
    except OSError as exc:
        print(f"cannot read PyPI's index: {exc}", file=sys.stderr)
        return 2
    found = problems(indexes)
    for line in found:
        print(line)
    print(f"{len(compat.RELEASES)} releases checked against PyPI: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
