"""Where the tensors of a file committed with the code were saved, read without unpickling.

A `torch.load` without `map_location` fails on a machine without CUDA only for a file that
holds CUDA storages. When the load names a file the scanned tree ships (project.shipped_with),
its storages' locations are read from the pickle's opcodes (probes/child/pickle_scan.py:
decoded, never executed; nothing is imported): a file of CPU tensors, or of no tensors at all,
loads anywhere. sisl/InteractionImitation's scripts load five `intersimple-expert-data-*.pt`
files committed beside them, saved from CPU tensors (its labeller checked them with
pickletools; hundred-and-sixty-eighth blind corpus): the scan flagged five loads there.

Reads are bounded: a regular file only (safeio.open_regular), a zip's `data.pkl` or a legacy
file's first MAX_PICKLE bytes; what cannot be read whole says nothing (None).
"""

from __future__ import annotations

import glob
import os
import struct
import zipfile
import zlib
from functools import lru_cache

from ..probes.child import pickle_scan
from ..safeio import InputError, open_regular, version

MAX_PICKLE = 16 << 20
ZIP_MAGIC = b"PK\x03\x04"
# What a file that is not a readable torch.save archive raises here: zipfile's "File is
# encrypted" (RuntimeError), an unknown compression method (NotImplementedError), a corrupt
# deflate stream (zlib.error), a short header (struct.error, EOFError).
UNREADABLE = (
    InputError, OSError, EOFError, ValueError, RuntimeError, NotImplementedError,
    zipfile.BadZipFile, zlib.error, struct.error, OverflowError,
)  # fmt: skip
# Files a glob of the load's path may name, read (`f"data/{split}.pt"`); more say nothing.
MAX_MATCHES = 16


def saved_locations(path: str) -> frozenset[str] | None:
    """The storage locations ("cpu", "cuda:0") of a torch.save file, an empty set for one that
    holds no tensors, or None when that cannot be known: not a regular file, not a torch file
    (a plain pickle raises "Invalid magic number" in torch.load anyway), a pickle larger than
    MAX_PICKLE, a malformed one."""
    key = version(path)
    return None if key is None else _locations(path, *key)


@lru_cache(maxsize=256)
def _locations(path: str, _mtime: int, _size: int) -> frozenset[str] | None:
    """Keyed by modification time and size too: an edited file is read again."""
    try:
        with open_regular(path) as fh:
            zipped = fh.read(4) == ZIP_MAGIC
            fh.seek(0)
            if zipped:
                facts = pickle_scan.scan_zip(fh, limit=MAX_PICKLE)
            else:
                facts = pickle_scan.scan_legacy(fh, limit=MAX_PICKLE)
                if not facts.get("torch_magic"):
                    return None
    except UNREADABLE:
        return None
    if facts.get("error") or not facts.get("complete"):
        return None
    return frozenset(facts.get("storage_locations", {}))


def committed_locations(found: str, relative: str, pattern: bool) -> frozenset[str] | None:
    """The storage locations of the shipped file `found` that a load's fixed relative path
    names (project.shipped_with), or of every file of its folder that the glob `relative` may
    name; None when one of them cannot be read."""
    files = [found]
    if pattern:
        name = os.path.join(glob.escape(os.path.dirname(found)), os.path.basename(relative))
        files = glob.glob(name) or files
        if len(files) > MAX_MATCHES:
            return None  # the ones not read could hold CUDA tensors
    held: set[str] = set()
    for path in files:
        locations = saved_locations(path)
        if locations is None:
            return None
        held |= locations
    return frozenset(held)


def on_cpu(locations: frozenset[str]) -> bool:
    """No storage saved on an accelerator: torch.load restores every one to the CPU."""
    return all(loc == "cpu" for loc in locations)
