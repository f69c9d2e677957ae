"""Installed distributions: torch's own and its companions."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required

from .base import Str, record


@record
class Distribution(Record):
    version: Annotated[str, Required]
    location: Str
    requires: list[str]


@record
class TorchDistribution(Record):
    version: Str
    location: Str


@record
class CondaPackage(Record):
    """A [conda] line of a pasted report: the channel says who installed it (pypi: pip)."""

    version: Str
    build: Str
    channel: Str


@record
class Packages(Record):
    """The installed distributions (pip's view) and the NVIDIA wheels beside torch."""

    distributions: dict[str, Distribution]
    conda: dict[str, CondaPackage]  # a pasted report's conda list
    torch_distributions: list[TorchDistribution]
    nvidia_wheels: dict[str, str]
    cuda_sizes: dict[str, float]
