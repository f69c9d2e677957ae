"""Where this process sits in the job, from the launcher's environment (torchrun or Slurm's srun)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Launch:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    host: str
    launcher: str  # "torchrun" | "srun"


class LaunchError(ValueError):
    """The environment names a launcher but not enough to join its job."""


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except (KeyError, ValueError) as exc:
        raise LaunchError(f"{name}={env.get(name)!r} is not an integer") from exc


def from_env(env: Mapping[str, str] | None = None) -> Launch | None:
    """The launch torchrun (RANK, WORLD_SIZE, LOCAL_RANK, ...) or srun (SLURM_*) describes.

    None when neither launched this process. Under srun, env:// rendezvous still needs
    MASTER_ADDR and MASTER_PORT, which Slurm does not set: the caller exports RANK & co from these.
    """
    env = os.environ if env is None else env
    host = socket.gethostname()
    if "RANK" in env and "WORLD_SIZE" in env:
        world = _int(env, "WORLD_SIZE")
        return Launch(
            rank=_int(env, "RANK"),
            world_size=world,
            local_rank=_int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else 0,
            local_world_size=_int(env, "LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in env else 1,
            host=host,
            launcher="torchrun",
        )
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v)]
        if missing:
            raise LaunchError(
                f"under srun, export {' and '.join(missing)} first, e.g. "
                "MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1) "
                "MASTER_PORT=29500"
            )
        return Launch(
            rank=_int(env, "SLURM_PROCID"),
            world_size=_int(env, "SLURM_NTASKS"),
            local_rank=_int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0,
            local_world_size=_int(env, "SLURM_NTASKS_PER_NODE")
            if env.get("SLURM_NTASKS_PER_NODE", "").isdigit()
            else 1,
            host=host,
            launcher="srun",
        )
    return None


def export_for_env_rendezvous(launch: Launch, env: dict[str, str] | None = None) -> None:
    """torch's env:// rendezvous reads RANK/WORLD_SIZE; srun sets only SLURM_* names."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    env.setdefault("RANK", str(launch.rank))
    env.setdefault("WORLD_SIZE", str(launch.world_size))
    env.setdefault("LOCAL_RANK", str(launch.local_rank))
