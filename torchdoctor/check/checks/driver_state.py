"""Driver states that look like "no driver" but are not: CUDA forward-compatibility libraries on
the wrong GPU (error 804) or of the wrong version (error 803), and a kernel module that differs
from the user-space library after a driver update without a reboot (NVML "Driver/library version
mismatch"). Each has a cheap, exact fix; "install a driver" is the wrong one."""

from __future__ import annotations

import os

from torchdoctor.data import compat
from torchdoctor.report import evidence
from torchdoctor.report.result import Remedy

from ..record import Facts
from ..record.torch import LoadedLib
from .common import cite

NVML_MISMATCH = ("version mismatch", "LibRmVersionMismatch")
# cudaErrorCompatNotSupportedOnDevice / cudaErrorSystemDriverMismatch as torch prints them.
ERROR_804 = ("Error 804", "forward compatibility was attempted on non supported HW")
ERROR_803 = ("Error 803", "unsupported display driver / cuda driver combination")
# cudaErrorSystemNotReady: on an NVSwitch machine, the fabric was never set up (gpustack#1254).
ERROR_802 = ("Error 802", "system not yet initialized")
# NVML's NVML_ERROR_UNKNOWN, as nvidia-smi and pynvml word it.
NVML_UNKNOWN = ("Unknown Error", "NVMLError_Unknown")


def compat_libcuda(facts: Facts) -> LoadedLib | None:
    """The libcuda torch loaded from a forward-compatibility directory (…/cuda/compat, cuda-compat)."""
    for lib in facts.torch.libs.loaded:
        path = lib.realpath or lib.path or ""
        if lib.component == "cuda_driver" and any("compat" in p for p in path.split(os.sep)):
            return lib
    return None


def compat_dirs(facts: Facts) -> list[str]:
    """LD_LIBRARY_PATH entries that are CUDA forward-compatibility directories."""
    ld = facts.env.get("LD_LIBRARY_PATH", "")
    return [d for d in ld.split(":") if d and any("compat" in p for p in d.split(os.sep))]


def kernel_driver(facts: Facts) -> str | None:
    """The loaded kernel module's version from /proc/driver/nvidia/version."""
    text = facts.host.nvidia.proc_driver_version or ""
    for word in text.replace("  ", " ").split():
        if compat.parse_version(word)[:1] and word[0].isdigit() and "." in word:
            return word
    return None


def warning_paths(facts: Facts, needles: tuple[str, ...]) -> tuple[str, ...]:
    """``torch.cuda.warnings.N`` for each of torch's warnings that quotes one of ``needles``."""
    return cite(
        facts,
        *(
            f"torch.cuda.warnings.{i}"
            for i, w in enumerate(facts.torch.cuda.warnings)
            if any(n in w for n in needles)
        ),
    )


def compat_lib_path(facts: Facts) -> tuple[str, ...]:
    """``torch.libs.loaded.N`` of the forward-compatibility libcuda torch loaded, if any."""
    lib = compat_libcuda(facts)
    return (f"torch.libs.loaded.{facts.torch.libs.loaded.index(lib)}",) if lib else ()


def drop_compat_fix(facts: Facts, because: tuple[str, ...]) -> Remedy:
    """Drop the compat directory from LD_LIBRARY_PATH, where that is how it got in; otherwise
    the image's loader configuration put it there and no variable is touched."""
    bad = compat_dirs(facts)
    max_cuda = facts.nvml.cuda_driver_version
    fits = f"{max_cuda // 1000}.{(max_cuda % 1000) // 10}" if max_cuda else "the driver's CUDA"
    text = (
        "CUDA forward compatibility (a container's cuda-compat package, /usr/local/cuda/compat) "
        "works only on data-center GPUs and must match the driver."
    )
    ev = (*because, *compat_lib_path(facts))
    if not bad:
        return Remedy(
            f"{text} The compat libcuda is found through the image's loader configuration, not "
            f"LD_LIBRARY_PATH: remove the cuda-compat package, or use an image built for "
            f"CUDA ≤ {fits}.",
            evidence=evidence.present(facts.raw, *ev),
        )
    keep = [d for d in facts.env.get("LD_LIBRARY_PATH", "").split(":") if d and d not in bad]
    cmd = f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH"
    return Remedy(
        f"{text} Drop the compat directory so the driver's own libcuda is used, or use an image "
        f"built for CUDA ≤ {fits}.",
        (cmd,),
        evidence.present(facts.raw, "env.LD_LIBRARY_PATH", *ev),
    )


def forward_compat_problem(facts: Facts) -> tuple[str, Remedy] | None:
    """Error 804/803 from CUDA init, or compat libraries loaded, explained."""
    warnings = " ".join(facts.torch.cuda.warnings)
    lib = compat_libcuda(facts)
    dirs = compat_dirs(facts)
    where = (lib.path if lib else None) or (dirs[0] if dirs else None)
    if any(s in warnings for s in ERROR_804):
        return (
            "CUDA error 804 (forward compatibility was attempted on non supported HW): "
            f"{where or 'a forward-compatibility libcuda'} is loaded on a GPU without forward "
            "compatibility support",
            drop_compat_fix(facts, warning_paths(facts, ERROR_804)),
        )
    if any(s in warnings for s in ERROR_803) and where:
        return (
            f"CUDA error 803: the forward-compatibility libcuda ({where}, "
            f"{(lib.version if lib else None) or 'version unknown'}) does not match kernel driver "
            f"{kernel_driver(facts) or facts.nvml.driver_version or '?'}",
            drop_compat_fix(facts, warning_paths(facts, ERROR_803)),
        )
    return None


