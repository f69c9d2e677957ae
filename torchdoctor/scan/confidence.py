"""How sure a finding is: `high` (the code fails or is unsafe as the message says, wherever it
runs), `medium` (it does on the machines the message names, unless something the scan cannot
see prevents it) or `low` (plausible, but the code looks made for CUDA only, or the pattern is
often on purpose). The default output shows `medium` and up: what a maintainer would act on;
`--confidence low` (or `confidence = "low"` in `[tool.torchdoctor.scan]`) shows the rest."""

from __future__ import annotations

CONFIDENCES = ("low", "medium", "high")
DEFAULT = "medium"
# SARIF `rank` (0-100, how much a result matters): one value per confidence.
SARIF_RANK = {"low": 30.0, "medium": 60.0, "high": 90.0}


def confidence_rank(confidence: str) -> int:
    return CONFIDENCES.index(confidence)


def shown(confidence: str, floor: str) -> bool:
    """Is a finding of this confidence shown when the lowest one asked for is `floor`?"""
    return confidence_rank(confidence) >= confidence_rank(floor)


def lower(confidence: str, to: str) -> str:
    """The lower of the two."""
    return min(confidence, to, key=confidence_rank)
