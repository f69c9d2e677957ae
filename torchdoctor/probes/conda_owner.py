"""Which conda package owns each torch metadata directory pip sees.

conda's ``pytorch`` package installs torch's own Python metadata (``torch-1.11.0-py3.7.egg-info``
from the pytorch channel, pytorch/pytorch#81654; a ``.dist-info`` whose INSTALLER conda-build
rewrites to "conda" on conda-forge, conda/conda-build conda_build/post.py), so pip lists it as
``torch`` (pytorch/pytorch#12470, #66785). That is one install, not two. What tells them apart is
ownership: conda-meta/<name>-<version>-<build>.json lists, under "files", every file the package
put in the environment as a path relative to the prefix (conda/conda conda/models/records.py,
PrefixRecord.files). A torch metadata directory whose files are listed there is conda's.

The same records say who built torch and what was built against it: "channel" (the channel's
URL with its subdir, https://conda.anaconda.org/conda-forge/linux-64; older conda and mirrors
write other spellings), "url" (the package file's URL), "build" (the build string). Those of torch
and its companions are recorded as ``packages.conda`` (name -> version, build, channel name, url),
the layout a pasted ``conda list`` gives too.

Runs in torchdoctor's own process (not the probe child), so conda-meta is read through safeio:
regular files only, size-capped, JSON validated.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..safeio import InputError, read_bounded

# conda packages that can carry torch's Python metadata: "pytorch" on the pytorch and conda-forge
# channels, "torch" on some mirrors, "libtorch" (conda-forge's split of the C++ part).
OWNER_NAMES = ("pytorch", "torch", "libtorch")
# The conda packages whose channel tells who built torch and what was built against it: torch's
# companions, the packages that pin conda's build variant (cpuonly, pytorch-cuda, pytorch-mutex)
# and PyG's compiled packages (pyg channel: pytorch-scatter ...; conda-forge: torch-scatter ...).
FAMILY = (
    *OWNER_NAMES, "torchvision", "torchaudio", "torchtext", "cpuonly", "pytorch-cuda",
    "pytorch-mutex", "pyg", "pyg-lib", "pytorch-scatter", "pytorch-sparse", "pytorch-cluster",
    "pytorch-spline-conv", "torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv",
)  # fmt: skip
# A channel URL ends in the platform subdir (conda's known subdirs, conda/base/constants.py).
SUBDIRS = re.compile(r"^(?:noarch|(?:linux|osx|win|emscripten|wasi|zos)-[a-z0-9_]+)$")
# A conda-meta record lists every file of the package (tens of thousands for CUDA builds of
# pytorch, with checksums in paths_data): a few MB; anything past this is not a record.
RECORD_LIMIT = 64 * 1024 * 1024


def annotate(packages: dict[str, Any], platform: dict[str, Any]) -> dict[str, Any]:
    """``packages`` with each torch distribution's conda owner (or none) recorded, and the conda
    records of torch's family in the interpreter's environment (``conda``)."""
    scans: dict[str, tuple[list[dict[str, Any]] | None, dict[str, dict[str, Any]]]] = {}
    prefix = platform.get("prefix")
    if isinstance(prefix, str) and prefix and "conda" not in packages:
        scans[os.path.abspath(prefix)] = scan(os.path.abspath(prefix))
        family = scans[os.path.abspath(prefix)][1]
        if family:
            packages = {**packages, "conda": family}
    dists = packages.get("torch_distributions")
    if not isinstance(dists, list) or not dists:
        return packages
    prefixes = _prefixes(platform)
    records = {p: owners for p, (owners, _) in scans.items()}
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
            records[prefix] = scan(prefix)[0]
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
    return scan(prefix)[0]


def scan(prefix: str) -> tuple[list[dict[str, Any]] | None, dict[str, dict[str, Any]]]:
    """(the records that may own torch's metadata, or None when one could not be read whole;
    {name: version, build, channel, url} of torch's family) in ``prefix``'s conda-meta, each
    record read once (conda's pytorch record lists every file: megabytes)."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        names = sorted(os.listdir(meta))
    except OSError:
        return [], {}
    owners: list[dict[str, Any]] | None = []
    family: dict[str, dict[str, Any]] = {}
    for name in names:
        # <name>-<version>-<build>.json: the name may hold '-', version and build may not
        pkg = name[:-5].rsplit("-", 2)[0] if name.endswith(".json") else ""
        if pkg not in FAMILY:
            continue
        data = _load(os.path.join(meta, name))
        fields = _family_fields(data) if data is not None else None
        if fields and fields["name"] == pkg:
            family[pkg] = {k: v for k, v in fields.items() if k != "name"}
        if pkg in OWNER_NAMES and owners is not None:
            record = _owner_record(data, os.path.join(meta, name)) if data is not None else None
            owners = None if record is None else [*owners, record]
    return owners, family


def channel_name(channel: str | None, url: str | None = None) -> str | None:
    """The channel's name from a record's "channel" or, without one, its package "url":
    https://conda.anaconda.org/conda-forge/linux-64 -> conda-forge; a mirror's
    .../anaconda/cloud/pytorch/linux-64 -> pytorch; https://repo.anaconda.com/pkgs/main/linux-64
    -> pkgs/main (Anaconda's defaults); a bare name ("pytorch", "pypi") stays as it is."""
    text = channel if isinstance(channel, str) and channel else url
    if not isinstance(text, str) or not text:
        return None
    if text == url and text.rsplit("/", 1)[-1].endswith((".conda", ".tar.bz2")):
        text = text.rsplit("/", 1)[0]  # the package file's folder
    parts = [p for p in re.sub(r"^[a-z]+://[^/]*", "", text).split("/") if p]
    if parts and SUBDIRS.match(parts[-1]):
        parts.pop()
    if not parts:
        return None
    if len(parts) >= 2 and parts[-2] == "pkgs":  # Anaconda's defaults: pkgs/main, pkgs/r ...
        return f"pkgs/{parts[-1]}"
    return parts[-1][:100]


def _family_fields(data: dict[str, Any]) -> dict[str, Any] | None:
    """name, version, build, channel (its name), url of a record; None without name and version."""
    if not all(isinstance(data.get(k), str) and data[k] for k in ("name", "version")):
        return None
    url = data.get("url") if isinstance(data.get("url"), str) else None
    out = {
        "name": data["name"],
        "version": data["version"][:100],
        "build": data["build"][:200] if isinstance(data.get("build"), str) else None,
        "channel": channel_name(data.get("channel"), url),
        "url": url[:1000] if url else None,
    }
    return {k: v for k, v in out.items() if v is not None}


def _load(path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(read_bounded(path, RECORD_LIMIT, allow_stdin=False))
    except (InputError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _owner_record(data: dict[str, Any], path: str) -> dict[str, Any] | None:
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    keys = ("name", "version", "build", "channel")
    return {
        **{k: data[k] for k in keys if isinstance(data.get(k), str)},
        "files": files,
        "record": path,
    }
