"""Ranks that would share one GPU under NCCL, found before any process group exists.

Recorded on a real H200 (lent once, 2026-11-26): `torchrun --nproc-per-node=2 -m torchdoctor dist
--backend nccl` on a one-GPU host died in its first all_reduce with "ncclInvalidUsage ...
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60"; torchrun then killed rank 0
before it printed a fleet report. Here each rank publishes the GPU it would use through a real
torch.distributed store, with stand-in `torch.cuda` modules for the GPUs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest

from torchdoctor.cluster import fleet
from torchdoctor.cluster.deadline import PhaseFailed
from torchdoctor.cluster.launch import Launch
from torchdoctor.cluster.rendezvous import agree_backend, shared_gpus
from torchdoctor.cluster.side_channel import SideChannel

from .conftest import REPO
from .test_dist_fleet import finding, small

dist = pytest.importorskip("torch.distributed")


def _torch(uuids: list[str]) -> SimpleNamespace:
    props = [SimpleNamespace(uuid=u) for u in uuids]
    cuda = SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: len(uuids),
        get_device_properties=lambda i: props[i],
    )
    return SimpleNamespace(cuda=cuda)


def _agree(world: int, per_host: int, gpus: dict[str, list[str]], wanted: str) -> list:
    """Run agree_backend on `world` ranks (threads), `per_host` to a host; each rank's outcome."""
    store = dist.HashStore()
    store.set_timeout(timedelta(seconds=10))
    fake_dist = SimpleNamespace(is_nccl_available=lambda: True)
    out: list = [None] * world

    def rank(r: int) -> None:
        host = f"node{r // per_host}"
        launch = Launch(r, world, r % per_host, per_host, host, "torchrun")
        channel = SideChannel(r)
        channel.store = store
        try:
            out[r] = agree_backend(_torch(gpus[host]), fake_dist, launch, wanted, 10, channel)
        except PhaseFailed as exc:
            out[r] = exc

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_duplicate_gpu_detected_two_ranks_on_one_h200_fail_before_nccl_with_backend_nccl():
    out = _agree(2, 2, {"node0": ["GPU-a"]}, "nccl")
    for exc in out:
        assert isinstance(exc, PhaseFailed) and exc.phase == "backend"
        assert "ranks 0-1 on node0 share one GPU (cuda:0)" in exc.message
        assert "Duplicate GPU detected" in exc.message
        assert "at most 1 rank(s) per host" in exc.message


def test_duplicate_gpu_under_auto_falls_back_to_gloo_and_says_why():
    out = _agree(4, 4, {"node0": ["GPU-a", "GPU-b"]}, "auto")
    assert {o[0] for o in out} == {"gloo"}
    assert all("share one GPU" in o[1] and "this host has 2 GPU(s)" in o[1] for o in out)


def test_one_rank_per_gpu_on_two_hosts_keeps_nccl():
    gpus = {"node0": ["GPU-a", "GPU-b"], "node1": ["GPU-a", "GPU-b"]}  # same UUIDs, other host
    assert _agree(4, 2, gpus, "auto") == [("nccl", None)] * 4


def test_shared_gpus_groups_ranks_in_rank_order():
    ids = {0: "h|u0|0", 1: "h|u1|1", 2: "h|u0|0", 3: "g|u0|0"}
    assert shared_gpus(ids) == [[0, 2]]


def test_the_fleet_report_says_to_start_one_rank_per_gpu():
    records = small(2)
    for r in records:
        r["backend"] = "gloo"
        r["backend_fallback"] = (
            "ranks 0-1 on a share one GPU (cuda:0), which NCCL refuses ('Duplicate GPU "
            "detected'); this host has 1 GPU(s)"
        )
    f = finding(fleet.aggregate(records, 2), "fleet.collectives")
    assert f["status"] == "warn"
    cmds = [c for r in f["remedies"] for c in r["commands"]]
    assert any("--nproc-per-node=$(nvidia-smi -L | wc -l)" in c for c in cmds)


def test_every_rank_refused_by_the_backend_phase_still_gets_rank_0s_fleet_report():
    """On the H200, rank 1 printed its line and exited 1, and torchrun killed rank 0 (SIGTERM,
    exit 143) before it printed anything. Non-zero ranks now leave their record in the store and
    wait (bounded) for rank 0's report; here with gloo-only CPUs and --backend nccl, which every
    rank refuses in the same phase."""
    proc = subprocess.run(
        [
            sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
            "-m", "torchdoctor", "dist", "--backend", "nccl", "--no-checks", "--json",
        ],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    results = {f["id"]: f for f in doc["results"]}
    assert results["fleet.ranks"]["status"] == "pass"  # rank 1 answered, with its error
    coll = results["fleet.collectives"]
    assert coll["status"] == "fail" and coll["details"]["failed"] == {"phase backend": [0, 1]}
    assert "NCCL_P2P_DISABLE" not in json.dumps(coll["remedies"])  # no collective ever ran
    assert results["fleet.versions"]["status"] == "skip"
