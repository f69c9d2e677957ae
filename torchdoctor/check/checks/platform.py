"""platform: OS, CPU architecture, Python build, WSL, Apple Silicon under Rosetta."""

from __future__ import annotations

from typing import Any

from torchdoctor.data import compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict
from torchdoctor.typed_json import Record

from ..record import Facts
from ..record.platform import Platform
from . import torch_owners
from .common import (
    Context,
    current_variant,
    grounded,
    install_command,
    python_cmd,
    torch_version_of,
)

ID = "platform"
TITLE = "Operating system and Python"
ORDER = 10  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("platform",)

# Python versions recent torch releases publish wheels for (compat-tables.md, section 2).
SUPPORTED_PYTHON = ((3, 10), (3, 14))
# The problems it reports, each its own finding id (platform.<code>).
FINDINGS = {
    "python-32bit": "a 32-bit Python: PyTorch publishes no 32-bit wheels",
    "rosetta": "an x86_64 Python under Rosetta on Apple Silicon: no MPS, no arm64 wheels",
    "intel-mac": "an Intel Mac: recent releases ship macOS wheels for arm64 only",
    "python-unsupported": "a Python version recent torch wheels do not cover",
    "glibc-old": "glibc older than current torch wheels need",
    "cpu-no-avx2": "an x86-64 CPU without AVX2: 'Illegal instruction'",
    "jetson-pypi-torch": "a Jetson with a torch build that does not use its GPU",
    "conda-and-pip": "torch installed by both conda and pip",
}


