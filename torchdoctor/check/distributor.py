"""Who built the installed torch, and each package compiled against it: its distributor.

Pure: reads recorded facts only. The distributors are torchdoctor.data.distributors': PyTorch's
own builds (pip wheels from PyPI or download.pytorch.org, the pytorch conda channels),
conda-forge, Anaconda's defaults, a custom or vendor build (NGC's 2.4.0a0+07cecf4168, Jetson's
+nv23.05, a local source build), the operating system's package. What tells them apart, first
found wins: conda's record of the package (its channel; live from conda-meta, pasted from
conda list), the installer of torch's metadata (rpm, debian), the version's local tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchdoctor.data import compat
from torchdoctor.data.distributors import (
    ANACONDA,
    CONDA_FORGE,
    CONDA_OTHER,
    CUSTOM,
    DISTRO,
    OFFICIAL,
    of_channel,
)

from .record import Facts
from .record.packages import CondaPackage

WORDS = {
    OFFICIAL: "PyTorch's own build",
    CONDA_FORGE: "conda-forge's build",
    ANACONDA: "Anaconda's build (defaults channel)",
    CONDA_OTHER: "a conda build not from the pytorch channel",
    CUSTOM: "a custom build",
    DISTRO: "the operating system's package",
}
# conda's names for PyG's packages: the pyg channel's and conda-forge's.
CONDA_NAMES = {
    "torch-scatter": ("pytorch-scatter", "torch-scatter"),
    "torch-sparse": ("pytorch-sparse", "torch-sparse"),
    "torch-cluster": ("pytorch-cluster", "torch-cluster"),
    "torch-spline-conv": ("pytorch-spline-conv", "torch-spline-conv"),
    "torch": ("pytorch", "torch"),
}
PYG = ("torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "pyg-lib")
# PyG's wheels name the torch they were built for: 2.1.2+pt24cu124 (torch 2.4, CUDA 12.4).
PYG_TAG = re.compile(r"\+pt\d{2,3}(?:cu\d{2,3}|cpu)?$")
# The pytorch channel's build strings start with the Python version (py3.8_cpu_0,
# py3.10_cuda11.8_cudnn8.7.0_0); conda-build's hashed ones do not (cpu_py38haaa41f7_0).
OFFICIAL_CONDA_BUILD = re.compile(r"^py\d")
SYSTEM_INSTALLERS = ("rpm", "dpkg", "debian", "apt", "pacman", "portage")
# The local tags of download.pytorch.org's indexes (as checks.common's, which imports this
# package's checks: not imported here).
_INDEX_TAG = re.compile(r"cu\d{2,3}|rocm\d+(?:\.\d+){0,2}|cpu|xpu")


def wheel_tag(version: str | None) -> str | None:
    tag = (version or "").partition("+")[2]
    return tag if _INDEX_TAG.fullmatch(tag) else None


def _torch_version(facts: Facts) -> tuple[str | None, str]:
    """The examined torch's version and where it was read (the probe, else the metadata)."""
    if facts.torch.version:
        return facts.torch.version, "torch.version"
    installed = facts.packages.distributions.get("torch")
    return (installed.version if installed else None), "packages.distributions.torch.version"


@dataclass(frozen=True)
class Origin:
    """Who built a package (``distributor``; None: the facts cannot say), in words, with the
    fact paths that say so."""

    distributor: str | None
    how: str
    evidence: tuple[str, ...] = ()
    channel: str | None = None  # the conda channel, when conda installed it


UNKNOWN = Origin(None, "unknown")


def same_release(version: str | None, conda_version: str) -> bool:
    """Whether an installed version is conda's package of ``conda_version``: conda-forge's torch
    reports 1.13.1.post200 for its conda package 1.13.1 (its build number as a post release)."""
    public = compat.public_version(version) or ""
    return public == conda_version or public.startswith(f"{conda_version}.post")


def _conda(facts: Facts, name: str, version: str | None) -> tuple[str, CondaPackage] | None:
    """conda's record of ``name`` when it is the installed copy (pip's over it has another
    version): (its conda name, record)."""
    for conda_name in CONDA_NAMES.get(name, (name,)):
        own = facts.packages.conda.get(conda_name)
        if not own or own.channel == "pypi" or not own.version:
            continue
        if version and not same_release(version, own.version):
            continue
        return conda_name, own
    return None


