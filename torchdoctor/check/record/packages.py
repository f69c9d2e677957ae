"""Installed distributions: torch's own and its companions."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required

from .base import Bool, Str, record


@record
class Distribution(Record):
    version: Annotated[str, Required]
    location: Str
    requires: list[str]


@record
class CondaOwner(Record):
    """The conda package whose conda-meta record lists a torch metadata directory's files (conda's
    PrefixRecord "files": paths relative to the prefix; conda/conda conda/models/records.py)."""

    name: Str  # pytorch (pytorch and conda-forge channels), torch, libtorch
    version: Str
    build: Str
    channel: Str  # "pypi": conda's note of a pip install, not conda's own files
    record: Str  # the conda-meta JSON file it was read from


@record
class TorchDistribution(Record):
    """One torch metadata directory pip sees. conda's ``pytorch`` package carries one too (pip
    lists it as torch; pytorch/pytorch#12470), so ``conda`` says who owns it."""

    version: Str
    location: Str
    metadata: Str  # the torch-*.dist-info or torch-*.egg-info directory
    installer: Str  # its INSTALLER file's first line (pip, conda, uv); None: no such file
    conda: CondaOwner  # empty: no conda package lists its files (or not looked: conda_checked)
    conda_checked: Bool  # conda-meta was read for it; None (older facts): ownership unknown
    # torch/lib libraries its RECORD does not list (None: not told: no RECORD, conda, egg-info)
    leftover_libs: list[str] | None


@record
class CondaPackage(Record):
    """A conda package of torch's family: a [conda] line of a pasted report, or live, its
    conda-meta record (name, version, build, channel, url as conda writes them; conda/conda
    conda/models/records.py). The channel says who built it (pypi: pip installed it)."""

    version: Str
    build: Str
    channel: Str  # its name: pytorch, conda-forge, pkgs/main (Anaconda's defaults), pypi
    url: Str  # live: the package file it was installed from


@record
class Packages(Record):
    """The installed distributions (pip's view) and the NVIDIA wheels beside torch."""

    distributions: dict[str, Distribution]
    conda: dict[str, CondaPackage]  # conda's records of torch's family (live or pasted)
    torch_distributions: list[TorchDistribution]
    nvidia_wheels: dict[str, str]
    nvidia_wheel_locations: dict[str, str]  # the site-packages each nvidia-* wheel lies in
    cuda_sizes: dict[str, float]
