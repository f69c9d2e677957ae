"""torch.build: what the installed torch was compiled with."""

from __future__ import annotations

from torchdoctor.report.result import Remedy, Status, Verdict, verdict

from ..record import Facts
from ..record.torch import Build
from .common import Context, grounded, probe_stuck, stage_error, torch_ok, torch_unavailable

ID = "torch.build"
TITLE = "PyTorch build flags"
ORDER = 40  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build",)


def describe(build: Build) -> str:
    parts = [build.variant or "?"]
    if build.cuda:
        parts = [f"CUDA {build.cuda}"]
    elif build.hip:
        parts = [f"ROCm/HIP {build.hip}"]
    if build.cudnn:
        parts.append(f"cuDNN {build.cudnn}")
    if build.nccl:
        parts.append(f"NCCL {build.nccl}")
    if build.arch_list:
        parts.append("archs " + " ".join(build.arch_list))
    if build.cpu_capability:
        parts.append(f"CPU {build.cpu_capability}")
    return ", ".join(parts)


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("build",))
    if stuck:
        return stuck
    build = facts.torch.build
    if not build:
        err = stage_error(facts, "build")
        return verdict(
            Status.ERROR,
            f"could not read build flags: {(err and err.message) or 'no data'}",
            {"error": err.raw if err else {}},
        )
    details = dict(build.raw)
    summary = f"torch {facts.torch.version}: {describe(build)}"
    if build.debug:
        return verdict(
            Status.WARN,
            summary + " (debug build: much slower)",
            details,
            [
                Remedy(
                    "A debug build of torch is installed; install a release wheel for real work.",
                    evidence=grounded(facts, "torch.build.debug", "torch.build.variant"),
                )
            ],
        )
    return verdict(Status.PASS, summary, details)
