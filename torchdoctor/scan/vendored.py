"""Code a project carries from another: its device findings are `low`, even with --portable.

A copy under `third_party/` or `vendor/` is its authors' code, kept as they wrote it. Its
`.cuda()` lines are their choice, and a fix belongs upstream, not in the project that vendored
it. In the blind corpora of sets 3-224 (benchmarks/scan_blind*), crash labels in such folders
were 1 pitfall a maintainer would change against 271 lookalikes, in 12 repositories (pyslam's
`thirdparty/`, 3D-Diffusion-Policy's and LLaMA-Factory's `third_party/`, threestudio's
`extern/`, Qwen3-TTS-Demo's `vendor/`). `torch.load` without `weights_only` keeps its
confidence there: the file it loads is as untrusted as anywhere.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from .calibration import PORTABILITY
from .model import Finding

# Folder names that hold another project's code by convention (git submodules, pip's own
# `_vendor`); `external/` is left out: in the corpora it was as often the project's own code.
VENDORED_DIRS = frozenset(
    {"third_party", "thirdparty", "third-party", "3rdparty", "vendor", "vendored", "_vendor"}
    | {"extern", "externals"}
)


def vendored_folder(relative: PurePath) -> str | None:
    """The vendored folder a file is in, by its path below the scanned folder (the folders above
    it are the user's: a project kept in ~/vendor/ is not vendored code); None if in none."""
    folders = relative.parts[:-1]
    for i, part in enumerate(folders):
        if part.lower() in VENDORED_DIRS:
            return "/".join(folders[: i + 1])
    return None


def lowered(f: Finding, folder: str) -> Finding:
    """A finding of a vendored file at the confidence such code earns."""
    if f.rule not in PORTABILITY or f.confidence == "low":
        return f
    why = f"vendored code ({folder}/): its device choices are its authors', and a fix belongs upstream"
    return replace(f, confidence="low", grounds=why)
