"""Bus bandwidth of each collective on this rank, timed as nccl-tests times it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import bandwidth as bw
from .deadline import PhaseFailed, within
from .rendezvous import Group

DEFAULT_SIZES = {"gloo": "256K,4M", "nccl": "1M,16M,128M"}
DEFAULT_ITERS = {"gloo": (1, 3), "nccl": (5, 20)}  # (warm-up, timed)


def _timed(g: Group, fn: Callable[[], Any], warmup: int, iters: int) -> float:
    """Seconds per operation, after a warm-up and a barrier so every rank starts together."""
    for _ in range(warmup):
        fn()
    g.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    g.sync()
    return (time.perf_counter() - t0) / iters


def _operations(g: Group, numel: int) -> dict[str, Callable[[], Any]]:
    """The four collectives on float32 buffers of ``numel`` elements (divisible into n chunks)."""
    torch, dist, dev, n, rank = g.torch, g.dist, g.device, g.world_size, g.rank
    buf = torch.ones(numel, device=dev)
    recv = torch.empty(numel, device=dev)
    chunk = [torch.empty(numel // n, device=dev) for _ in range(n)]
    p2p = [
        dist.P2POp(dist.isend, buf, (rank + 1) % n),
        dist.P2POp(dist.irecv, recv, (rank - 1) % n),
    ]
    return {
        "all_reduce": lambda: dist.all_reduce(buf),
        "all_gather": lambda: dist.all_gather(chunk, buf[: numel // n]),
        "broadcast": lambda: dist.broadcast(buf, src=0),
        "sendrecv": lambda: [w.wait() for w in dist.batch_isend_irecv(p2p)],
    }


def run(g: Group, sizes: list[int] | None, iters: int | None, out: list[Any]) -> None:
    """Each size and collective into ``out`` as it is measured (a partial report keeps them)."""
    sizes = sizes or bw.parse_sizes(DEFAULT_SIZES[g.backend])
    warmup, default_iters = DEFAULT_ITERS[g.backend]
    iters = iters or default_iters
    n = g.world_size
    for size in sizes:
        numel = max(n, size // 4) // n * n  # float32, divisible into n chunks
        for op, fn in _operations(g, numel).items():
            what = f"{op} {bw.human_bytes(numel * 4)}"
            try:
                seconds = within(g.timeout_s, what, _timed, g, fn, warmup, iters)
            except Exception as exc:
                raise PhaseFailed("bandwidth", f"{what}: {exc}") from exc
            out.append(bw.measure(op, numel * 4, seconds, n))
