"""A CPU build of torch that conda installed, on a machine with NVIDIA GPUs: the fix goes through
conda (a pip command would put a second torch beside conda's), and conda's `cpuonly` package
must go first, or the solver keeps choosing the CPU build (pytorch/pytorch#101801,
ai4d-iasc/trixie#73, pytorch/pytorch#23778)."""

from __future__ import annotations

from torchdoctor.data import compat
from torchdoctor.report.result import Remedy

from ..record import Facts
from .common import grounded, wheel_evidence, wheel_for
from .import_errors import conda_torch

# The pytorch channel's last release (it stopped publishing after 2.5) and the first whose CUDA
# builds depend on `pytorch-cuda` rather than `cudatoolkit` (pytorch.org, previous versions).
LAST_CONDA_RELEASE = (2, 5)
FIRST_PYTORCH_CUDA = (1, 13)


def _conda_version(facts: Facts) -> str | None:
    own = facts.packages.conda.get("pytorch")
    return (own and own.version) or (facts.platform.conda_packages or {}).get("pytorch")


def _has_cpuonly(facts: Facts) -> bool:
    return "cpuonly" in facts.packages.conda or "cpuonly" in (facts.platform.conda_packages or {})


def cpu_build_fixes(facts: Facts, because: tuple[str, ...]) -> list[Remedy]:
    """The conda commands that swap conda's CPU pytorch for its CUDA build; [] when conda did
    not install torch, or no CUDA build on the pytorch channel fits this driver."""
    version = _conda_version(facts)
    choice = wheel_for(facts) if version and conda_torch(facts) else None
    release = compat.parse_version(version)[:2] if version else ()
    if not choice or not release or release > LAST_CONDA_RELEASE:
        return []
    digits = choice.variant.removeprefix("cu")
    cuda = f"{digits[:-1]}.{digits[-1]}"
    companion = "pytorch-cuda" if release >= FIRST_PYTORCH_CUDA else "cudatoolkit"
    install = f"conda install 'pytorch={version}=*cuda*' {companion}={cuda} -c pytorch -c nvidia"
    seen = (
        *because,
        *grounded(
            facts,
            "platform.conda_packages.pytorch",
            "platform.conda_packages.cpuonly",
            "packages.conda.pytorch.build",
            "packages.conda.cpuonly.version",
        ),
        *wheel_evidence(facts),
    )
    if _has_cpuonly(facts):
        text = (
            f"conda installed its CPU build of pytorch {version}, held there by the `cpuonly` "
            f"package: remove both, then install the CUDA {cuda} build (a pip command would put "
            "a second torch beside conda's)."
        )
        commands = ("conda uninstall pytorch cpuonly", install)
    else:
        text = (
            f"conda's solver picked its CPU build of pytorch {version}: ask for the CUDA {cuda} "
            "build by its build string (a pip command would put a second torch beside conda's)."
        )
        commands = (install,)
    return [Remedy(text, commands, seen)]
