"""torch.build: what the installed torch was compiled with."""

from __future__ import annotations

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, probe_stuck, torch_ok, torch_unavailable

ID = "torch.build"
TITLE = "PyTorch build flags"
ORDER = 40  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build",)


def describe(build: dict) -> str:
    variant = build.get("variant", "?")
    parts = [variant]
    if build.get("cuda"):
        parts = [f"CUDA {build['cuda']}"]
    elif build.get("hip"):
        parts = [f"ROCm/HIP {build['hip']}"]
    if build.get("cudnn"):
        parts.append(f"cuDNN {build['cudnn']}")
    if build.get("nccl"):
        parts.append(f"NCCL {build['nccl']}")
    if build.get("arch_list"):
        parts.append("archs " + " ".join(build["arch_list"]))
    if build.get("cpu_capability"):
        parts.append(f"CPU {build['cpu_capability']}")
    return ", ".join(parts)


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("build",))
    if stuck:
        return stuck
    build = dig(facts, "torch.build", {})
    if not build:
        err = dig(facts, "torch.stage_errors.build", {})
        return verdict(
            Status.ERROR,
            f"could not read build flags: {err.get('message', 'no data')}",
            {"error": err},
        )
    details = dict(build)
    summary = f"torch {dig(facts, 'torch.version')}: {describe(build)}"
    if build.get("debug"):
        return verdict(
            Status.WARN,
            summary + " (debug build: much slower)",
            details,
            [Remedy("A debug build of torch is installed; install a release wheel for real work.")],
        )
    return verdict(Status.PASS, summary, details)
