"""Joining the job: the rendezvous, the backend every rank agrees on, the process group.

The torch modules are passed in: only the worker imports torch (``import torchdoctor`` stays
torch-free), and every call that waits on other ranks runs under a deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from . import fleet_common
from .deadline import GRACE_S, PhaseFailed, within
from .fleet_common import SHARED
from .launch import Launch
from .side_channel import SideChannel


@dataclass
class Group:
    """This rank inside the initialised process group."""

    torch: Any
    dist: Any
    rank: int
    world_size: int
    timeout_s: float  # each collective's deadline (--collective-timeout)
    backend: str
    device: Any
    ctl: Any  # a gloo group for control traffic (monitored_barrier, the exit code)

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        if self.device.type == "cuda":  # NCCL wants to know the device it barriers on
            self.dist.barrier(device_ids=[self.device.index])
        else:
            self.dist.barrier()
        self.sync()

    def checkpoint(self, before: str, timeout_s: float) -> None:
        """monitored_barrier on the gloo control group: a rank that is not there is named."""
        try:
            within(
                timeout_s + GRACE_S,
                f"barrier before {before}",
                self.dist.monitored_barrier,
                group=self.ctl,
                timeout=timedelta(seconds=timeout_s),
                wait_all_ranks=True,
            )
        except Exception as exc:
            raise PhaseFailed(before, f"barrier: {exc}") from exc


def join_store(dist: Any, launch: Launch, timeout_s: float, channel: SideChannel) -> None:
    """The env:// rendezvous; its store becomes the side channel's."""
    channel.mark("rendezvous")
    it = dist.rendezvous(
        "env://", launch.rank, launch.world_size, timeout=timedelta(seconds=timeout_s)
    )
    try:
        channel.store, _, _ = within(timeout_s + GRACE_S, "rendezvous", next, it)
    except Exception as exc:
        raise PhaseFailed("rendezvous", f"{type(exc).__name__}: {exc}") from exc
    channel.set(f"host/{launch.rank}", launch.host)
    channel.mark("rendezvous")


# NCCL refuses a communicator in which two ranks use one GPU ("ncclInvalidUsage ... Duplicate
# GPU detected : rank 1 and rank 0 both on CUDA device 60", seen on an H200 with
# --nproc-per-node=2, 2026-11-26): the rank that hits it exits and the launcher kills the rest
# before any report. Found here, from every rank's GPU, before a process group exists.


def gpu_identity(torch: Any, launch: Launch) -> str:
    """The GPU this rank would use under NCCL (``local_rank % device_count``), as a key equal
    for two ranks exactly when they use the same device: the host and the device's UUID."""
    index = launch.local_rank % torch.cuda.device_count()
    try:
        uuid = str(torch.cuda.get_device_properties(index).uuid)
    except Exception:  # noqa: BLE001 - an older torch has no uuid: the visible index then
        uuid = f"cuda:{index}"
    return f"{launch.host}|{uuid}|{index}"


def shared_gpus(identities: dict[int, str]) -> list[list[int]]:
    """Groups of ranks that would use the same GPU, each sorted, rank order."""
    by_gpu: dict[str, list[int]] = {}
    for rank, ident in sorted(identities.items()):
        by_gpu.setdefault(ident, []).append(rank)
    return [ranks for ranks in by_gpu.values() if len(ranks) > 1]


def _shared_message(groups: list[list[int]], identities: dict[int, str], gpus: int) -> str:
    ranks = groups[0]
    host, _, index = identities[ranks[0]].split("|")
    more = f" (and {len(groups) - 1} more group(s))" if len(groups) > 1 else ""
    return (
        f"ranks {fleet_common.rank_ranges(ranks)} on {host} {SHARED} (cuda:{index}){more}, "
        f"which NCCL refuses ('Duplicate GPU detected'); this host has {gpus} GPU(s)"
    )


def agree_backend(
    torch: Any, dist: Any, launch: Launch, wanted: str, timeout_s: float, channel: SideChannel
) -> tuple[str, str | None]:
    """(backend, why gloo is a fallback or None). All ranks agree through the store: NCCL only
    if every rank can use it, each on a GPU of its own."""
    has_cuda = torch.cuda.is_available() and torch.cuda.device_count() > 0
    mine = "nccl" if has_cuda and dist.is_nccl_available() else ("cuda" if has_cuda else "cpu")
    if wanted == "gloo":
        channel.set(f"can/{launch.rank}", mine)
        return "gloo", None
    if mine == "nccl":  # before can/: a rank that reads every can/ key finds every gpu/ key
        channel.set(f"gpu/{launch.rank}", gpu_identity(torch, launch))
    channel.set(f"can/{launch.rank}", mine)
    try:
        channel.wait_all(
            [f"can/{r}" for r in range(launch.world_size)], timeout_s, "backend agreement"
        )
    except Exception as exc:
        raise PhaseFailed("rendezvous", f"not every rank arrived: {exc}") from exc
    can = {r: channel.get(f"can/{r}") for r in range(launch.world_size)}
    lacking = sorted(r for r, v in can.items() if v != "nccl")
    if not lacking:
        identities = {r: channel.get(f"gpu/{r}") or f"?{r}" for r in range(launch.world_size)}
        groups = shared_gpus(identities)
        if not groups:
            return "nccl", None
        why = _shared_message(groups, identities, torch.cuda.device_count())
        if wanted == "nccl":
            raise PhaseFailed(
                "backend",
                f"--backend nccl, but {why}: start at most {torch.cuda.device_count()} rank(s) "
                "per host (torchrun --nproc-per-node), or give each rank its own GPU",
            )
        return "gloo", why
    if wanted == "nccl":
        raise PhaseFailed(
            "backend",
            f"--backend nccl, but NCCL is not usable on ranks {fleet_common.rank_ranges(lacking)}",
        )
    if all(v == "cpu" for v in can.values()):
        return "gloo", None  # no GPU anywhere: gloo is the only choice, not a fallback
    return "gloo", (
        f"NCCL not usable on ranks {fleet_common.rank_ranges(lacking)} "
        f"({', '.join(sorted({can[r] or '?' for r in lacking}))})"
    )


def init_group(
    torch: Any, dist: Any, launch: Launch, backend: str, timeout_s: float, store: Any
) -> Group:
    if backend == "nccl":
        index = launch.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
    else:
        device = torch.device("cpu")
    pg_timeout = timedelta(seconds=timeout_s + 2 * GRACE_S)  # ours (timeout_s) fires first
    try:
        within(
            timeout_s + GRACE_S,
            "init_process_group",
            dist.init_process_group,
            backend=backend,
            store=store,
            rank=launch.rank,
            world_size=launch.world_size,
            timeout=pg_timeout,
        )
        ctl = (
            dist.group.WORLD
            if backend == "gloo"
            else within(
                timeout_s + GRACE_S,
                "new_group",
                dist.new_group,
                backend="gloo",
                timeout=pg_timeout,
            )
        )
    except Exception as exc:
        raise PhaseFailed("init", f"{type(exc).__name__}: {exc}") from exc
    return Group(torch, dist, launch.rank, launch.world_size, timeout_s, backend, device, ctl)
