"""The interpreter and OS: Python, distro, CPU, and modules that shadow torch's."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required, Version

from .base import Bool, Int, Str, record


@record
class Shadow(Record):
    """A torch.py, torch/ or namespace folder that ``import torch`` would find first, or a file
    named like a standard-library module torch imports (kind stdlib)."""

    path: Str
    kind: Str  # module | package | namespace | stdlib
    via: Str
    module: Str  # what it hides when not torch: torchvision, torchaudio


@record
class Cpu(Record):
    model: Str
    isa: list[str] | None  # None: the flags could not be read


@record
class Distro(Record):
    id: Str
    name: Str
    version_id: Str
    pretty_name: Str


@record
class Platform(Record):
    """The OS and the examined interpreter."""

    system: Str
    release: Str
    machine: Str
    python_version: Annotated[str, Required, Version(r"\d+\.\d+", "3.11.7")]
    python_implementation: Str
    python_bits: Int
    executable: Str
    prefix: Str
    base_prefix: Str
    in_venv: Bool
    conda_prefix: Str
    externally_managed: Str  # the EXTERNALLY-MANAGED marker's path (PEP 668)
    ensurepip: Bool
    torch_shadows: list[Shadow] | None  # None: the probe did not look
    wsl: Bool
    libc: Str
    glibc: Str
    distro: Distro
    cpu: Cpu
    jetson: Str
    conda_packages: dict[str, str] | None
    mac_ver: Str
    rosetta: Bool
    vm: Bool  # macOS: kern.hv_vmm_present, running as a virtual machine
    user_site: Str
    user_site_enabled: Bool
    sys_path: list[str] | None  # where it imports from, made absolute ('' is where it ran)
    os: Str  # the OS line of a pasted report (collect_env)
