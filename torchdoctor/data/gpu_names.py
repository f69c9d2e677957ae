"""Compute capability by NVIDIA product name, for reports that name GPUs but not their capability
(collect_env prints `nvidia-smi -L`). A name no pattern matches gets none: never a guess.

Source: NVIDIA's "CUDA GPUs - Compute Capability" page; checked 2026-11. Most specific first;
names shared by two generations (GeForce GTX TITAN X, GTX 7xx) are left out on purpose.
"""

from __future__ import annotations

import re

CHECKED = "2026-11"

CAPABILITY_BY_NAME: tuple[tuple[str, tuple[int, int]], ...] = (
    # Workstation names first: "Quadro RTX 5000" and "RTX 5000 Ada" are not GeForce RTX 50xx.
    (r"Quadro RTX|TITAN RTX", (7, 5)),
    (r"RTX \d+ Ada", (8, 9)),
    (r"RTX PRO \d+ Blackwell|GeForce RTX 50\d0", (12, 0)),
    (r"\bGB10\b", (12, 1)),
    (r"\bB300\b|\bGB300\b", (10, 3)),
    (r"\bB200\b|\bGB200\b", (10, 0)),
    (r"\bH100\b|\bH200\b|\bH800\b|\bH20\b|\bGH200\b", (9, 0)),
    (r"GeForce RTX 40\d0|\bL4\b|\bL40S?\b|\bL20\b", (8, 9)),
    (r"\bA100\b|\bA800\b|\bA30\b", (8, 0)),
    (r"GeForce RTX 30\d0|RTX A\d+\b|\bA10G?\b|\bA16\b|\bA40\b|\bA2\b", (8, 6)),
    (r"GeForce RTX 20\d0|GeForce GTX 16\d0|\bT4\b", (7, 5)),
    (r"TITAN V\b|\bV100\b", (7, 0)),
    (r"GeForce GTX 10\d0|TITAN Xp|\bP40\b|\bP4\b", (6, 1)),
    (r"\bP100\b", (6, 0)),
    (r"GeForce GTX 9[5-8]0|\bM40\b|\bM60\b", (5, 2)),
    (r"\bK80\b", (3, 7)),
)


def capability(name: str) -> tuple[int, int] | None:
    """(major, minor) for a known NVIDIA product name, else None."""
    for pattern, cap in CAPABILITY_BY_NAME:
        if re.search(pattern, name):
            return cap
    return None
