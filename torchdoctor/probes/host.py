"""Host facts: CPUs, affinity, memory, cgroup limits, NVIDIA device nodes, selected variables.

Everything reads files under a root directory (default ``/``) so tests can point it at a fake tree.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import psutil

# Variables that change what torch does. Only these are ever recorded: never dump the environment.
TORCH_ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_LAUNCH_BLOCKING",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCH_USE_CUDA_DSA",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTORCH_ENABLE_MPS_FALLBACK",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "TORCH_CUDA_ARCH_LIST",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONNOUSERSITE",
    "CONDA_PREFIX",
    # Which host compiler nvcc runs, and whether its version gate is off (extensions check).
    "CC",
    "CXX",
    "CUDAHOSTCXX",
    "NVCC_CCBIN",
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    # A distributed launch (torchrun, Slurm): hostnames, ports and counts, never credentials.
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "TORCHELASTIC_RUN_ID",
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "NNODES",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "SLURM_JOB_ID",
    "SLURM_NNODES",
    "SLURM_NTASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_GPUS_ON_NODE",
    "SLURM_JOB_GPUS",
)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _exists(path: Path) -> bool | None:
    try:
        return path.exists()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _own_cgroup_paths(root: Path) -> dict[str, str]:
    """Controller -> this process's cgroup path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    for line in (_read(root / "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in parts[1].split(",") if parts[1] else [""]:
                paths[ctrl] = parts[2]
    return paths


def _first(root: Path, candidates: list[str]) -> str | None:
    for rel in candidates:
        value = _read(root / rel)
        if value is not None:
            return value
    return None


# A v1 "no limit" memory value is a huge page-aligned number; anything above this means none.
_UNLIMITED = 1 << 60


def cgroup_limits(root: Path = Path("/")) -> dict[str, Any]:
    """CPU quota (in CPUs) and memory limit (bytes) for cgroup v2 or v1; None where unlimited."""
    cg = root / "sys/fs/cgroup"
    own = _own_cgroup_paths(root)
    if (cg / "cgroup.controllers").exists():
        rel = own.get("", "/").lstrip("/")
        dirs = [f"sys/fs/cgroup/{rel}".rstrip("/"), "sys/fs/cgroup"]
        cpu_max = _first(root, [f"{d}/cpu.max" for d in dirs])
        quota = None
        if cpu_max and not cpu_max.startswith("max"):
            q, _, p = cpu_max.partition(" ")
            if _int(q) and _int(p):
                quota = _int(q) / _int(p)
        mem = _first(root, [f"{d}/memory.max" for d in dirs])
        memory = _int(mem) if mem and mem != "max" else None
        return {"version": 2, "cpu_quota": quota, "memory_limit_bytes": memory}
    if (cg / "cpu").exists() or (cg / "memory").exists():

        def v1(ctrl: str, name: str) -> str | None:
            rel = own.get(ctrl, "/").lstrip("/")
            bases = [f"sys/fs/cgroup/{ctrl}/{rel}".rstrip("/"), f"sys/fs/cgroup/{ctrl}"]
            alt = "cpu,cpuacct"
            bases.append(f"sys/fs/cgroup/{alt}")
            return _first(root, [f"{b}/{name}" for b in bases])

        q, p = _int(v1("cpu", "cpu.cfs_quota_us")), _int(v1("cpu", "cpu.cfs_period_us"))
        quota = q / p if q and p and q > 0 else None
        mem = _int(v1("memory", "memory.limit_in_bytes"))
        memory = mem if mem is not None and mem < _UNLIMITED else None
        return {"version": 1, "cpu_quota": quota, "memory_limit_bytes": memory}
    return {"version": None, "cpu_quota": None, "memory_limit_bytes": None}


def nvidia_nodes(root: Path = Path("/")) -> dict[str, Any]:
    dev = root / "dev"
    try:
        nodes = sorted(p.name for p in dev.iterdir() if p.name.startswith("nvidia"))
    except OSError:
        nodes = []
    return {
        "dev_nodes": nodes,
        "proc_driver_version": _read(root / "proc/driver/nvidia/version"),
        "uvm_loaded": "nvidia_uvm" in (_read(root / "proc/modules") or ""),
    }


def open_files_limit() -> dict[str, Any]:
    """RLIMIT_NOFILE of this process (the shell's, inherited): -1 is unlimited, None unknown
    (Windows has no such limit)."""
    try:
        import resource
    except ImportError:
        return {"soft": None, "hard": None}
    try:
        limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return {"soft": None, "hard": None}
    soft, hard = (-1 if v == resource.RLIM_INFINITY else int(v) for v in limits)
    return {"soft": soft, "hard": hard}


