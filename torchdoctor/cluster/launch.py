"""Where this process sits in the job, from the launcher's environment (torchrun or Slurm's srun).

Every variable is checked before anything starts: a typo such as WORLD_SIZE=1000000000 or
RANK=3 with WORLD_SIZE=2 would otherwise allocate per rank or wait for ranks that never come.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

# Above the largest training jobs run so far (~100k GPUs); per-rank keys and records must fit.
MAX_WORLD_SIZE = 1 << 17
MAX_PORT = 65535


@dataclass(frozen=True)
class Launch:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    host: str
    launcher: str  # "torchrun" | "srun"


class LaunchError(ValueError):
    """The environment names a launcher but not enough, or nonsense, to join its job."""


def _int(env: Mapping[str, str], name: str, low: int, high: int, meaning: str = "") -> int:
    """``env[name]`` as an integer in [low, high], or LaunchError naming the variable."""
    raw = env.get(name)
    try:
        value = int(raw.strip()) if raw is not None else None
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        shown = "not set" if raw is None else f"{raw!r}"
        raise LaunchError(
            f"{name} is {shown}: it must be an integer from {low} to {high}"
            + (f" ({meaning})" if meaning else "")
        )
    return value


def _where(
    env: Mapping[str, str], names: tuple[str, str, str, str], launcher: str, host: str
) -> Launch:
    """Rank, world size, local rank and local world size, each checked against the others."""
    rank_v, world_v, local_v, local_world_v = names
    world = _int(env, world_v, 1, MAX_WORLD_SIZE, "the number of processes in the job")
    rank = _int(env, rank_v, 0, world - 1, f"this process's place in the {world_v}={world} job")
    local_world = (
        _int(env, local_world_v, 1, world, "processes on this node") if local_world_v in env else 1
    )
    on_node = local_world if local_world_v in env else world
    local = (
        _int(env, local_v, 0, on_node - 1, "this process's place on its node")
        if local_v in env
        else 0
    )
    return Launch(rank, world, local, local_world, host, launcher)


def _rendezvous_address(env: Mapping[str, str], hint: str) -> None:
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v, "").strip()]
    if missing:
        raise LaunchError(f"{' and '.join(missing)} not set: {hint}")
    _int(env, "MASTER_PORT", 1, MAX_PORT, "the TCP port of rank 0's rendezvous store")


def from_env(env: Mapping[str, str] | None = None) -> Launch | None:
    """The launch torchrun (RANK, WORLD_SIZE, LOCAL_RANK, ...) or srun (SLURM_*) describes.

    None when neither launched this process; LaunchError (one line, naming the variable and what
    it must be) when a variable is missing or out of range. Under srun, env:// rendezvous still
    needs MASTER_ADDR and MASTER_PORT, which Slurm does not set: the caller exports RANK & co.
    """
    env = os.environ if env is None else env
    host = socket.gethostname()
    if "RANK" in env or "WORLD_SIZE" in env:
        launch = _where(
            env, ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"), "torchrun", host
        )
        _rendezvous_address(env, "torchrun sets them; when starting ranks by hand, export them")
        return launch
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        _rendezvous_address(
            env,
            "under srun, export MASTER_ADDR and MASTER_PORT first, e.g. "
            "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1) "
            "MASTER_PORT=29500",
        )
        if not env.get("SLURM_NTASKS_PER_NODE", "").isdigit():
            # Slurm writes "4(x2)" for uneven layouts: then how many share a node is unknown.
            env = {k: v for k, v in env.items() if k != "SLURM_NTASKS_PER_NODE"}
        return _where(
            env,
            ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
            "srun",
            host,
        )
    return None


def export_for_env_rendezvous(launch: Launch, env: dict[str, str] | None = None) -> None:
    """torch's env:// rendezvous reads RANK/WORLD_SIZE; srun sets only SLURM_* names."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    env.setdefault("RANK", str(launch.rank))
    env.setdefault("WORLD_SIZE", str(launch.world_size))
    env.setdefault("LOCAL_RANK", str(launch.local_rank))
