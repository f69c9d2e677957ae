"""GPUs as the kernel sees them (PCI bus, device nodes), for the reasons NVML and torch cannot
give: an NVIDIA GPU no kernel module serves (a kernel upgraded without the driver rebuilt for
it), the NVIDIA UVM module or its /dev node missing, an AMD GPU beside a torch without ROCm.

Each answer is (why, remedies) for cuda.available; absent facts (older facts files, no sysfs)
mean unknown and give no answer."""

from __future__ import annotations

import re

from torchdoctor.data import compat
from torchdoctor.data import xpu as xpu_data
from torchdoctor.report.result import Remedy

from ..record import Facts
from ..record.host import PciGpu
from .common import grounded, reinstall_torch, torch_version_of

NVIDIA, AMD = "0x10de", "0x1002"
# Drivers that hold a GPU on purpose (passed through to a virtual machine): not a failure here.
PASSTHROUGH = ("vfio-pci", "pci-stub")
# amdgpu's mem_info_vram_total below this is an APU's carve-out of system RAM (512 MiB–2 GiB by
# default), not a discrete card: the ROCm-supported Radeon and Instinct cards have 8 GiB or more.
DISCRETE_VRAM_BYTES = 4 * 1024**3
PYTORCH_SELECTOR = "https://pytorch.org/get-started/locally/"


def _on_bus(facts: Facts, vendor: str) -> list[tuple[int, PciGpu]]:
    return [(i, g) for i, g in enumerate(facts.host.pci_gpus or []) if g.vendor == vendor]


def _linux(facts: Facts) -> bool:
    return facts.platform.system == "Linux" and not facts.platform.wsl


def _kernel(facts: Facts) -> str:
    release = facts.platform.release or ""
    return release if re.fullmatch(r"[\w.+~-]{1,100}", release) else "$(uname -r)"


def _headers_command(facts: Facts, kernel: str) -> str:
    """The package with the running kernel's headers, which DKMS needs to build the module."""
    distro = (facts.platform.distro.id or "").lower()
    if distro in ("fedora", "rhel", "centos", "rocky", "almalinux", "ol", "amzn"):
        return f"sudo dnf install kernel-devel-{kernel} kernel-headers-{kernel}"
    return f"sudo apt install linux-headers-{kernel}"


def unserved_nvidia(facts: Facts) -> tuple[str, list[Remedy]] | None:
    """NVIDIA GPUs on the PCI bus that no NVIDIA kernel module serves, while none is loaded
    (/proc/driver/nvidia/version absent) and NVML finds no driver: on a machine that had a
    working driver, a kernel update without a module built for the new kernel (a runfile
    install without DKMS; GoogleCloudPlatform/compute-gpu-installation#10, nvidia-docker#365)."""
    if not _linux(facts) or facts.nvml.status == "ok" or facts.host.nvidia.proc_driver_version:
        return None
    idle = [(i, g) for i, g in _on_bus(facts, NVIDIA) if g.driver not in ("nvidia", *PASSTHROUGH)]
    if not idle:
        return None
    kernel = _kernel(facts)
    held = sorted({g.driver for _, g in idle if g.driver})
    by = f" (bound to {', '.join(held)} instead)" if held else ""
    why = (
        f"{len(idle)} NVIDIA GPU(s) on the PCI bus ({idle[0][1].address}) but no NVIDIA kernel "
        f"module serves them{by}: no driver is built for the running kernel {kernel}"
    )
    because = grounded(
        facts,
        *(f"host.pci_gpus.{i}.driver" for i, _ in idle),
        "host.nvidia.proc_driver_version",
        "platform.release",
        "nvml.error",
    )
    fix = Remedy(
        f"The NVIDIA module was built for another kernel (usually an automatic kernel update "
        f"after a driver installed without DKMS). Install the headers of the running kernel "
        f"{kernel}, let DKMS rebuild the module (or reinstall the driver with its DKMS option, "
        f"so later kernel updates rebuild it), then reboot.",
        (_headers_command(facts, kernel), "sudo dkms autoinstall", "sudo reboot"),
        because,
    )
    return why, [fix]


