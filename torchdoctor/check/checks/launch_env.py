"""What the launch variables (torchrun's, Slurm's) say about the job, read as numbers: shared by
the ``launch`` and ``network`` checks. Not a check itself (no ``ID``)."""

from __future__ import annotations

from ..record import Facts
from .common import nvml_gpus

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "::1")


def count(env: dict[str, str], name: str) -> int | None:
    """A whole-number variable; torchrun's ``--nnodes 1:4`` range form reads as its maximum."""
    raw = env.get(name, "").strip().rpartition(":")[2]
    return int(raw) if raw.isdigit() else None


def in_torchrun(env: dict[str, str]) -> bool:
    """This process is a rank torchrun (its elastic agent) started."""
    return bool(env.get("TORCHELASTIC_RUN_ID"))


def multi_node(env: dict[str, str]) -> str | None:
    """The variable that says this job spans several machines, or None."""
    world, local = count(env, "WORLD_SIZE"), count(env, "LOCAL_WORLD_SIZE")
    if world is not None and local and world > local:
        return "WORLD_SIZE"
    for name in ("NNODES", "PET_NNODES", "GROUP_WORLD_SIZE", "SLURM_NNODES"):
        n = count(env, name)
        if n is not None and n > 1:
            return name
    return None


def is_loopback(host: str) -> bool:
    host = host.strip().strip("[]").lower()
    return host in LOOPBACK_NAMES or host.startswith("127.")


def visible_gpus(facts: Facts) -> tuple[int | None, str | None]:
    """(how many CUDA devices this process sees, the fact path it was read from): torch's own
    count, else NVML's when CUDA_VISIBLE_DEVICES does not narrow it."""
    cuda = facts.torch.cuda
    if facts.torch.status == "ok" and cuda.device_count is not None:
        return cuda.device_count, "torch.cuda.device_count"
    gpus = nvml_gpus(facts)
    if gpus and "CUDA_VISIBLE_DEVICES" not in facts.env:
        return len(gpus), "nvml.devices"
    return None, None
