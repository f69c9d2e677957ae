"""Who builds torch, and which conda channel is whose.

A compiled package links against one torch build's C++ symbols. Builds of the same release from
different distributors differ in them (their compilers, C++ ABI, patches), so torchaudio from the
pytorch channel fails to load under Anaconda's or conda-forge's pytorch (pytorch/audio#3335), and
PyG's wheels, built against the official torch, fail under conda-forge's pytorch
(rusty1s/pytorch_scatter#470) and NGC's build (rusty1s/pytorch_scatter#462):
``undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb``.
"""

from __future__ import annotations

CHECKED = "2026-11-26"

OFFICIAL = "official"  # PyTorch's wheels (PyPI, download.pytorch.org) and conda channels
CONDA_FORGE = "conda-forge"
ANACONDA = "anaconda"  # Anaconda's defaults channel (pkgs/main)
CONDA_OTHER = (
    "conda"  # a conda build whose channel the facts do not name, not the pytorch channel's
)
CUSTOM = "custom"  # a source or vendor build: NGC containers, Jetson wheels, a local build
DISTRO = "distro"  # the operating system's package (Debian's python3-torch, Fedora's)

# The pytorch channels: releases, nightlies, release candidates (pytorch.org, previous versions;
# anaconda.org/pytorch-test and /pytorch-nightly list torchaudio builds, seen 2026-11).
OFFICIAL_CHANNELS = ("pytorch", "pytorch-nightly", "pytorch-test", "pytorch-lts")
# PyG's own channel builds its packages against the pytorch channel's pytorch (PyG's install
# notes 2.0.3: `conda install pyg -c pyg` beside pytorch from -c pytorch).
OFFICIAL_TARGET_CHANNELS = ("pyg", "rusty1s")
# Anaconda's defaults, as conda list (empty column), a record ("pkgs/main") or a mirror name it.
ANACONDA_CHANNELS = ("pkgs/main", "pkgs/free", "pkgs/r", "defaults", "anaconda", "main")

# The first conda-forge release of each companion that is not there for every torch: conda-forge's
# torchaudio files start at 2.4.1 (anaconda.org/conda-forge/torchaudio/files, seen 2026-11);
# torchvision and torch-scatter (conda-forge::torch-scatter, anaconda.org) are older.
CONDA_FORGE_SINCE = {"torchaudio": "2.4.1"}
# The conda-forge package of each PyG wheel (anaconda.org/conda-forge/torch-scatter).
CONDA_FORGE_PYG = {"torch-scatter": "torch-scatter"}

# Where each companion's source is tagged, for a build against a torch no wheel is made for.
SOURCE = {
    "torchvision": "https://github.com/pytorch/vision.git",
    "torchaudio": "https://github.com/pytorch/audio.git",
    "torchtext": "https://github.com/pytorch/text.git",
}
# pyg-lib has no source distribution on PyPI (pypi.org/project/pyg-lib: wheels only); its
# README installs from git (`pip install ninja wheel` first). The others have sdists on PyPI.
PYG_FROM_GIT = {"pyg-lib": "git+https://github.com/pyg-team/pyg-lib.git"}


def of_channel(channel: str | None) -> str | None:
    """The distributor of a conda channel's builds; None for pip's ("pypi") or none named."""
    if not channel or channel == "pypi":
        return None
    if channel in OFFICIAL_CHANNELS or channel in OFFICIAL_TARGET_CHANNELS:
        return OFFICIAL
    if channel == "conda-forge":
        return CONDA_FORGE
    if channel in ANACONDA_CHANNELS:
        return ANACONDA
    return CUSTOM  # someone's own channel: a build of its own
