"""cuda.available: can torch use CUDA, and if not, why not?"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from torchdoctor.data import compat
from torchdoctor.report.evidence import words
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import bus_gpus, conda_build, container, driver_state
from .common import (
    NO_CUDA_ON_MACOS,
    Context,
    cite,
    driver_install_hint,
    gpu_paths,
    gpus_below_every_wheel,
    grounded,
    keep_driver_fixes,
    no_driver_helps,
    nvml_gpus,
    probe_stuck,
    quoted,
    reinstall_torch,
    said,
    torch_ok,
    torch_unavailable,
    wheel_fixes,
)

ID = "cuda.available"
TITLE = "CUDA usable from torch"
ORDER = 60  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build", "torch.cuda", "nvml")
# torch's own CUDA warnings pasted with a report are judged even when it lists no GPU lines.
EVIDENCE = ("driver-too-old", "no-driver", "cuda-init-error", "not-compiled-with-cuda")
# Why CUDA is unusable, each its own finding id (cuda.available.<code>), silenced alone.
FINDINGS = {
    "hidden": "CUDA_VISIBLE_DEVICES hides every GPU",
    "forward-compat": "CUDA forward-compatibility libraries on the wrong GPU or driver (error 804/803)",
    "driver-mismatch": "NVIDIA driver/library version mismatch after a driver update",
    "driver-too-old": "the NVIDIA driver is too old for this wheel",
    "no-gpu-container": "no NVIDIA GPU inside this container (started without --gpus?)",
    "no-gpu": "CUDA expected, but no NVIDIA driver or GPU found",
    "cuda-wheel-no-gpu": "a CUDA build of torch on a machine without an NVIDIA GPU",
    "driver-module-missing": "an NVIDIA GPU on the PCI bus that no NVIDIA kernel module serves",
    "uvm-missing": "/dev/nvidia0 without /dev/nvidia-uvm: the UVM module is not loaded",
    "amd-gpu-not-rocm": "an AMD GPU beside a CPU or CUDA build of torch: the GPU goes unused",
    "fabricmanager-missing": "CUDA error 802 on an NVSwitch machine: nvidia-fabricmanager is not running",
    "container-gpu-lost": "a container lost its GPUs while running (NVML 'Unknown Error')",
    "init-failed": "NVML sees the GPU but CUDA initialisation failed",
    "unexplained": "NVML sees GPUs but torch.cuda.is_available() is False",
    "rocm-no-gpu": "a ROCm build of torch without a usable AMD GPU",
    "cpu-build-on-gpu": "a build of torch without CUDA on a machine with NVIDIA GPUs",
    "cuda-expected": "--expect cuda, but torch has no CUDA or no GPU is visible",
}

HIDING_VALUES = ("", "-1", "none", "NoDevFiles")
# cuInit's 999 after a suspend/resume: the UVM module's state is broken (pytorch#49081, #88639).
UVM_RELOAD = "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm"


@dataclass
class Reason:
    """Why CUDA is unavailable in a CUDA build: a code to decide on, prose, and fixes."""

    # hidden | forward_compat | driver_mismatch | fabricmanager_missing | container_gpu_lost |
    # driver_too_old | no_gpu_container | no_gpu | driver_module_missing | uvm_missing |
    # amd_gpu_not_rocm | init_failed | unknown (details["reason"] keeps these spellings)
    code: str
    text: str
    remedies: list[Remedy] = field(default_factory=list)
    # False when the facts cannot show there is no GPU (a report without nvidia-smi's lines).
    gpu_absence_known: bool = True

    def problem(self, status: Status, message: str, remedies: list[Remedy]) -> Problem:
        code = "unexplained" if self.code == "unknown" else self.code.replace("_", "-")
        return Problem(code, status, message, remedies)


def _driver_too_old(facts: Facts) -> bool:
    driver, cuda = facts.nvml.driver_version, facts.torch.build.cuda
    return bool(driver and cuda and compat.driver_support(driver, cuda) == "too_old")


def _past_the_last(cvd: str, gpus: int) -> bool:
    """Every entry an index this machine does not have: CUDA sees none (jiaw-z/CoR-GS#23, a
    script's CUDA_VISIBLE_DEVICES=1 on a one-GPU machine)."""
    entries = [e.strip() for e in cvd.split(",") if e.strip()]
    return bool(gpus and entries) and all(e.isdigit() and int(e) >= gpus for e in entries)


def _hidden(facts: Facts) -> Reason | None:
    cvd = facts.env.get("CUDA_VISIBLE_DEVICES")
    gpus = len(nvml_gpus(facts))
    if cvd is not None and _past_the_last(cvd, gpus):
        fix = Remedy(
            f"This machine has {gpus} GPU(s), numbered from 0: set CUDA_VISIBLE_DEVICES to "
            "indexes below that (or unset it), in the shell and in any script that sets it.",
            ("nvidia-smi -L",),
            grounded(
                facts, "env.CUDA_VISIBLE_DEVICES", "nvml.device_count", *gpu_paths(facts, "name")
            ),
        )
        return Reason(
            "hidden", f"CUDA_VISIBLE_DEVICES={cvd!r} names no GPU this machine has", [fix]
        )
    if cvd is None or cvd.strip() not in HIDING_VALUES:
        return None
    fix = Remedy(
        "Unset it, or list the GPUs this job should use.",
        ("unset CUDA_VISIBLE_DEVICES",),
        ("env.CUDA_VISIBLE_DEVICES",),
    )
    return Reason("hidden", f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU", [fix])


def _driver_state(facts: Facts) -> Reason | None:
    """Driver states that look like "no driver" but are not (see driver_state)."""
    for code, found in (
        ("forward_compat", driver_state.forward_compat_problem(facts)),
        ("driver_mismatch", driver_state.nvml_mismatch(facts)),
        ("fabricmanager_missing", driver_state.fabric_not_ready(facts)),
        ("container_gpu_lost", driver_state.container_lost_gpu(facts)),
    ):
        if found:
            return Reason(code, found[0], [found[1]])
    warnings = " ".join(facts.torch.cuda.warnings)
    if "too old" not in warnings and not _driver_too_old(facts):
        return None
    because = (
        *driver_state.warning_paths(facts, ("too old",)),
        *grounded(facts, "nvml.driver_version", "torch.build.cuda"),
    )
    remedies = [
        Remedy(
            "Upgrade the NVIDIA driver (cuda.driver names the version).", ("nvidia-smi",), because
        )
    ]
    remedies += keep_driver_fixes(facts, None, "Or keep this driver.", because)
    if gpus_below_every_wheel(facts):
        remedies = [no_driver_helps(facts)]
    found = re.search(r"found version \d+", warnings)
    return Reason(
        "driver_too_old",
        f"the NVIDIA driver is too old for this wheel ({found.group(0) if found else 'see cuda.driver'})",
        remedies,
    )


def _bus(facts: Facts) -> Reason | None:
    """What the PCI bus and /dev show when NVML and CUDA cannot: see bus_gpus."""
    for code, found in (
        ("driver_module_missing", bus_gpus.unserved_nvidia(facts)),
        ("amd_gpu_not_rocm", bus_gpus.amd_gpu_unused(facts)),
    ):
        if found:
            return Reason(code, found[0], found[1])
    return None


def _no_gpu(facts: Facts, expect: str) -> Reason:
    found = _bus(facts)
    if found:
        return found
    # A container meant for the CPU (no GPU asked for) gets the CPU-wheel advice instead.
    wanted = container.gpu_requested(facts) or expect == "cuda"
    if facts.container.detected and wanted:
        fix = Remedy(
            "Start the container with GPU access, e.g. `docker run --gpus all …` "
            "(the host needs the NVIDIA Container Toolkit; the container check says more).",
            evidence=grounded(facts, "container.detected", "container.kind", "nvml.status"),
        )
        why = "no NVIDIA GPU is visible inside this container (started without --gpus?)"
        return Reason("no_gpu_container", why, [fix])
    fix = Remedy(
        "Install the NVIDIA driver if this machine has an NVIDIA GPU.",
        ("nvidia-smi",),
        grounded(facts, "nvml.status", "nvml.error"),
    )
    return Reason("no_gpu", "no NVIDIA driver or GPU found", [fix])


def _init_failed(facts: Facts) -> Reason:
    """NVML sees GPUs, CUDA does not: the error torch recorded, else the usual suspects."""
    warnings = " ".join(facts.torch.cuda.warnings)
    if warnings and facts.platform.system == "Windows":
        # No kernel modules to reload on Windows: a clean driver install settled it
        # (AUTOMATIC1111/stable-diffusion-webui#2986).
        rem = Remedy(
            f"Reinstall the NVIDIA driver cleanly ({driver_install_hint(facts)}: the installer's "
            "'clean installation' option), reboot, and check that nvidia-smi lists the GPU.",
            ("nvidia-smi",),
            grounded(
                facts,
                *(f"torch.cuda.warnings.{i}" for i in range(len(facts.torch.cuda.warnings))),
                "platform.system",
            ),
        )
        return Reason("init_failed", f"CUDA initialisation failed: {warnings[:300]}", [rem])
    if warnings:
        # rmmod of a module that is not loaded fails, and `&&` would then skip the modprobe.
        unloaded = facts.host.nvidia.uvm_loaded is False
        reload = "sudo modprobe nvidia_uvm" if unloaded else UVM_RELOAD
        rem = Remedy(
            "NVML sees the GPU but CUDA cannot initialise: reload the UVM kernel module "
            "(common after suspend) or reboot.",
            () if facts.platform.wsl else (reload,),
            grounded(
                facts,
                *(f"torch.cuda.warnings.{i}" for i in range(len(facts.torch.cuda.warnings))),
                *gpu_paths(facts, "name"),
                *(("host.nvidia.uvm_loaded",) if unloaded else ()),
            ),
        )
        return Reason("init_failed", f"CUDA initialisation failed: {warnings[:300]}", [rem])
    if not facts.nvml.driver_version:
        # A report cut before its driver line: the usual cause is not in it; check it first.
        cuda = facts.torch.build.cuda or "?"
        need = compat.TOOLKIT_MIN_DRIVER.get(compat.cuda_major_minor(cuda) or "")
        fix = Remedy(
            "The report does not show the driver version: check first that nvidia-smi shows a "
            f"driver new enough for the wheel's CUDA {cuda}" + (f" (≥ {need})." if need else "."),
            ("nvidia-smi",),
            evidence=("torch.build.cuda", "nvml.devices.0.name"),
        )
        why = "torch.cuda.is_available() is False and the report does not show the driver"
        return Reason("unknown", why, [fix])
    if facts.container.detected and not facts.container.nvidia.driver_libs.get("libcuda.so.1"):
        # nvidia-smi works (utility libraries) but CUDA's libcuda is not mounted (LocalAI#11973)
        fix = Remedy(
            "libcuda.so.1 is not mounted in this container: start it with the compute "
            "capability, `docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility …` "
            "(the container check says more).",
            evidence=grounded(facts, "container.detected", "container.nvidia"),
        )
        why = "NVML sees GPUs but libcuda.so.1 is not in this container"
        return Reason("unknown", why, [fix])
    if facts.platform.system == "Windows":
        # No /dev/nvidia-uvm on Windows: the driver install itself is the usual suspect.
        fix = Remedy(
            f"Reinstall or update the NVIDIA driver ({driver_install_hint(facts)}), reboot, and "
            "check that nvidia-smi lists the GPU.",
            ("nvidia-smi",),
            grounded(facts, "platform.system", "torch.cuda.available", *gpu_paths(facts, "name")),
        )
    else:
        fix = Remedy(
            "Check that /dev/nvidia-uvm exists and nvidia_uvm is loaded.",
            ("ls -l /dev/nvidia-uvm",),
            grounded(
                facts, "torch.cuda.available", "host.nvidia.dev_nodes", *gpu_paths(facts, "name")
            ),
        )
    return Reason("unknown", "NVML sees GPUs but torch.cuda.is_available() is False", [fix])


def _lost(facts: Facts) -> Reason | None:
    """A GPU that fell off the bus fails CUDA's initialisation; only a reboot brings it back,
    reloading modules does not (gpu.health says more)."""
    lost = [(i, d) for i, d in enumerate(nvml_gpus(facts)) if d.lost]
    if not lost:
        return None
    fix = Remedy(
        "A GPU fell off the bus (gpu.health has the details): reboot to get it back.",
        ("sudo dmesg | grep -i xid",),
        grounded(facts, *(f"nvml.devices.{i}.error" for i, _ in lost)),
    )
    who = ", ".join(f"GPU {d.index}" for _, d in lost)
    return Reason("init_failed", f"{who} fell off the bus (NVML: GPU is lost)", [fix])


def _ordinal(facts: Facts) -> Reason | None:
    """Error 101 at initialisation: CUDA_VISIBLE_DEVICES (or a launcher) names a GPU index the
    machine does not have."""
    at = next(
        (i for i, w in enumerate(facts.torch.cuda.warnings) if "invalid device ordinal" in w), None
    )
    if at is None:
        return None
    show = (
        "echo %CUDA_VISIBLE_DEVICES%"
        if facts.platform.system == "Windows"
        else ("echo $CUDA_VISIBLE_DEVICES")
    )
    fix = Remedy(
        "CUDA was told to use a GPU index this machine does not have (error 101): compare "
        "CUDA_VISIBLE_DEVICES with the GPUs nvidia-smi lists, and unset it or fix the index.",
        ("nvidia-smi -L", show),
        evidence=cite(facts, f"torch.cuda.warnings.{at}"),
    )
    line = words(facts.torch.cuda.warnings[at])
    code = re.search(r"Error \d+: invalid device ordinal", line)
    told = code.group(0) if code else line[:300]
    return Reason("init_failed", f"CUDA initialisation failed: {told}", [fix])


def _unlisted_gpus(facts: Facts) -> Reason:
    """A report without nvidia-smi's lines: whether there is a GPU is not known, so the reason
    comes from torch's own words, and every fix first checks what the report does not say."""
    warnings = facts.torch.cuda.warnings
    paths = cite(facts, *(f"torch.cuda.warnings.{i}" for i in range(len(warnings))))
    told = words(warnings[0])[:200] if warnings else ""
    if any("Found no NVIDIA driver" in w for w in warnings) and facts.platform.system == "Darwin":
        fix = replace(NO_CUDA_ON_MACOS, evidence=paths)
        return Reason("no_gpu", f"torch found no NVIDIA driver: {told}", [fix], False)
    if any("Found no NVIDIA driver" in w for w in warnings):
        fix = Remedy(
            "Check first that this machine has an NVIDIA GPU (`nvidia-smi`, or `lspci | grep -i "
            f"nvidia` on Linux; the report lists none); then install its driver "
            f"({driver_install_hint(facts)}).",
            ("nvidia-smi",),
            evidence=paths,
        )
        return Reason("no_gpu", f"torch found no NVIDIA driver: {told}", [fix], False)
    if warnings:
        fix = Remedy(
            "Check first that nvidia-smi lists the GPU (the report does not); then reload the "
            "driver (reboot, or reload nvidia_uvm on Linux).",
            ("nvidia-smi",),
            evidence=paths,
        )
        return Reason("init_failed", f"CUDA initialisation failed: {told}", [fix])
    fix = Remedy(
        "The report does not list the GPUs or the driver: check first that nvidia-smi lists an "
        "NVIDIA GPU and its driver.",
        ("nvidia-smi",),
        evidence=("torch.cuda.available",),
    )
    return Reason("unknown", "the report does not say whether an NVIDIA GPU is present", [fix])


def _why_unavailable(facts: Facts, expect: str) -> Reason:
    """The most specific reason, checked from the cheapest explanation to the vaguest."""
    found = _hidden(facts) or _driver_state(facts) or _ordinal(facts)
    if found:
        return found
    if facts.collected.source not in (None, "probe") and "nvml" not in (
        facts.collected.carries or []
    ):
        return _unlisted_gpus(facts)
    if not nvml_gpus(facts):
        return _no_gpu(facts, expect)
    uvm = bus_gpus.uvm_missing(facts)
    if uvm:
        return Reason("uvm_missing", uvm[0], uvm[1])
    return _lost(facts) or _init_failed(facts)


def _rocm_unavailable(facts: Facts, ctx: Context, details: dict) -> Verdict:
    """A ROCm build speaks through torch.cuda too, but its reasons are ROCm's: see `rocm`."""
    status = Status.FAIL if ctx.expect == "cuda" else Status.WARN
    fix = Remedy(
        "Give the process access to the AMD GPU (containers: "
        "`--device=/dev/kfd --device=/dev/dri --group-add video`).",
        ("ls -l /dev/kfd /dev/dri",),
        grounded(facts, "torch.build.variant", "torch.cuda.available", "torch.rocm.nodes"),
    )
    why = "ROCm build of torch but no usable AMD GPU (the rocm check says why)"
    return from_problems([Problem("rocm-no-gpu", status, why, [fix])], details, "")


def _cuda_build(facts: Facts, ctx: Context, details: dict) -> Verdict:
    cuda = facts.torch.cuda
    details.update(available=cuda.available, device_count=cuda.device_count, warnings=cuda.warnings)
    # torch's words read from its warnings on a live check, quoted as a paste's are.
    details |= quoted(said(facts, *(f"torch.cuda.warnings.{i}" for i in range(len(cuda.warnings)))))
    if cuda.available:
        return verdict(Status.PASS, f"CUDA available: {cuda.device_count} device(s)", details)
    if ctx.expect in ("cpu", "mps", "xpu"):
        return verdict(
            Status.SKIP, f"CUDA build but CUDA unavailable (expected: {ctx.expect})", details
        )
    if facts.torch.build.variant == "rocm":
        return _rocm_unavailable(facts, ctx, details)
    reason = _why_unavailable(facts, ctx.expect)
    details["reason"] = reason.code
    if reason.code == "no_gpu" and ctx.expect == "auto" and bus_gpus.intel_discrete(facts):
        # The CPU wheel is the wrong advice beside an Arc: xpu.build-missing offers the XPU one.
        why = "CUDA build of torch, no NVIDIA GPU, a discrete Intel GPU: see the xpu check"
        return verdict(Status.SKIP, why, details)
    if reason.code == "no_gpu" and ctx.expect == "auto" and reason.gpu_absence_known:
        # gpu-wheel-no-gpu: nothing breaks, but the environment carries GBs of CUDA for nothing.
        fixes = [
            reinstall_torch(
                facts,
                "cpu",
                "The CPU build is several GB smaller.",
                because=grounded(facts, "torch.build.variant", "nvml.status"),
            ),
            *reason.remedies,
        ]
        why = f"CUDA build of torch on a machine without an NVIDIA GPU ({reason.text})"
        problem = Problem("cuda-wheel-no-gpu", Status.WARN, why, fixes)
    else:
        why = f"CUDA is not available: {reason.text}"
        # An AMD GPU left unused breaks nothing unless CUDA was expected.
        amd = reason.code == "amd_gpu_not_rocm" and ctx.expect == "auto"
        problem = reason.problem(Status.WARN if amd else Status.FAIL, why, reason.remedies)
    return from_problems([problem], details, "")


def _no_cuda_build(facts: Facts, ctx: Context, details: dict) -> Verdict:
    """A CPU (or MPS, XPU) build: wrong on a GPU machine, or where CUDA is expected."""
    variant, gpus = details["variant"], nvml_gpus(facts)
    if gpus and ctx.expect in ("auto", "cuda"):
        names = ", ".join(sorted({g.name or "GPU" for g in gpus}))
        why = (
            f"a {variant}-only build of torch is installed, but this machine has "
            f"{len(gpus)} NVIDIA GPU(s): {names}"
        )
        because = grounded(facts, "torch.build.variant", *gpu_paths(facts, "name"))
        fixes = conda_build.cpu_build_fixes(facts, because) or wheel_fixes(
            facts, None, "Torch says 'Torch not compiled with CUDA enabled'.", because
        )
        return from_problems([Problem("cpu-build-on-gpu", Status.FAIL, why, fixes)], details, "")
    if ctx.expect == "cuda":
        which = "no NVIDIA GPU is visible" if not gpus else "the torch build has no CUDA"
        fix = (
            NO_CUDA_ON_MACOS
            if facts.platform.system == "Darwin"
            else Remedy(
                "Run on a machine (or a container started with `--gpus all`) that has an "
                "NVIDIA GPU, and install a CUDA build of torch.",
                ("nvidia-smi",),
                grounded(facts, "torch.build.variant", "nvml.status", *gpu_paths(facts, "name")),
            )
        )
        why = f"CUDA expected, but torch is a {variant} build and {which}"
        return from_problems([Problem("cuda-expected", Status.FAIL, why, [fix])], details, "")
    amd = bus_gpus.amd_gpu_unused(facts)
    if amd and ctx.expect == "auto":
        problem = Problem("amd-gpu-not-rocm", Status.WARN, amd[0], amd[1])
        return from_problems([problem], details, "")
    return verdict(
        Status.SKIP, f"{variant} build of torch and no NVIDIA GPU: CUDA not applicable", details
    )


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("cuda", "cuda.init"))
    if stuck:
        return stuck
    variant = facts.torch.build.variant
    details = {"variant": variant, "nvml_gpus": len(nvml_gpus(facts)), "expect": ctx.expect}
    if variant in ("cuda", "rocm"):
        return _cuda_build(facts, ctx, details)
    return _no_cuda_build(facts, ctx, details)