def _from_conda(conda_name: str, own: CondaPackage) -> Origin:
    ev = (f"packages.conda.{conda_name}.channel", f"packages.conda.{conda_name}.build")
    who = of_channel(own.channel)
    if who:
        return Origin(who, f"conda channel {own.channel}, build {own.build}", ev, own.channel)
    if own.build and not own.channel:
        # a pasted conda list names no channel for Anaconda's defaults; the build string tells
        # the pytorch channel's builds from conda-build's hashed ones
        if OFFICIAL_CONDA_BUILD.match(own.build):
            return Origin(OFFICIAL, f"conda, a pytorch-channel build {own.build}", ev)
        return Origin(CONDA_OTHER, f"conda build {own.build}, not the pytorch channel's", ev)
    return UNKNOWN


def of_version(version: str | None) -> str | None:
    """The distributor a version says: PyTorch's index tag (+cu124, +cpu) or an untagged release
    or nightly is PyTorch's wheel; a git hash or vendor tag (2.4.0a0+07cecf4168, +nv23.05) or an
    alpha without one (0.19.0a0, NGC's torchvision) is a custom build; None when it cannot say
    (conda-forge's 1.13.1.post200)."""
    if not version:
        return None
    if "+" in version:
        return OFFICIAL if wheel_tag(version) else CUSTOM
    if re.fullmatch(r"\d+\.\d+(\.\d+)?(\.dev\d{8})?", version):
        return OFFICIAL
    if re.fullmatch(r"\d+\.\d+(\.\d+)?(a|b|rc)\d+", version):
        return CUSTOM
    return None


def torch_origin(facts: Facts) -> Origin:
    """Who built the installed torch."""
    version, version_path = _torch_version(facts)
    found = _conda(facts, "torch", version)
    if found:
        origin = _from_conda(*found)
        if origin.distributor:
            return origin
    for i, dist in enumerate(facts.packages.torch_distributions):
        if dist.version and version and dist.version != version:
            continue  # another copy than the one imported
        if dist.conda.channel and dist.conda.channel != "pypi":
            return Origin(
                None, f"conda, {dist.conda.channel}", (f"packages.torch_distributions.{i}.conda",)
            )  # an owner without a family record: older facts; the channel URL is raw
        if (dist.installer or "").lower() in SYSTEM_INSTALLERS or (
            (dist.location or "").startswith("/usr/lib/python3/dist-packages")
            and (dist.installer or "").lower() not in ("pip", "uv", "conda")
        ):
            where = f"installed by {dist.installer}" if dist.installer else f"in {dist.location}"
            return Origin(DISTRO, where, (f"packages.torch_distributions.{i}",))
    conda_version = (facts.platform.conda_packages or {}).get("pytorch")
    if conda_version and same_release(version, conda_version) and not wheel_tag(version):
        return UNKNOWN  # conda installed it, from a channel these facts do not name
    who = of_version(version)
    if who == CUSTOM:
        return Origin(CUSTOM, f"version {version}", (version_path,))
    if who == OFFICIAL:
        return Origin(OFFICIAL, f"a pip wheel, version {version}", (version_path,))
    return UNKNOWN


def package_origin(facts: Facts, name: str) -> Origin:
    """Who built ``name`` (torchvision, torchaudio, a PyG package), or for PyG's wheels the
    distributor of the torch they were built against (PyG builds for PyTorch's own)."""
    dist = facts.packages.distributions.get(name)
    version = dist.version if dist else None
    found = _conda(facts, name, version)
    if found:
        return _from_conda(*found)
    if not version:
        return UNKNOWN
    path = (f"packages.distributions.{name}.version",)
    if name in PYG:
        if PYG_TAG.search(version):
            return Origin(OFFICIAL, f"PyG's wheel {version}, built for PyTorch's own torch", path)
        return UNKNOWN  # untagged: built here from PyPI's source, or unknown
    who = of_version(version)
    if who == OFFICIAL:
        return Origin(OFFICIAL, f"a pip wheel, version {version}", path)
    if who == CUSTOM:
        return Origin(CUSTOM, f"version {version}", path)
    return UNKNOWN


def mixed(torch: Origin, other: Origin) -> bool:
    """Whether two packages come from different distributors (two custom builds may be one
    build tree: not told apart)."""
    if not torch.distributor or not other.distributor:
        return False
    return torch.distributor != other.distributor


def words(origin: Origin) -> str:
    return WORDS.get(origin.distributor or "", "unknown")