# The platform facts shown in details (records as their JSON, None when absent).
DETAIL_FIELDS = (
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


def _details(p: Platform) -> dict[str, Any]:
    values = {k: getattr(p, k) for k in DETAIL_FIELDS}
    return {k: (v.raw or None) if isinstance(v, Record) else v for k, v in values.items()}


def _describe(p: Platform) -> str:
    """'Linux x86_64, CPython 3.11.7 (64-bit)' (and the OS line a pasted report gives)."""
    where = " ".join(str(v) for v in (p.system, p.machine) if v)
    bits = f" ({p.python_bits}-bit)" if p.python_bits else ""
    desc = f"{where}, {p.python_implementation or 'Python'} {p.python_version}{bits}"
    return f"{desc}, {p.os}" if p.os else desc


def _installed_torch_fits(p: Platform, torch_version: str | None) -> bool:
    """The installed torch's release publishes wheels for this Python (torch 1.7 on Python 3.6):
    the environment is as its release made it, and 'recent wheels need 3.10' is no problem here."""
    release = compat.torch_minor(torch_version)
    if not release:
        return False
    fits = compat.release_takes_python(release, p.python_version)
    if fits is None:  # older than the tables (torch 0.4 to 1.7): those had only older Pythons
        oldest = min(compat.RELEASES, key=compat.parse_version)
        newer = compat.parse_version(p.python_version)[:2] > SUPPORTED_PYTHON[1]
        return compat.parse_version(release) < compat.parse_version(oldest) and not newer
    return fits


def _blocker(
    p: Platform, desc: str, torch_version: str | None = None, judge_python: bool = True
) -> Problem | None:
    """A Python no current torch wheel is built for: judged first, it makes the rest moot."""
    # A report may not state the Python version: then there is nothing to judge it by.
    pyver = tuple(int(x) for x in (p.python_version or "").split(".")[:2] if x.isdigit())
    lo, hi = SUPPORTED_PYTHON
    if p.python_bits == 32:
        return Problem(
            "python-32bit",
            Status.FAIL,
            f"{desc}: PyTorch publishes no 32-bit wheels",
            [
                Remedy(
                    "Install a 64-bit Python and create the environment with it.",
                    evidence=("platform.python_bits",),
                )
            ],
        )
    if p.rosetta:
        return Problem(
            "rosetta",
            Status.FAIL,
            f"{desc} runs under Rosetta on Apple Silicon: no MPS, no arm64 wheels",
            [
                Remedy(
                    "Install an arm64 (native) Python, e.g. from python.org or `brew` on an arm64 shell, "
                    "and recreate the environment.",
                    ("arch -arm64 /bin/zsh",),
                    ("platform.rosetta",),
                )
            ],
        )
    if p.system == "Darwin" and p.machine == "x86_64":
        return Problem(
            "intel-mac",
            Status.WARN,
            f"{desc}: recent PyTorch releases ship macOS wheels for arm64 only",
            [
                Remedy(
                    "On an Intel Mac, stay on the last release with x86_64 wheels (2.2.x) or use Linux.",
                    evidence=("platform.system", "platform.machine"),
                )
            ],
        )
    fits = _installed_torch_fits(p, torch_version)
    if judge_python and pyver and not (lo <= pyver <= hi) and not fits:
        return Problem(
            "python-unsupported",
            Status.WARN,
            f"{desc}: recent PyTorch wheels cover Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}",
            [
                Remedy(
                    f"Use Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]} for this environment.",
                    evidence=("platform.python_version",),
                )
            ],
        )
    return None


def _full_description(p: Platform, desc: str) -> str:
    """The passing summary: WSL2, the distribution, glibc and the CPU model added."""
    if p.wsl:
        desc += " under WSL2 (the GPU driver comes from Windows; do not install a Linux driver inside WSL)"
    glibc = p.glibc and f"glibc {p.glibc}"
    return desc + "".join(f"; {x}" for x in (p.distro.pretty_name, glibc, p.cpu.model) if x)


def check(facts: Facts, ctx: Context) -> Verdict:
    p = facts.platform
    if not p:
        return verdict(
            Status.ERROR,
            "the probe reported no platform facts",
            {"probe": facts.probe.torch.raw or None},
        )
    details = _details(p)
    desc = _describe(p)
    # A report that does not name its torch cannot say which Python range applies to it.
    unknown = facts.collected.source not in (None, "probe") and not torch_version_of(facts)
    blocker = _blocker(p, desc, torch_version_of(facts), judge_python=not unknown)
    if blocker:
        return from_problems([blocker], details, desc)
    found = (_glibc(facts), _cpu_isa(facts), _jetson(facts), _conda_and_pip(facts))
    return from_problems([x for x in found if x], details, _full_description(p, desc))


def _glibc(facts: Facts) -> Problem | None:
    """Wheels need the glibc of their manylinux tag; pip silently picks an older torch."""
    have = compat.parse_version(facts.platform.glibc)[:2]
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
    fix = Remedy(
        f"Use a distribution with glibc ≥ {need[0]}.{need[1]} (or a container) for current "
        "torch; on this one, pin the newest torch it can run.",
        (cmd,) if cmd else (),
        grounded(facts, "platform.glibc"),
    )
    why = f"{text} ('No matching distribution found' for newer ones)"
    return Problem("glibc-old", Status.WARN, why, [fix])


def _cpu_isa(facts: Facts) -> Problem | None:
    """x86-64 wheels use AVX/AVX2 code paths; a CPU without them dies with 'Illegal instruction'."""
    isa = facts.platform.cpu.isa
    if facts.platform.machine != "x86_64" or isa is None or "avx2" in isa:
        return None
    missing = "AVX and AVX2" if "avx" not in isa else "AVX2"
    return Problem(
        "cpu-no-avx2",
        Status.WARN,
        f"the CPU ({facts.platform.cpu.model or 'unknown model'}) lacks {missing}: "
        "PyTorch's x86-64 wheels may die with 'Illegal instruction'",
        [
            Remedy(
                "Run on a CPU with AVX2 (in a VM, pass the host CPU model through, e.g. "
                "`-cpu host`), or build torch from source for this CPU.",
                evidence=grounded(
                    facts, "platform.cpu.isa", "host.cpu.flags", "platform.cpu.model"
                ),
            )
        ],
    )


def _jetson(facts: Facts) -> Problem | None:
    """Jetson's GPU is reached only through NVIDIA's JetPack builds of torch, not PyPI's."""
    tegra = (facts.platform.jetson or "").lstrip("# ").split(", GCID")[0]
    variant = facts.torch.build.variant
    if not tegra or variant in ("cuda", None):
        return None
    return Problem(
        "jetson-pypi-torch",
        Status.WARN,
        f"a Jetson ({tegra}) with a {variant} build of torch: "
        "PyPI's aarch64 wheels do not use the Jetson GPU",
        [
            Remedy(
                "Install the torch wheel NVIDIA builds for your JetPack release (NVIDIA's 'PyTorch "
                "for Jetson' page lists the index per JetPack version), or use an l4t-pytorch "
                "container.",
                evidence=grounded(facts, "platform.jetson", "torch.build.variant"),
            )
        ],
    )


def _conda_and_pip(facts: Facts) -> Problem | None:
    """conda's pytorch and pip's torch in one environment overwrite each other's files. conda's
    pytorch carries torch's own metadata, so pip listing torch is not yet a second copy: it is one
    only where a torch metadata directory is not conda's, or of another release (torch_owners);
    facts without ownership (older ones) keep the finding but get no remedy that removes files."""
    conda = (facts.platform.conda_packages or {}).get("pytorch")
    pip = facts.packages.distributions.get("torch")
    if not conda or not pip or torch_owners.one_install(facts, conda):
        return None
    known = torch_owners.known(facts)
    dists = facts.packages.torch_distributions
    other = next((dists[i] for i in torch_owners.foreign(facts)), None) if known else None
    # another release than conda's is pip's own copy, whoever owns what: two installs
    versions = (pip.version, *(d.version for d in dists))
    two = known or not all(torch_owners.same_release(v, conda) for v in versions)
    pip_version = other.version if other and other.version else pip.version
    because = grounded(
        facts,
        "platform.conda_packages.pytorch",
        "packages.distributions.torch.version",
        *torch_owners.paths(facts),
    )
    fix = (
        _conda_pip_fix(facts, conda, pip_version, because)
        if two
        else _tell_conda_and_pip_apart(facts, conda, because)
    )
    where = f" ({other.metadata}, whose files no conda package lists)" if other else ""
    return Problem(
        "conda-and-pip",
        Status.WARN,
        f"torch is installed twice: conda's pytorch {conda} and pip's torch {pip_version}{where}",
        [fix],
    )


def _conda_pip_fix(facts: Facts, conda: str, pip_version: str | None, because: tuple) -> Remedy:
    """Two installs, told apart by ownership. The fix names the copy the import does not take (by
    the version torch reports). conda's record goes first: once `conda remove --force` has
    dropped it, pip's uninstall no longer deletes files conda lists as its own."""
    imported = compat.public_version(facts.torch.version)
    seen = (*because, *grounded(facts, "torch.version", "torch.file"))
    drop_conda = "conda remove --force pytorch"
    if imported and imported == compat.public_version(pip_version):
        return Remedy(
            f"The import takes pip's torch {pip_version} ({facts.torch.file}); conda's pytorch "
            f"{conda} is the stale copy: remove its record, then reinstall pip's torch so any "
            "file conda's removal took is restored.",
            (drop_conda, install_command(facts, current_variant(facts) or "cpu")),
            seen,
        )
    if imported and torch_owners.same_release(imported, conda):
        return Remedy(
            f"The import takes conda's pytorch {conda}; pip's torch {pip_version} is the stale "
            "copy. Remove conda's record first (pip would otherwise delete files conda lists as "
            "its own), then pip's copy, then install conda's again.",
            (
                drop_conda,
                f"{python_cmd(facts)} uninstall -y torch",
                f"conda install pytorch={conda}",
            ),
            seen,
        )
    return Remedy(
        "Keep one installer for torch: which copy the import takes could not be told (torch did "
        "not report a version that matches either). Remove conda's record first, then pip's "
        "copy, then install one of them.",
        (drop_conda, f"{python_cmd(facts)} uninstall -y torch"),
        because,
    )


def _tell_conda_and_pip_apart(facts: Facts, conda: str, because: tuple) -> Remedy:
    """Facts without ownership: pip's torch may be conda's own metadata (one install), so
    nothing is removed; these commands show which it is."""
    return Remedy(
        f"Check whether pip's torch is conda's pytorch {conda} itself (conda's package carries "
        "torch's metadata, so pip lists it as torch): if `conda list pytorch` names a conda "
        "channel (not pypi) and `pip show torch` the same release, it is one install and nothing "
        "needs removing. These facts do not say who owns torch's files; a fresh check reads it.",
        ("conda list pytorch", f"{python_cmd(facts)} show torch"),
        because,
    )
