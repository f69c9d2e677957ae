"""Errors a pasted issue body shows that the gathered facts cannot: what the user's code did on
the machine (asked for an MPS operator Metal lacks, ran out of MPS memory, asked NCCL of a build
without it, named a GPU index the machine does not have). Each is judged by the check of its
device; this module turns the quoted line into that check's problem and fix."""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status

from ..record import Facts
from .common import pasted


def _cited(found: list, text: str, commands: tuple[str, ...] = ()) -> Remedy:
    return Remedy(text, commands, evidence=tuple(path for path, _ in found))


def mps_problems(facts: Facts) -> list[Problem]:
    """invoke-ai/InvokeAI#1693 (an op without an MPS kernel) and lllyasviel/Fooocus#980 (the
    MPS allocator's high-watermark cap on a 16 GB Mac)."""
    problems = []
    missing = pasted(facts, "mps-op-missing")
    if missing:
        op = missing[0][1].operator or "an operator"
        fix = _cited(
            missing,
            "Let torch run the ops Metal lacks on the CPU: set PYTORCH_ENABLE_MPS_FALLBACK=1 in "
            "the environment that starts Python (before torch is imported); a newer torch may "
            "have the op on MPS.",
            ("export PYTORCH_ENABLE_MPS_FALLBACK=1",),
        )
        why = f"{op} has no MPS kernel in this torch and the CPU fallback is off"
        problems.append(Problem("op-not-implemented", Status.FAIL, why, [fix]))
    oom = pasted(facts, "mps-out-of-memory")
    if oom:
        fix = _cited(
            oom,
            "The MPS allocator stops at a share of the Mac's unified memory: use smaller "
            "batches or images, or lift the cap with PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 "
            "(macOS may then swap or stall when memory runs out).",
            ("export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0",),
        )
        why = "MPS ran out of memory at the allocator's high-watermark limit"
        problems.append(Problem("out-of-memory", Status.FAIL, why, [fix]))
    return problems


def nccl_problem(facts: Facts) -> Problem | None:
    """'Distributed package doesn't have NCCL built in': on Windows (no NCCL in any wheel) the
    settled fix in OFA-Sys/Chinese-CLIP#279, PlayVoice/whisper-vits-svc#97 and
    fishaudio/fish-diffusion#2 was the gloo backend."""
    found = pasted(facts, "nccl-not-built")
    if not found:
        return None
    windows = facts.platform.system == "Windows"
    where = "Windows builds of torch have no NCCL" if windows else "this torch has no NCCL"
    fix = _cited(
        found,
        "Use the gloo backend: init_process_group(backend='gloo') (Lightning: "
        "DDPStrategy(process_group_backend='gloo'); a project's config: backend: gloo)."
        + ("" if windows else " Or install an official Linux CUDA wheel, which ships NCCL."),
    )
    why = f"the code asked for the NCCL backend, but {where}"
    return Problem("no-nccl", Status.FAIL, why, [fix])


def ordinal_problem(facts: Facts, visible: int) -> Problem | None:
    """'invalid device ordinal' while CUDA works: the code, its config or the launcher named a
    GPU index the process cannot see (wdrink/PyDeepFakeDet#1, UbiquitousLearning/FedAdapter#2,
    LianjiaTech/BELLE#197)."""
    found = pasted(facts, "invalid-device-ordinal")
    if not found or not visible:
        return None
    top = f"cuda:0 … cuda:{visible - 1}" if visible > 1 else "cuda:0 only"
    fix = _cited(
        found,
        f"This process sees {visible} GPU(s) ({top}): make the device ids in the code or its "
        "config, CUDA_VISIBLE_DEVICES and torchrun's --nproc-per-node name no more GPUs than "
        "that.",
        ("nvidia-smi -L",),
    )
    why = f"the code asked for a GPU index this process does not have ({visible} visible)"
    return Problem("ordinal-out-of-range", Status.FAIL, why, [fix])
