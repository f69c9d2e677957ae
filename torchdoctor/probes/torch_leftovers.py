"""Library files in torch/lib that the installed torch did not put there.

An install over an older torch that was not fully removed (a failed uninstall, a copy laid over
another, setup.py install beside a wheel) can leave the older release's libraries beside the new
ones: pytorch/pytorch#10234 had torch 0.4's ``libtorch.so.1`` next to the new build's, and the
loader mixed the two (``undefined symbol: _ZTIN2at4TypeE``). A wheel's RECORD lists every file it
installed, so a torch library in torch/lib that RECORD does not list is a leftover.

Only libraries named like torch's own (libtorch*, libc10*, libcaffe2*, libshm*, and their .dll /
.dylib forms) are reported: other files in torch/lib (a DLL copied there by hand on Windows) are
not torch's to judge. A metadata directory whose RECORD lists nothing under torch/lib (conda's,
an egg-info) is not judged. Runs in torchdoctor's own process; reads are bounded.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..safeio import InputError, read_bounded

# torch 2.x's RECORD is about 1.5 MB (some 20,000 files); a source build's can be larger.
RECORD_LIMIT = 32 * 1024 * 1024
TORCH_OWN = re.compile(
    r"^(?:lib)?(?:torch|c10|caffe2|shm)\w*\.(?:so(?:\.\d+)*|\d+\.dylib|dylib|dll)$"
)
SHOWN = 20


def annotate(packages: dict[str, Any]) -> dict[str, Any]:
    """``packages`` with ``leftover_libs`` on each torch distribution whose RECORD could be read."""
    dists = packages.get("torch_distributions")
    if not isinstance(dists, list) or not dists:
        return packages
    out = []
    for dist in dists:
        if isinstance(dist, dict):
            found = leftovers(dist.get("metadata"), dist.get("location"))
            if found is not None:
                dist = {**dist, "leftover_libs": found}
        out.append(dist)
    return {**packages, "torch_distributions": out}


def leftovers(metadata: Any, location: Any) -> list[str] | None:
    """The torch libraries in ``location``/torch/lib that ``metadata``'s RECORD does not list;
    None when that cannot be told (no RECORD, or one that lists nothing under torch/lib)."""
    if not isinstance(metadata, str) or not isinstance(location, str):
        return None
    try:
        record = read_bounded(os.path.join(metadata, "RECORD"), RECORD_LIMIT, allow_stdin=False)
    except InputError:
        return None
    listed = set()
    for line in record.decode("utf-8", "replace").splitlines():
        path = line.rsplit(",", 2)[0].replace("\\", "/")
        if path.startswith("torch/lib/"):
            listed.add(path[len("torch/lib/") :])
    if not listed:
        return None
    try:
        present = sorted(os.listdir(os.path.join(location, "torch", "lib")))
    except OSError:
        return None
    return [n for n in present if TORCH_OWN.match(n) and n not in listed][:SHOWN]