def uvm_missing(facts: Facts) -> tuple[str, list[Remedy]] | None:
    """A GPU node (/dev/nvidia0) without /dev/nvidia-uvm: CUDA cannot initialise, NVML and
    nvidia-smi still work. The node is made when something loads nvidia_uvm (the first CUDA
    program run as root, nvidia-modprobe); after a reboot a container or a user without the
    setuid helper finds it missing (NVIDIA/nvidia-docker#288, 89luca89/distrobox#804)."""
    nodes = facts.host.nvidia.dev_nodes
    if not _linux(facts) or not any(re.fullmatch(r"nvidia\d+", n) for n in nodes):
        return None
    if "nvidia-uvm" in nodes:
        return None
    loaded = facts.host.nvidia.uvm_loaded
    state = "the nvidia_uvm module is not loaded" if loaded is False else "its node was not made"
    why = f"/dev/nvidia0 is present but /dev/nvidia-uvm is missing ({state}): CUDA cannot start"
    because = grounded(facts, "host.nvidia.dev_nodes", "host.nvidia.uvm_loaded")
    where = (
        " Inside a container: run it on the host, then restart the container (its device list "
        "was fixed when it started)."
        if facts.container.detected
        else ""
    )
    fix = Remedy(
        "Load the UVM module and make its device node (as root, on the host)." + where + " To "
        "have it at every boot, run the same command from a systemd unit or /etc/rc.local.",
        ("sudo nvidia-modprobe -u -c=0", "sudo modprobe nvidia_uvm"),
        because,
    )
    return why, [fix]


def amd_gpus(facts: Facts) -> list[tuple[int, PciGpu]]:
    """Discrete AMD GPUs amdgpu serves (an APU's small carve-out does not count)."""
    return [
        (i, g)
        for i, g in _on_bus(facts, AMD)
        if g.driver == "amdgpu" and (g.vram_bytes is None or g.vram_bytes >= DISCRETE_VRAM_BYTES)
    ]


def _rocm_variant(facts: Facts) -> tuple[str, str] | None:
    """(release, ROCm index) for this torch's release, else the newest release with one."""
    release = compat.torch_minor(torch_version_of(facts)) or ""
    if release not in compat.ROCM_VARIANTS:
        release = max(compat.ROCM_VARIANTS, key=compat.parse_version)
        current = compat.torch_minor(torch_version_of(facts))
        if current and compat.parse_version(current) > compat.parse_version(release):
            return None  # a newer torch than the table knows: its ROCm index is not known here
    return release, compat.ROCM_VARIANTS[release][-1]


def amd_gpu_unused(facts: Facts) -> tuple[str, list[Remedy]] | None:
    """An AMD GPU (on the PCI bus, or /dev/kfd where the bus could not be read) and no NVIDIA
    GPU, while torch is a CPU or CUDA build: the GPU goes unused; a ROCm build of torch would
    use it as torch.cuda (ROCm/legacy-rocm-build#2354, debpalash/VoiceStudio#124)."""
    if not _linux(facts) or facts.torch.build.variant not in ("cpu", "cuda"):
        return None
    if _on_bus(facts, NVIDIA) or facts.nvml.devices:
        return None
    found = amd_gpus(facts)
    if not found and not (facts.host.pci_gpus is None and facts.host.dev_kfd):
        return None
    what = f"an AMD GPU ({found[0][1].address})" if found else "an AMD GPU (/dev/kfd)"
    why = (
        f"{what} is present but torch is a {facts.torch.build.variant} build, not a ROCm one: "
        "the GPU goes unused"
    )
    because = grounded(
        facts,
        "torch.build.variant",
        *((f"host.pci_gpus.{i}.vendor" for i, _ in found) if found else ("host.dev_kfd",)),
    )
    picked = _rocm_variant(facts)
    if picked:
        release, variant = picked
        ours = compat.torch_minor(torch_version_of(facts))
        fix = reinstall_torch(
            facts,
            variant,
            "A ROCm build of torch uses the AMD GPU through torch.cuda (Linux only; the amdgpu "
            "driver and a GPU ROCm supports are needed).",
            release=None if release == ours else release,
            because=because,
        )
        return why, [fix]
    fix = Remedy(
        "Install a ROCm build of torch (Linux only): pick ROCm on the PyTorch selector "
        f"({PYTORCH_SELECTOR}) and use the index URL it gives.",
        evidence=because,
    )
    return why, [fix]


def intel_discrete(facts: Facts) -> list[tuple[int, str]]:
    """(index in host.pci_gpus, product family) of each discrete Intel GPU (Arc, Data Center GPU
    Flex/Max) on the PCI bus, told by device ID: an integrated one is not listed."""
    found = []
    for i, g in enumerate(facts.host.pci_gpus or []):
        family = xpu_data.discrete_family(g.vendor, g.device)
        if family:
            found.append((i, family))
    return found