# /sys/bus/pci/devices is walked in name order up to these bounds: a host has a few hundred PCI
# functions at most, and a record never carries more than PCI_MAX_GPUS display controllers.
PCI_MAX_DEVICES = 1024
PCI_MAX_GPUS = 64
DISPLAY_CLASS = "0x03"  # PCI base class 03: VGA (0x0300), 3D (0x0302), other display (0x0380)


def _attribute(path: Path, limit: int = 64) -> str | None:
    """A sysfs attribute: a regular file, read up to ``limit`` bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            return fh.read(limit).decode("ascii", "replace").strip()
    except OSError:
        return None


def _bound_driver(device: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(device / "driver"))
    except OSError:
        return None  # no driver serves the device


def pci_gpus(root: Path = Path("/")) -> list[dict[str, Any]] | None:
    """Display controllers on the PCI bus, with the kernel driver bound to each; None where
    there is no sysfs (macOS, Windows, a locked-down container)."""
    base = root / "sys/bus/pci/devices"
    try:
        names = sorted(os.listdir(base))[:PCI_MAX_DEVICES]
    except OSError:
        return None
    gpus: list[dict[str, Any]] = []
    for name in names:
        device = base / name
        pci_class = _attribute(device / "class")
        if not pci_class or not pci_class.startswith(DISPLAY_CLASS):
            continue
        vendor = _attribute(device / "vendor")
        # amdgpu reports its dedicated memory: small on an APU, GBs on a discrete card.
        vram = _attribute(device / "mem_info_vram_total") if vendor == "0x1002" else None
        gpus.append(
            {
                "address": name[:32],
                "vendor": vendor,
                "device": _attribute(device / "device"),
                "pci_class": pci_class,
                "driver": _bound_driver(device),
                "vram_bytes": _int(vram),
            }
        )
        if len(gpus) >= PCI_MAX_GPUS:
            break
    return gpus


# Kernel options that decide whether GPU peer-to-peer traffic is translated by the IOMMU. Only
# these are kept: the rest of a kernel command line can carry private values.
IOMMU_OPTIONS = ("intel_iommu=", "amd_iommu=", "iommu=", "iommu.passthrough=", "pci=")
CMDLINE_MAX_BYTES = 4096


def iommu(root: Path = Path("/")) -> dict[str, Any]:
    """The IOMMU units the kernel registered and the kernel options that configure them; None
    where unreadable (macOS, Windows, a locked-down /proc)."""
    try:
        with open(root / "proc/cmdline", "rb") as f:
            raw = f.read(CMDLINE_MAX_BYTES).decode(errors="replace")
        options = [w for w in raw.split() if w.startswith(IOMMU_OPTIONS)][:16]
    except OSError:
        options = None
    try:
        units = sorted(p.name for p in (root / "sys/class/iommu").iterdir())[:64]
    except OSError:
        units = None
    return {"cmdline": options, "units": units}


# torch's own libraries, as a libtorch (C++) download or a source build lays them out.
TORCH_OWN_LIBS = ("libtorch_cpu.so", "libtorch.so", "libc10.so")


def torch_libs_on_loader_path(environ: dict[str, str] | None = None) -> list[str]:
    """LD_LIBRARY_PATH directories that hold torch's own libraries (a libtorch for C++ work):
    the loader takes them before the wheel's (pytorch/pytorch#96797, a segfault at import)."""
    environ = os.environ if environ is None else environ
    out = []
    for entry in (environ.get("LD_LIBRARY_PATH") or "").split(os.pathsep)[:64]:
        if entry and any(os.path.isfile(os.path.join(entry, n)) for n in TORCH_OWN_LIBS):
            out.append(entry)
    return out


def selected_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in TORCH_ENV_VARS if k in environ}


def gather(root: Path = Path("/")) -> dict[str, Any]:
    try:
        affinity = len(psutil.Process().cpu_affinity())
    except (AttributeError, psutil.Error, OSError):
        affinity = None  # macOS has no affinity API
    vm = psutil.virtual_memory()
    return {
        "cpu_count_logical": psutil.cpu_count(logical=True),
        "cpu_count_physical": psutil.cpu_count(logical=False),
        "cpu_affinity_count": affinity,
        "memory_total_bytes": vm.total,
        "memory_available_bytes": vm.available,
        "cgroup": cgroup_limits(root),
        "nvidia": nvidia_nodes(root),
        "open_files": open_files_limit(),
        "pci_gpus": pci_gpus(root),
        "dev_kfd": _exists(root / "dev/kfd"),
        "iommu": iommu(root),
        "ld_path_torch_libs": torch_libs_on_loader_path(),
    }
