"""Confidence calibrated on code nobody here had seen.

The rules' own reasoning gives each finding a confidence. Twenty-four blind corpora (sets 3
to 26 of `benchmarks/`, 2026-11-26: 192 public repositories, their pitfalls listed by someone
who had not seen the scan's output, each set scored once) measured what that reasoning is
worth: of the findings the default output showed, `torch.load` without `weights_only` was
real 331 times in 348, and every other rule together about one time in five. Most of the
false ones are correct code made for CUDA only: the scan cannot tell a project that must run
on a Mac from one that never will, and its maintainers would not change those lines.

So a finding of a class measured below `BAR` is shown only at `--confidence low`, unless the
project says its code must run without CUDA (`--portable`, or `portable = true` in
`[tool.torchdoctor.scan]`), which turns the device rules back to their own confidence. A
class is a rule and whether the file itself picks the CPU where CUDA is absent: `.cuda()` in
such a file contradicts its own author (9 real in 10), elsewhere it is usually on purpose.
Recompute `MEASURED` with `python benchmarks/scan_calibration.py`.
"""

from __future__ import annotations

from dataclasses import replace

from .cuda_only import DEVICE_RULES
from .model import Finding

SOURCE = "blind corpora 3-26 (docs/scan-precision.md), 2026-11-26"
# (rule, the file falls back to the CPU): (real, not real), default output, first scorings
MEASURED: dict[tuple[str, bool], tuple[int, int]] = {
    ("TD001", False): (29, 108),
    ("TD001", True): (9, 1),
    ("TD002", False): (2, 40),
    ("TD002", True): (0, 3),
    ("TD003", False): (3, 26),
    ("TD003", True): (2, 2),
    ("TD005", False): (8, 27),
    ("TD005", True): (5, 3),
    ("TD101", False): (1, 25),
    ("TD101", True): (22, 21),
    ("TD102", False): (235, 10),
    ("TD102", True): (96, 7),
    ("TD103", False): (0, 1),
    ("TD201", False): (0, 6),
    ("TD301", False): (0, 2),
    ("TD301", True): (1, 3),
    ("TD302", False): (0, 5),
    ("TD302", True): (0, 4),
    ("TD304", True): (0, 1),
    ("TD401", False): (0, 7),
    ("TD402", False): (0, 31),
    ("TD403", False): (0, 3),
    ("TD501", False): (2, 7),
    ("TD501", True): (0, 4),
    ("TD502", False): (0, 14),
}
BAR = 0.75  # at least three real findings in four, to be shown by default
ENOUGH = 5  # fewer measured findings than this say nothing: the rule's own reasoning stands
# Rules whose false findings were code made for CUDA only: `--portable` gives them back.
PORTABILITY = DEVICE_RULES | frozenset(["TD301", "TD302", "TD303"])
_WHERE = {True: " in files with a CPU fallback", False: " in files without a CPU fallback"}


def measured(rule: str, fallback: bool) -> tuple[int, int] | None:
    """The class's (real, not real); the rule's when the class has too few; else None."""
    own = MEASURED.get((rule, fallback), (0, 0))
    if sum(own) >= ENOUGH:
        return own
    other = MEASURED.get((rule, not fallback), (0, 0))
    pooled = (own[0] + other[0], own[1] + other[1])
    return pooled if sum(pooled) >= ENOUGH else None


def below_bar(rule: str, fallback: bool, portable: bool) -> str | None:
    """Why a finding of this class is low, when measured below the bar; None when it is not."""
    if portable and rule in PORTABILITY:
        return None
    m = measured(rule, fallback)
    if m is None or m[0] >= BAR * sum(m):
        return None
    own = sum(MEASURED.get((rule, fallback), (0, 0))) >= ENOUGH  # else the rule's, pooled
    where = _WHERE[fallback] if own else ""
    why = f"{m[0]} of {sum(m)} {rule} findings{where} were real on code labelled blind ({SOURCE})"
    if rule in PORTABILITY:
        why += "; --portable if this code must run without CUDA"
    return why


def calibrated(f: Finding, fallback: bool, portable: bool) -> Finding:
    """The finding at the confidence its class earned; its own grounds kept when already low."""
    if f.confidence == "low":
        return f
    why = below_bar(f.rule, fallback, portable)
    return replace(f, confidence="low", grounds=why) if why else f
