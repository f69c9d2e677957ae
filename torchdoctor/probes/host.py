"""Host facts: CPUs, affinity, memory, cgroup limits, NVIDIA device nodes, selected variables.

Everything reads files under a root directory (default ``/``) so tests can point it at a fake tree.
"""

from __future__ import annotations

import os
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
    }
