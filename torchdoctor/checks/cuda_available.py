"""cuda.available: can torch use CUDA, and if not, why not?"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from . import container, driver_state
from .common import (
    NO_CUDA_ON_MACOS,
    Context,
    driver_install_hint,
    keep_driver_fixes,
    nvml_gpus,
    probe_stuck,
    reinstall_torch,
    torch_ok,
    torch_unavailable,
    wheel_fixes,
)

ID = "cuda.available"
TITLE = "CUDA usable from torch"
ORDER = 60  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build", "torch.cuda", "nvml")

HIDING_VALUES = ("", "-1", "none", "NoDevFiles")


@dataclass
class Reason:
    """Why CUDA is unavailable in a CUDA build: a code to decide on, prose, and fixes."""

    code: str  # hidden | driver_too_old | no_gpu_container | no_gpu | init_failed | unknown
    text: str
    remedies: list[Remedy] = field(default_factory=list)


def _driver_too_old(facts: Facts) -> bool:
    driver, cuda = dig(facts, "nvml.driver_version"), dig(facts, "torch.build.cuda")
    return bool(driver and cuda and compat.driver_support(driver, cuda) == "too_old")


def _why_unavailable(facts: Facts, expect: str) -> Reason:
    """The most specific reason, checked from the cheapest explanation to the vaguest."""
    gpus = nvml_gpus(facts)
    warnings = " ".join(dig(facts, "torch.cuda.warnings", []))
    cvd = dig(facts, "env.CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in HIDING_VALUES:
        return Reason(
            "hidden",
            f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU",
            [
                Remedy(
                    "Unset it, or list the GPUs this job should use.",
                    ("unset CUDA_VISIBLE_DEVICES",),
                )
            ],
        )
    for code, found in (
        ("forward_compat", driver_state.forward_compat_problem(facts)),
        ("driver_mismatch", driver_state.nvml_mismatch(facts)),
    ):
        if found:
            return Reason(code, found[0], [found[1]])
    if "too old" in warnings or _driver_too_old(facts):
        remedies = [
            Remedy("Upgrade the NVIDIA driver (cuda.driver names the version).", ("nvidia-smi",))
        ]
        remedies += keep_driver_fixes(facts, None, "Or keep this driver.")
        found = re.search(r"found version \d+", warnings)
        return Reason(
            "driver_too_old",
            f"the NVIDIA driver is too old for this wheel ({found.group(0) if found else 'see cuda.driver'})",
            remedies,
        )
    if not gpus:
        # A container meant for the CPU (no GPU asked for) gets the CPU-wheel advice instead.
        wanted = container.gpu_requested(facts) or expect == "cuda"
        if dig(facts, "container.detected") and wanted:
            return Reason(
                "no_gpu_container",
                "no NVIDIA GPU is visible inside this container (started without --gpus?)",
                [
                    Remedy(
                        "Start the container with GPU access, e.g. `docker run --gpus all …` "
                        "(the host needs the NVIDIA Container Toolkit; the container check says more)."
                    )
                ],
            )
        return Reason(
            "no_gpu",
            "no NVIDIA driver or GPU found",
            [
                Remedy(
                    "Install the NVIDIA driver if this machine has an NVIDIA GPU.", ("nvidia-smi",)
                )
            ],
        )
    if warnings:
        rem = Remedy(
            "NVML sees the GPU but CUDA cannot initialise: reload the UVM kernel module "
            "(common after suspend) or reboot.",
            ()
            if dig(facts, "platform.wsl")
            else ("sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",),
        )
        return Reason("init_failed", f"CUDA initialisation failed: {warnings[:300]}", [rem])
    if dig(facts, "platform.system") == "Windows":
        # No /dev/nvidia-uvm on Windows: the driver install itself is the usual suspect.
        fix = Remedy(
            f"Reinstall or update the NVIDIA driver ({driver_install_hint(facts)}), reboot, and "
            "check that nvidia-smi lists the GPU.",
            ("nvidia-smi",),
        )
    else:
        fix = Remedy(
            "Check that /dev/nvidia-uvm exists and nvidia_uvm is loaded.",
            ("ls -l /dev/nvidia-uvm",),
        )
    return Reason("unknown", "NVML sees GPUs but torch.cuda.is_available() is False", [fix])


def _rocm_unavailable(facts: Facts, ctx: Context, details: dict) -> Verdict:
    """A ROCm build speaks through torch.cuda too, but its reasons are ROCm's: see `rocm`."""
    status = Status.FAIL if ctx.expect == "cuda" else Status.WARN
    return verdict(
        status,
        "ROCm build of torch but no usable AMD GPU (the rocm check says why)",
        details,
        [
            Remedy(
                "Give the process access to the AMD GPU (containers: "
                "`--device=/dev/kfd --device=/dev/dri --group-add video`).",
                ("ls -l /dev/kfd /dev/dri",),
            )
        ],
    )


