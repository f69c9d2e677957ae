"""Code a project carries from another: its device findings are `low`, even with --portable.

A copy under `third_party/` or `vendor/` is its authors' code, kept as they wrote it. Its
`.cuda()` lines are their choice, and a fix belongs upstream, not in the project that vendored
it. In the blind corpora of sets 3-224 (benchmarks/scan_blind*), crash labels in such folders
were 1 pitfall a maintainer would change against 271 lookalikes, in 12 repositories (pyslam's
`thirdparty/`, 3D-Diffusion-Policy's and LLaMA-Factory's `third_party/`, threestudio's
`extern/`, Qwen3-TTS-Demo's `vendor/`). `torch.load` without `weights_only` keeps its
confidence there: the file it loads is as untrusted as anywhere.

Code a project keeps but no longer runs is judged the same way: a folder named `legacy/`,
`archive/`, `old/`, `deprecated/`, `backup/` (or `old_version/`, `archived_methods/`). Over the
blind sets 3-356, crash labels in such folders were 4 pitfalls (in one repository) against 155
lookalikes in 22, perf labels none against 281; security labels were real in 35 of 82 (13
repositories), and keep their confidence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
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

# Folder names for code kept but no longer run: the names alone, and the longer forms the
# corpora showed (`old_version`, `old_python_files`, `archived_methods`, `archive_legacy`); not
# `legacy_api/` or `backup_and_restore/`, which name what the code does; `trash/`
# (nmt-continual-learning's, blind set 411: "code the project no longer runs")
ARCHIVED_DIR = re.compile(
    r"legacy|archived?|archives|_?old|deprecated|backups?|bak|unused|obsolete|trash"
    r"|old[_-]\w+|archived[_-]\w+|archive[_-](?:legacy|old)",
    re.I,
)

# A cheap first look at each path (every name above holds one of these): most trees have none.
_HINT = re.compile(
    "third|3rdparty|vendor|extern|legacy|archive|old|deprecated|backup|bak|unused|obsolete|trash",
    re.I,
)


def _vendored_dir(part: str) -> bool:
    return part.lower() in VENDORED_DIRS


def _kept_apart(part: str) -> bool:
    return _vendored_dir(part) or ARCHIVED_DIR.fullmatch(part) is not None


def vendored_folder(relative: PurePath) -> str | None:
    """The vendored (else archived) folder a file is in, by its path below the project's
    folder; None if in none. Another project's code kept in an old folder is still another
    project's (`legacy/third_party/`): --fix leaves it alone."""
    folders = relative.parts[:-1]
    for kept in (_vendored_dir, _kept_apart):
        for i, part in enumerate(folders):
            if kept(part):
                return "/".join(folders[: i + 1])
    return None


def archived(folder: str) -> bool:
    """Is this folder of vendored_folder's one of old code, not another project's?"""
    return ARCHIVED_DIR.fullmatch(PurePath(folder).name) is not None


def vendored_files(files: Iterable[str], roots: Iterable[str], cwd: str | None) -> dict[str, str]:
    """{file: its vendored folder} of the scanned files in one. A file is judged by its real
    path (a link in `3rdparty/` to the project's own `src/` file is not vendored code) below the
    deepest of the current folder and the folders named on the command line that holds it: the
    folders above are the user's (a project kept in ~/vendor/ is no vendored code), and a folder
    the user names (`scan third_party/lib`) is judged as any other. Files named one by one, as
    pre-commit passes them, are judged below the current folder, the repository's root there."""
    candidates = [
        f for f in files if _HINT.search(f) and any(map(_kept_apart, PurePath(f).parts[:-1]))
    ]
    if not candidates:  # most trees: not one path to resolve
        return {}
    bases = [os.path.realpath(r) for r in [cwd, *roots] if r and os.path.isdir(r)]
    found = {}
    for f in candidates:
        real = os.path.realpath(f)
        holding = [b for b in bases if real.startswith(os.path.join(b, ""))]
        if holding and (
            folder := vendored_folder(PurePath(real).relative_to(max(holding, key=len)))
        ):
            found[f] = folder
    return found


# Rules whose proof is the tree's (a committed checkpoint that holds GPU tensors), not one
# file's reasoning (TD003 given the file's own CPU pick, or in the `else:` of a test for several
# GPUs), which is its authors' as the rest of their device code is
TREE_PROVEN = frozenset(["TD101", "TD103"])


def lowered(f: Finding, folder: str) -> Finding:
    """A finding of a vendored file at the confidence such code earns; one the tree proves (a
    committed checkpoint that holds GPU tensors) keeps its confidence and its evidence."""
    if f.rule not in PORTABILITY or f.confidence == "low" or (f.proven and f.rule in TREE_PROVEN):
        return f
    why = (
        f"archived code ({folder}/): a folder of code its project keeps but no longer runs"
        if archived(folder)
        else f"vendored code ({folder}/): its device choices are its authors', and a fix belongs upstream"
    )
    return replace(f, confidence="low", grounds=why)


def not_edited(f: Finding, folder: str | None) -> str | None:
    """Why --fix leaves a device finding of vendored code alone, even at --confidence low."""
    if folder is None or f.rule not in PORTABILITY or archived(folder):
        return None  # archived code is the project's own: --fix may edit it
    return f"vendored code ({folder}/): not edited, its fix belongs upstream"
