"""platform: OS, CPU architecture, Python build, WSL, Apple Silicon under Rosetta."""

from __future__ import annotations

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, current_variant, install_command, python_cmd

ID = "platform"
TITLE = "Operating system and Python"
ORDER = 10  # position in the report: basic facts first, the smoke test last
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
            "glibc",
            "distro",
            "cpu",
            "jetson",
            "conda_packages",
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
    distro = (p.get("distro") or {}).get("pretty_name")
    cpu = (p.get("cpu") or {}).get("model")
    desc += "".join(f"; {x}" for x in (distro, p.get("glibc") and f"glibc {p['glibc']}", cpu) if x)
    problems = [
        x for x in (_glibc(facts), _cpu_isa(facts), _jetson(facts), _conda_and_pip(facts)) if x
    ]
    if problems:
        return verdict(
            Status.WARN, "; ".join(t for t, _ in problems), details, [r for _, r in problems]
        )
    return verdict(Status.PASS, desc, details)


def _glibc(facts: Facts) -> tuple[str, Remedy] | None:
    """Wheels need the glibc of their manylinux tag; pip silently picks an older torch."""
    have = compat.parse_version(dig(facts, "platform.glibc"))[:2]
    newest = compat.newest_for_glibc(have) if len(have) == 2 else None
    top = compat.newest_release()
    if len(have) < 2 or newest == top:
        return None
    need = compat.MANYLINUX_GLIBC[compat.RELEASES[top].manylinux]
    text = (
        f"glibc {have[0]}.{have[1]} is older than the {need[0]}.{need[1]} torch {top} wheels need: "
        f"pip installs torch {compat.latest_patch(newest)} at best"
        if newest
        else f"glibc {have[0]}.{have[1]} is older than any torch wheel needs"
    )
    cmd = f"{python_cmd(facts)} install 'torch=={compat.latest_patch(newest)}'" if newest else None
    return (
        f"{text} ('No matching distribution found' for newer ones)",
        Remedy(
            f"Use a distribution with glibc ≥ {need[0]}.{need[1]} (or a container) for current "
            "torch; on this one, pin the newest torch it can run.",
            (cmd,) if cmd else (),
        ),
    )


def _cpu_isa(facts: Facts) -> tuple[str, Remedy] | None:
    """x86-64 wheels use AVX/AVX2 code paths; a CPU without them dies with 'Illegal instruction'."""
    isa = dig(facts, "platform.cpu.isa")
    if dig(facts, "platform.machine") != "x86_64" or isa is None or "avx2" in isa:
        return None
    missing = "AVX and AVX2" if "avx" not in isa else "AVX2"
    return (
        f"the CPU ({dig(facts, 'platform.cpu.model') or 'unknown model'}) lacks {missing}: "
        "PyTorch's x86-64 wheels may die with 'Illegal instruction'",
        Remedy(
            "Run on a CPU with AVX2 (in a VM, pass the host CPU model through, e.g. "
            "`-cpu host`), or build torch from source for this CPU."
        ),
    )


def _jetson(facts: Facts) -> tuple[str, Remedy] | None:
    """Jetson's GPU is reached only through NVIDIA's JetPack builds of torch, not PyPI's."""
    tegra = (dig(facts, "platform.jetson") or "").lstrip("# ").split(", GCID")[0]
    if not tegra or dig(facts, "torch.build.variant") in ("cuda", None):
        return None
    return (
        f"a Jetson ({tegra}) with a {dig(facts, 'torch.build.variant')} build of torch: "
        "PyPI's aarch64 wheels do not use the Jetson GPU",
        Remedy(
            "Install the torch wheel NVIDIA builds for your JetPack release (NVIDIA's 'PyTorch for "
            "Jetson' page lists the index per JetPack version), or use an l4t-pytorch container."
        ),
    )


def _conda_and_pip(facts: Facts) -> tuple[str, Remedy] | None:
    """conda's pytorch and pip's torch in one environment overwrite each other's files."""
    conda = dig(facts, "platform.conda_packages") or {}
    pip = dig(facts, "packages.distributions.torch.version")
    if "pytorch" not in conda or not pip:
        return None
    return (
        f"torch is installed twice: conda's pytorch {conda['pytorch']} and pip's torch {pip}",
        Remedy(
            "Keep one installer for torch: remove conda's copy (or pip's) and reinstall the other.",
            (
                "conda remove --force pytorch",
                install_command(facts, current_variant(facts) or "cpu"),
            ),
        ),
    )
