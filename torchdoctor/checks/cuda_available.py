"""cuda.available: can torch use CUDA, and if not, why not?"""

from __future__ import annotations

import re

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from . import container
from .common import (
    Context,
    gpu_variant,
    nvml_gpus,
    probe_stuck,
    reinstall_torch,
    torch_ok,
    torch_unavailable,
)

ID = "cuda.available"
TITLE = "CUDA usable from torch"


def _hidden_by_env(env: dict) -> str | None:
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1", "none", "NoDevFiles"):
        return f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU"
    return None


def _why_unavailable(facts: Facts, expect: str) -> tuple[str, list[Remedy]]:
    """The most specific reason CUDA is unavailable in a CUDA build, and its fix."""
    gpus = nvml_gpus(facts)
    env = dig(facts, "env", {})
    warnings = " ".join(dig(facts, "torch.cuda.warnings", []))
    hidden = _hidden_by_env(env)
    if hidden:
        return hidden, [
            Remedy(
                "Unset it, or list the GPUs this job should use.", ("unset CUDA_VISIBLE_DEVICES",)
            )
        ]
    if "too old" in warnings or (dig(facts, "nvml.status") == "ok" and _driver_too_old(facts)):
        variant = gpu_variant(facts)
        rem = [
            Remedy("Upgrade the NVIDIA driver (see cuda.driver for the version).", ("nvidia-smi",))
        ]
        if variant:
            rem.append(
                reinstall_torch(
                    facts, variant, "Or keep this driver and install a wheel it supports."
                )
            )
        found = re.search(r"found version \d+", warnings)
        return (
            f"the NVIDIA driver is too old for this wheel ({found.group(0) if found else 'see cuda.driver'})",
            rem,
        )
    if not gpus:
        # A container meant for CPU (no GPU asked for) gets the CPU-wheel advice instead.
        wanted = container.gpu_requested(facts) or expect == "cuda"
        if dig(facts, "container.detected") and wanted:
            return (
                "no NVIDIA GPU is visible inside this container (started without --gpus?)",
                [
                    Remedy(
                        "Start the container with GPU access (needs nvidia-container-toolkit on the host).",
                        ("docker run --gpus all ...",),
                    )
                ],
            )
        return (
            "no NVIDIA driver or GPU found",
            [
                Remedy(
                    "Install the NVIDIA driver, or install the CPU build if this machine has no GPU.",
                    ("nvidia-smi",),
                )
            ],
        )
    if warnings:
        return f"CUDA initialisation failed: {warnings[:300]}", [
            Remedy(
                "NVML sees the GPU but CUDA cannot initialise: reload the UVM module "
                "(common after suspend) or reboot.",
                ("sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm",),
            )
        ]
    return "NVML sees GPUs but torch.cuda.is_available() is False", [
        Remedy(
            "Check /dev/nvidia-uvm exists and the nvidia_uvm module is loaded.",
            ("ls -l /dev/nvidia*", "sudo modprobe nvidia_uvm"),
        )
    ]


def _driver_too_old(facts: Facts) -> bool:
    driver, cuda = dig(facts, "nvml.driver_version"), dig(facts, "torch.build.cuda")
    return bool(driver and cuda and compat.driver_support(driver, cuda) == "too_old")


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
        why, remedies = _why_unavailable(facts, ctx.expect)
        details["reason"] = why
        if not gpus and ctx.expect == "auto" and "driver" in why and "too old" not in why:
            # gpu-wheel-no-gpu: nothing breaks, but the environment carries GBs of CUDA for nothing.
            return verdict(
                Status.WARN,
                f"CUDA build of torch on a machine without an NVIDIA GPU ({why})",
                details,
                [reinstall_torch(facts, "cpu", "The CPU build is several GB smaller."), *remedies],
            )
        return verdict(Status.FAIL, f"CUDA is not available: {why}", details, remedies)
    # Not a CUDA build.
    if gpus and ctx.expect in ("auto", "cuda"):
        names = ", ".join(sorted({g.get("name") or "GPU" for g in gpus}))
        target = gpu_variant(facts) or "cu126"
        return verdict(
            Status.FAIL,
            f"a {variant}-only build of torch is installed, but this machine has {len(gpus)} NVIDIA GPU(s): {names}",
            details,
            [
                reinstall_torch(
                    facts,
                    target,
                    f"Torch will say 'Torch not compiled with CUDA enabled'. The driver "
                    f"{dig(facts, 'nvml.driver_version')} supports the {target} build.",
                )
            ],
        )
    if ctx.expect == "cuda":
        why = "no NVIDIA GPU is visible" if not gpus else "the torch build has no CUDA"
        return verdict(
            Status.FAIL,
            f"CUDA expected, but torch is a {variant} build and {why}",
            details,
            [
                Remedy(
                    "Run on a machine (or container, `--gpus all`) with an NVIDIA GPU and "
                    "install a CUDA build of torch.",
                    ("nvidia-smi",),
                )
            ],
        )
    return verdict(
        Status.SKIP, f"{variant} build of torch and no NVIDIA GPU: CUDA not applicable", details
    )