def _cuda_build(facts: Facts, ctx: Context, details: dict) -> Verdict:
    cuda = dig(facts, "torch.cuda", {})
    details.update({k: cuda.get(k) for k in ("available", "device_count", "warnings")})
    if cuda.get("available"):
        return verdict(
            Status.PASS, f"CUDA available: {cuda.get('device_count')} device(s)", details
        )
    if ctx.expect in ("cpu", "mps"):
        return verdict(
            Status.SKIP, f"CUDA build but CUDA unavailable (expected: {ctx.expect})", details
        )
    if dig(facts, "torch.build.variant") == "rocm":
        return _rocm_unavailable(facts, ctx, details)
    reason = _why_unavailable(facts, ctx.expect)
    details["reason"] = reason.code
    if reason.code == "no_gpu" and ctx.expect == "auto":
        # gpu-wheel-no-gpu: nothing breaks, but the environment carries GBs of CUDA for nothing.
        return verdict(
            Status.WARN,
            f"CUDA build of torch on a machine without an NVIDIA GPU ({reason.text})",
            details,
            [
                reinstall_torch(facts, "cpu", "The CPU build is several GB smaller."),
                *reason.remedies,
            ],
        )
    return verdict(Status.FAIL, f"CUDA is not available: {reason.text}", details, reason.remedies)


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("cuda", "cuda.init"))
    if stuck:
        return stuck
    variant = dig(facts, "torch.build.variant")
    gpus = nvml_gpus(facts)
    details = {"variant": variant, "nvml_gpus": len(gpus), "expect": ctx.expect}
    if variant in ("cuda", "rocm"):
        return _cuda_build(facts, ctx, details)
    if gpus and ctx.expect in ("auto", "cuda"):
        names = ", ".join(sorted({g.name or "GPU" for g in gpus}))
        summary = (
            f"a {variant}-only build of torch is installed, but this machine has "
            f"{len(gpus)} NVIDIA GPU(s): {names}"
        )
        fixes = wheel_fixes(facts, None, "Torch says 'Torch not compiled with CUDA enabled'.")
        return verdict(Status.FAIL, summary, details, fixes)
    if ctx.expect == "cuda":
        why = "no NVIDIA GPU is visible" if not gpus else "the torch build has no CUDA"
        return verdict(
            Status.FAIL,
            f"CUDA expected, but torch is a {variant} build and {why}",
            details,
            [
                NO_CUDA_ON_MACOS
                if dig(facts, "platform.system") == "Darwin"
                else Remedy(
                    "Run on a machine (or a container started with `--gpus all`) that has an "
                    "NVIDIA GPU, and install a CUDA build of torch.",
                    ("nvidia-smi",),
                )
            ],
        )
    return verdict(
        Status.SKIP, f"{variant} build of torch and no NVIDIA GPU: CUDA not applicable", details
    )
