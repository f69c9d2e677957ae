"""The folders a fix may change, listed before it runs, so a restore can take away what the fix
left behind: what reinstalling by version does not remove.

pip stopped half way (Ctrl-C, a kill, a full disk) leaves two kinds of debris:
- its stash folders beside the package (``~orchvision``, ``~orchvision-0.28.0+cu128.dist-info``:
  the old build moved aside, pypa/pip#11849). Their metadata still names the package, so pip
  then lists neither (“Ignoring invalid distribution ~orchvision”) and ``pip freeze`` drops it;
- the new build's files written so far, which no RECORD owns once the old build is back.
Only entries that were not there when the record was made are removed, and only there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import Any

from ..safeio import InputError, read_text_bounded

# The characters pip puts in front of a name for a folder it moves aside (AdjacentTempDirectory).
STASH_LEADING = "-~.=%0123456789"


def top_levels(metadata_location: str | None) -> list[str]:
    """The top-level files and folders a distribution's RECORD lists in its site-packages."""
    if not metadata_location:
        return []
    try:
        text = read_text_bounded(os.path.join(metadata_location, "RECORD"), allow_stdin=False)
    except InputError:
        return []
    tops = set()
    for line in text.splitlines():
        path = line.split(",", 1)[0].strip().replace("\\", "/")
        first = path.split("/", 1)[0]
        if first and first != ".." and not first.endswith(".dist-info"):
            tops.add(first)
    return sorted(tops)


def _files(folder: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [os.path.relpath(os.path.join(root, f), folder) for f in files]
    return sorted(out)


def take(site_dirs: list[str], tops: dict[str, list[str]]) -> dict[str, Any]:
    """``tops``: site-packages folder -> the touched distributions' top-level names there."""
    entries = {}
    for site in site_dirs:
        with contextlib.suppress(OSError):
            entries[site] = sorted(os.listdir(site))
    files = {}
    for site, names in tops.items():
        for name in names:
            path = os.path.join(site, name)
            if os.path.isdir(path):
                files[path] = _files(path)
    return {"entries": entries, "files": files}


def remove_stashes(snapshot: dict[str, Any]) -> list[str]:
    """pip's stash folders that appeared since the snapshot; returns what was removed."""
    removed = []
    for site, before in (snapshot.get("entries") or {}).items():
        try:
            now = os.listdir(site)
        except OSError:
            continue
        for name in sorted(set(now) - set(before)):
            if name[:1] in STASH_LEADING:
                _remove(os.path.join(site, name))
                removed.append(os.path.join(site, name))
    return removed


def remove_strays(snapshot: dict[str, Any]) -> list[str]:
    """Files in the touched folders that were not there before and no longer belong to anything
    (the restore reinstalled the recorded builds first)."""
    removed = []
    for folder, before in (snapshot.get("files") or {}).items():
        if not os.path.isdir(folder):
            continue
        for rel in sorted(set(_files(folder)) - set(before)):
            _remove(os.path.join(folder, rel))
            removed.append(os.path.join(folder, rel))
        _prune_empty(folder)
    return removed


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _prune_empty(folder: str) -> None:
    for root, _dirs, _files_here in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            if root != folder and not os.listdir(root):
                os.rmdir(root)
