"""distributed: can this torch run multi-process training (torchrun, DDP, FSDP) on these GPUs?"""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import pasted_errors
from .common import (
    Context,
    current_variant,
    grounded,
    nvml_gpus,
    pasted,
    quoted,
    reinstall_torch,
    torch_ok,
    torch_unavailable,
)

ID = "distributed"
TITLE = "torch.distributed and NCCL"
ORDER = 45  # after the build flags it reads
ACCELERATOR = "cuda"
NEEDS = ("torch.build",)
FINDINGS = {
    "not-built": "torch.distributed is not built: torchrun, DDP and FSDP cannot start",
    "no-nccl": "a CUDA build without NCCL: init_process_group('nccl') fails",
}


def _not_built(gpus: int) -> Problem:
    return Problem(
        "not-built",
        Status.WARN,
        f"torch.distributed is not built into this torch, with {gpus} GPUs here: "
        "torchrun, DistributedDataParallel and FSDP cannot start",
        [
            Remedy(
                "Install an official torch wheel (every Linux and Windows wheel from "
                "download.pytorch.org is built with torch.distributed), not a minimal or "
                "custom build.",
                evidence=("torch.build.distributed",),
            )
        ],
    )


def _no_nccl(facts: Facts) -> Problem:
    why = "The official Linux CUDA wheels ship NCCL (nvidia-nccl-cu*)."
    variant = current_variant(facts)
    fix = (
        reinstall_torch(facts, variant, why)
        if variant and variant.startswith("cu")
        else Remedy(
            f"{why} Install one from https://pytorch.org/get-started/locally/.",
            evidence=grounded(
                facts,
                "torch.build.distributed",
                "torch.build.nccl_available",
                "torch.build.variant",
            ),
        )
    )
    gloo = Remedy(
        "Meanwhile, init_process_group(backend='gloo') works, far slower on GPUs.",
        evidence=grounded(
            facts, "torch.build.distributed", "torch.build.nccl_available", "torch.build.variant"
        ),
    )
    message = (
        "a CUDA build of torch without NCCL: init_process_group('nccl') fails with "
        '"Distributed package doesn\'t have NCCL built in"'
    )
    return Problem("no-nccl", Status.WARN, message, [fix, gloo])


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    build = facts.torch.build
    asked = pasted_errors.nccl_problem(facts)
    if asked:
        return from_problems([asked], quoted(pasted(facts, "nccl-not-built")), "")
    if build.distributed is None:
        return verdict(Status.SKIP, "these facts do not say whether torch.distributed is built")
    gpus = len(nvml_gpus(facts))
    windows = facts.platform.system == "Windows"
    details = {
        "distributed": build.distributed,
        "nccl_available": build.nccl_available,
        "gloo_available": build.gloo_available,
        "nccl": build.nccl,
        "gpus": gpus,
    }
    problems = []
    if not build.distributed and gpus > 1:
        problems.append(_not_built(gpus))
    # NCCL is Linux-only: Windows wheels never have it (gloo is the backend there).
    if (
        build.distributed
        and build.variant == "cuda"
        and not windows
        and build.nccl_available is False
    ):
        problems.append(_no_nccl(facts))
    backends = [
        name for name, ok in (("nccl", build.nccl_available), ("gloo", build.gloo_available)) if ok
    ]
    if not build.distributed:
        passed = "torch.distributed not built (not needed on a single device)"
    else:
        passed = f"torch.distributed built, backends: {', '.join(backends) or 'none'}"
        if build.nccl_available and build.nccl:
            passed += f" (NCCL {build.nccl})"
        if windows and build.variant == "cuda":
            passed += "; Windows has no NCCL: use backend='gloo'"
    return from_problems(problems, details, passed)
