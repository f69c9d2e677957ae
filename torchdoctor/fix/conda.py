"""A conda environment whose torch came from conda is changed with conda, not pip.

pip installing over conda's pytorch leaves two installers owning one set of files (the
platform.conda-and-pip finding). A remedy's pip command for the torch family is translated to the
conda install of the same exact versions from the channel conda's own record names, the CUDA
variant as a build-string pattern (conda-forge's builds are named ``cuda128_…`` and ``cpu_…``).
"""

from __future__ import annotations

import re
from typing import Any

from .commands import PackageCommand, variant_of_command

CONDA_NAMES = {"torch": "pytorch"}
FAMILY = ("torch", "torchvision", "torchaudio")


def torch_from_conda(conda: dict[str, dict[str, Any]], installer: str | None) -> bool:
    """conda's record holds pytorch, or pip reports conda as torch's installer."""
    return "pytorch" in conda or installer == "conda"


def channel_name(url: str | None) -> str | None:
    """``https://conda.anaconda.org/conda-forge/linux-64`` -> ``conda-forge``."""
    if not url:
        return None
    m = re.search(r"anaconda\.org/([^/]+)", url)
    return m.group(1) if m else url.rstrip("/").rsplit("/", 1)[0] if "/" in url else url


def _build_glob(variant: str | None) -> str:
    if not variant:
        return ""
    if variant == "cpu":
        return "=*cpu*"
    m = re.fullmatch(r"cu(\d+)", variant)
    return f"=cuda{m.group(1)}*" if m else ""


def translate(
    cmd: PackageCommand, conda_exe: str, prefix: str, conda: dict[str, dict[str, Any]]
) -> PackageCommand | str:
    """The conda command for a pip command on the torch family, or why there is none."""
    if cmd.tool != "pip" or not set(cmd.names) & set(FAMILY):
        return cmd
    if set(cmd.names) - set(FAMILY):
        return "it mixes conda's torch packages with others pip would install"
    channel = channel_name((conda.get("pytorch") or {}).get("channel"))
    if cmd.action == "uninstall":
        names = [CONDA_NAMES.get(n, n) for n in cmd.names]
        return PackageCommand(
            "conda",
            "remove",
            (conda_exe, "remove", "--yes", "--prefix", prefix, *names),
            tuple(names),
        )
    build = _build_glob(variant_of_command(cmd))
    specs = []
    for req, name in zip(cmd.requirements, cmd.names, strict=False):
        m = re.search(r"==([0-9][0-9.]*)", req)
        if not m:
            return f"{req!r} names no exact version to ask conda for"
        specs.append(f"{CONDA_NAMES.get(name, name)}=={m.group(1)}{build}")
    argv = [conda_exe, "install", "--yes", "--prefix", prefix]
    if channel:
        argv += ["--override-channels", "--channel", channel]
    return PackageCommand("conda", "install", (*argv, *specs), tuple(specs))
