"""platform: OS, CPU architecture, Python build, WSL, Apple Silicon under Rosetta."""

from __future__ import annotations

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context

ID = "platform"
TITLE = "Operating system and Python"
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("platform",)

# Python versions recent torch releases publish wheels for (compat-tables.md, section 2).
SUPPORTED_PYTHON = ((3, 10), (3, 14))


def check(facts: Facts, ctx: Context) -> Verdict:
    p = dig(facts, "platform", {})
    if not p:
        return verdict(
            Status.ERROR,
            "the probe reported no platform facts",
            {"probe": dig(facts, "probe.torch")},
        )
    # A report may not state the Python version: then there is nothing to judge it by.
    pyver = tuple(int(x) for x in (p.get("python_version") or "").split(".")[:2] if x.isdigit())
    where = " ".join(str(p[k]) for k in ("system", "machine") if p.get(k))
    bits = f" ({p['python_bits']}-bit)" if p.get("python_bits") else ""
    desc = f"{where}, {p.get('python_implementation', 'Python')} {p.get('python_version')}{bits}"
    if p.get("os"):
        desc += f", {p['os']}"
    details = {
        k: p.get(k)
        for k in (
            "system",
            "release",
            "machine",
            "python_version",
            "python_implementation",
            "python_bits",
            "executable",
            "in_venv",
            "wsl",
            "mac_ver",
            "rosetta",
            "libc",
            "os",
        )
    }
    if p.get("python_bits") == 32:
        return verdict(
            Status.FAIL,
            f"{desc}: PyTorch publishes no 32-bit wheels",
            details,
            [Remedy("Install a 64-bit Python and create the environment with it.")],
        )
    if p.get("rosetta"):
        return verdict(
            Status.FAIL,
            f"{desc} runs under Rosetta on Apple Silicon: no MPS, no arm64 wheels",
            details,
            [
                Remedy(
                    "Install an arm64 (native) Python, e.g. from python.org or `brew` on an arm64 shell, "
                    "and recreate the environment.",
                    ("arch -arm64 /bin/zsh",),
                )
            ],
        )
    if p.get("system") == "Darwin" and p.get("machine") == "x86_64":
        return verdict(
            Status.WARN,
            f"{desc}: recent PyTorch releases ship macOS wheels for arm64 only",
            details,
            [
                Remedy(
                    "On an Intel Mac, stay on the last release with x86_64 wheels (2.2.x) or use Linux."
                )
            ],
        )
    lo, hi = SUPPORTED_PYTHON
    if pyver and not (lo <= pyver <= hi):
        return verdict(
            Status.WARN,
            f"{desc}: recent PyTorch wheels cover Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}",
            details,
            [Remedy(f"Use Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]} for this environment.")],
        )
    if p.get("wsl"):
        desc += " under WSL2 (the GPU driver comes from Windows; do not install a Linux driver inside WSL)"
    return verdict(Status.PASS, desc, details)
