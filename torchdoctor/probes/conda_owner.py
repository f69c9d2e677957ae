"""Which conda package owns each torch metadata directory pip sees.

conda's ``pytorch`` package installs torch's own Python metadata (``torch-1.11.0-py3.7.egg-info``
from the pytorch channel, pytorch/pytorch#81654; a ``.dist-info`` whose INSTALLER conda-build
rewrites to "conda" on conda-forge, conda/conda-build conda_build/post.py), so pip lists it as
``torch`` (pytorch/pytorch#12470, #66785). That is one install, not two. What tells them apart is
ownership: conda-meta/<name>-<version>-<build>.json lists, under "files", every file the package
put in the environment as a path relative to the prefix (conda/conda conda/models/records.py,
PrefixRecord.files). A torch metadata directory whose files are listed there is conda's.

Runs in torchdoctor's own process (not the probe child), so conda-meta is read through safeio:
regular files only, size-capped, JSON validated.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..safeio import InputError, read_bounded

# conda packages that can carry torch's Python metadata: "pytorch" on the pytorch and conda-forge
# channels, "torch" on some mirrors, "libtorch" (conda-forge's split of the C++ part).
OWNER_NAMES = ("pytorch", "torch", "libtorch")
# A conda-meta record lists every file of the package (tens of thousands for CUDA builds of
# pytorch, with checksums in paths_data): a few MB; anything past this is not a record.
RECORD_LIMIT = 64 * 1024 * 1024


def annotate(packages: dict[str, Any], platform: dict[str, Any]) -> dict[str, Any]:
    """``packages`` with each torch distribution's conda owner (or none) recorded."""
    dists = packages.get("torch_distributions")
    if not isinstance(dists, list) or not dists:
        return packages
    prefixes = _prefixes(platform)
    records: dict[str, list[dict[str, Any]] | None] = {}
    out = []
    for dist in dists:
        if isinstance(dist, dict) and isinstance(dist.get("metadata"), str):
            dist = {**dist, **_owner(dist["metadata"], prefixes, records)}
        out.append(dist)
    return {**packages, "torch_distributions": out}


def _prefixes(platform: dict[str, Any]) -> list[str]:
    """The environments a metadata directory may belong to: the interpreter's and conda's."""
    found = [platform.get("prefix"), platform.get("conda_prefix")]
    return [os.path.abspath(p) for p in dict.fromkeys(found) if isinstance(p, str) and p]


def _owner(
    metadata: str, prefixes: list[str], records: dict[str, list[dict[str, Any]] | None]
) -> dict[str, Any]:
    """{conda: the owning record's fields, conda_checked}; unchecked when a record was unreadable."""
    checked = True
    path = os.path.abspath(metadata)
    for prefix in prefixes:
        if not path.startswith(prefix.rstrip(os.sep) + os.sep):
            continue
        if prefix not in records:
            records[prefix] = owner_records(prefix)
        if records[prefix] is None:
            checked = False
            continue
        inside = os.path.relpath(path, prefix).replace(os.sep, "/") + "/"
        for record in records[prefix]:
            if any(f.startswith(inside) for f in record["files"]):
                return {"conda": _fields(record), "conda_checked": True}
    return {"conda_checked": checked}  # no "conda": no package of conda's lists these files


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in ("name", "version", "build", "channel", "record")}


def owner_records(prefix: str) -> list[dict[str, Any]] | None:
    """The conda-meta records of ``prefix`` that may own torch's metadata ([] when the prefix is
    no conda environment); None when one of them could not be read whole."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        names = sorted(os.listdir(meta))
    except OSError:
        return []
    out = []
    for name in names:
        # <name>-<version>-<build>.json: the name may hold '-', version and build may not
        if not name.endswith(".json") or name[:-5].rsplit("-", 2)[0] not in OWNER_NAMES:
            continue
        record = _read_record(os.path.join(meta, name))
        if record is None:
            return None
        out.append(record)
    return out


def _read_record(path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(read_bounded(path, RECORD_LIMIT, allow_stdin=False))
    except (InputError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    keys = ("name", "version", "build", "channel")
    return {
        **{k: data[k] for k in keys if isinstance(data.get(k), str)},
        "files": files,
        "record": path,
    }