def nvml_mismatch(facts: Facts) -> tuple[str, Remedy] | None:
    """NVML (or CUDA) says the kernel module and the user-space driver differ."""
    error = facts.nvml.error or ""
    warnings = " ".join(facts.torch.cuda.warnings)
    if (
        not any(s in error for s in NVML_MISMATCH)
        and "Driver/library version mismatch" not in warnings
    ):
        return None
    kernel = kernel_driver(facts)
    because = evidence.present(
        facts.raw,
        *(("nvml.error",) if any(s in error for s in NVML_MISMATCH) else ()),
        *warning_paths(facts, ("Driver/library version mismatch",)),
        "host.nvidia.proc_driver_version",
    )
    user = next(
        (lib.version for lib in facts.torch.libs.loaded
         if lib.component == "cuda_driver" and lib.version),
        None,
    )  # fmt: skip
    if user == kernel:
        user = None  # the same number twice would contradict "differ"; say only what is known
    if facts.container.detected:
        # In a container the toolkit mounts the host's libraries: a mismatch means a driver was
        # installed into the image (hpc-admin-sist/DockerMonitor#42); rebooting does not help.
        fix = Remedy(
            "Inside a container the NVIDIA driver libraries must be the host's, mounted by the "
            "NVIDIA Container Toolkit: remove the NVIDIA driver packages installed in this "
            "container (or image) and recreate it; for a torch that wants a newer CUDA, install "
            "a torch built for the host's driver rather than a driver in the container.",
            evidence=(*because, *evidence.present(facts.raw, "container.detected")),
        )
    else:
        fix = Remedy(
            "The new driver is installed but the old kernel module is still loaded. Reboot, or "
            "stop everything using the GPU and reload the nvidia modules; do not reinstall the driver.",
            (
                "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia "
                "&& sudo modprobe nvidia_uvm",
            ),
            because,
        )
    return (
        "NVIDIA driver/library version mismatch: the loaded kernel module"
        f"{f' ({kernel})' if kernel else ''} differs from the user-space driver libraries"
        f"{f' ({user})' if user else ''}, "
        "usually after a driver update without a reboot",
        fix,
    )


def nvswitch_nodes(facts: Facts) -> list[str]:
    """The NVSwitch device nodes (/dev/nvidia-nvswitch*) of an HGX/DGX board."""
    return [n for n in facts.host.nvidia.dev_nodes if n.startswith("nvidia-nvswitch")]


def fabric_not_ready(facts: Facts) -> tuple[str, Remedy] | None:
    """Error 802 at CUDA initialisation: NVIDIA Fabric Manager is not running (or not of the
    driver's version, pytorch#129749), so CUDA waits for an NVSwitch fabric that never comes."""
    because = warning_paths(facts, ERROR_802)
    if not because:
        return None
    driver = kernel_driver(facts) or facts.nvml.driver_version
    switches = nvswitch_nodes(facts)
    seen = f" ({len(switches)} NVSwitch device node(s) under /dev)" if switches else ""
    at = f"exactly the driver's version ({driver})" if driver else "exactly the driver's version"
    return (
        "CUDA error 802 (system not yet initialized): on an NVSwitch machine (HGX/DGX)"
        f"{seen} CUDA cannot start until NVIDIA Fabric Manager has set up the fabric",
        Remedy(
            f"Install nvidia-fabricmanager of {at} and start it; the service refuses to run "
            "when its version differs from the driver's (its status and journal say so).",
            (
                "sudo systemctl enable --now nvidia-fabricmanager",
                "systemctl status nvidia-fabricmanager",
            ),
            evidence.present(
                facts.raw,
                *because,
                "nvml.driver_version",
                *(("host.nvidia.dev_nodes",) if switches else ()),
            ),
        ),
    )


def container_lost_gpu(facts: Facts) -> tuple[str, Remedy] | None:
    """NVML's 'Unknown Error' inside a container that was given GPUs: the host's systemd reloaded
    the container's device cgroup and took /dev/nvidia* away from it (NVIDIA/nvidia-docker#1730)."""
    error = facts.nvml.error or ""
    if not facts.container.detected or not any(s in error for s in NVML_UNKNOWN):
        return None
    fix = Remedy(
        "The GPUs were taken away from this running container (a `systemctl daemon-reload` on the "
        "host, often by a package update, rewrites its device cgroup). Restart or recreate the "
        "container. On the host, stop it from happening again: create the /dev/char links runc "
        "needs, or switch Docker to the cgroupfs driver "
        '(`"exec-opts": ["native.cgroupdriver=cgroupfs"]` in /etc/docker/daemon.json).',
        ("sudo nvidia-ctk system create-dev-char-symlinks --create-all",),
        evidence.present(facts.raw, "nvml.error", "container.detected", "container.kind"),
    )
    return (
        "NVML fails with 'Unknown Error' inside this container: it has lost access to the GPUs "
        "it was started with",
        fix,
    )
