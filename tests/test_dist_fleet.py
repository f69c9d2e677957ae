"""The fleet aggregation, over recorded and constructed rank records: no torch, no torchrun.

The 64-rank fleet is 8 hosts × 8 GPUs built from the recorded H100 machine, each host's report
judged by the real engine, with one host on an old driver and one slow GPU.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from importlib import resources

import jsonschema
import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.cluster import bandwidth, fleet, fleet_common, launch
from torchdoctor.cluster.render import render_text
from torchdoctor.cluster.worker import apply_override, within

from .conftest import REPO, load_facts, run_cli

FLEET_SCHEMA = json.loads(
    resources.files("torchdoctor").joinpath("schema/fleet.schema.json").read_text()
)
REPORT_SCHEMA = json.loads(
    resources.files("torchdoctor").joinpath("schema/report.schema.json").read_text()
)
H100 = "NVIDIA H100 80GB HBM3"


def validate(doc: dict) -> dict:
    jsonschema.validate(doc, FLEET_SCHEMA)
    jsonschema.validate(doc, REPORT_SCHEMA)  # the envelope and finding every command shares
    for rec in doc["ranks"]:
        if rec["report"]:
            jsonschema.validate(rec["report"], REPORT_SCHEMA)
    return doc


def node_report(facts: dict) -> dict:
    return engine.diagnose(read_facts(facts), Context(expect="cuda"), engine.select()).to_dict()


def rank_record(rank: int, host: str, local_rank: int, world: int, report=None, **over) -> dict:
    rec = {
        "rank": rank,
        "local_rank": local_rank,
        "world_size": world,
        "local_world_size": 8,
        "host": host,
        "pid": 1000 + rank,
        "backend": "nccl",
        "backend_fallback": None,
        "versions": {
            "torch": "2.11.0+cu130",
            "cuda": "13.0",
            "hip": None,
            "nccl": "2.27.7",
            "python": "3.11.7",
        },
        "device": {
            "type": "cuda",
            "index": local_rank,
            "name": H100,
            "memory_total_bytes": 85520809984,
        },
        "collectives": {
            op: {"status": "pass", "summary": "ok", "seconds": 0.01}
            for op in fleet_common.COLLECTIVES
        },
        "bandwidth": [
            bandwidth.measure("all_reduce", 128 << 20, 0.0018, world),
            bandwidth.measure("sendrecv", 128 << 20, 0.0034, world),
        ],
        "report": report,
        "errors": [],
    }
    for path, value in over.items():
        apply_override(rec, rank, json.dumps({str(rank): {path.replace("__", "."): value}}))
    return rec


def cluster(nodes: int = 8, per_node: int = 8, old_driver_node=None, slow_rank=None) -> list:
    healthy = load_facts("h100_healthy")
    records = []
    world = nodes * per_node
    for n in range(nodes):
        facts = copy.deepcopy(healthy)
        if n == old_driver_node:
            facts["nvml"]["driver_version"] = "535.183.01"
            facts["nvml"]["cuda_driver_version"] = 12020
            facts["host"]["nvidia"]["proc_driver_version"] = "NVRM version: 535.183.01"
        report = node_report(facts)
        for local in range(per_node):
            rank = n * per_node + local
            rec = rank_record(rank, f"node{n}", local, world, report if local == 0 else None)
            if rank == slow_rank:
                rec["bandwidth"][1] = bandwidth.measure("sendrecv", 128 << 20, 0.034, world)
            records.append(rec)
    return records


def finding(doc: dict, fid: str) -> dict:
    return next(f for f in doc["results"] if f["id"] == fid)


# --------------------------------------------------------------------------- the 64-rank fleet


def test_healthy_64_rank_fleet_passes():
    doc = validate(fleet.aggregate(cluster(), 64))
    assert doc["status"] == "pass" and doc["exit_code"] == 0
    assert [h["host"] for h in doc["hosts"]] == [f"node{n}" for n in range(8)]
    assert doc["hosts"][3] == {"host": "node3", "ranks": list(range(24, 32)), "report_rank": 24}
    assert finding(doc, "fleet.ranks")["summary"].startswith("64 of 64 ranks answered from 8 host")
    assert finding(doc, "fleet.devices")["summary"] == f"64 × {H100}, 79.6 GiB each"
    assert "driver 580.159.04" in finding(doc, "fleet.versions")["summary"]


def test_old_driver_and_slow_gpu_are_named_by_host_and_rank():
    doc = validate(fleet.aggregate(cluster(old_driver_node=3, slow_rank=13), 64))
    assert doc["status"] == "fail" and doc["exit_code"] == 1

    versions = finding(doc, "fleet.versions")
    assert versions["status"] == "warn"  # a differing driver alone is a warning ...
    assert versions["details"]["ranks"] == list(range(24, 32))
    assert "535.183.01 on ranks 24-31 (node3)" in versions["summary"]
    assert "580.159.04 on ranks 0-23,32-63" in versions["summary"]
    assert "node3" in versions["remedies"][0]["text"]

    driver = finding(doc, "cuda.driver")  # ... and the node check says it is too old to run
    assert driver["status"] == "fail"
    assert driver["details"]["hosts"] == ["node3"]
    assert driver["details"]["ranks"] == list(range(24, 32))
    assert driver["summary"].startswith("fail on 1 of 8 host(s) (node3): driver 535.183.01")
    assert any("580.65.06" in r["text"] for r in driver["remedies"])
    assert finding(doc, "fleet.checks")["details"]["checks"] == ["cuda.driver"]

    slow = finding(doc, "fleet.bandwidth")
    assert slow["status"] == "warn" and slow["details"]["ranks"] == [13]
    assert slow["summary"].startswith("rank 13 (node1): sendrecv 128 MiB at")
    assert "0.10× the median" in slow["summary"]


def test_text_report_is_one_table_by_host_and_rank():
    doc = fleet.aggregate(cluster(old_driver_node=3, slow_rank=13), 64)
    text = render_text(doc)
    rows = [line.split() for line in text.splitlines() if line.startswith("node")]
    assert len(rows) == 64
    assert [r[1] for r in rows[:9]] == [str(i) for i in range(8)] + ["8"]
    by_rank = {int(r[1]): r for r in rows}
    assert by_rank[13][-1] == "warn"
    assert all(by_rank[r][-1] == "fail" and "535.183.01" in by_rank[r] for r in range(24, 32))
    assert by_rank[0][-1] == "pass"
    assert text.rstrip().splitlines()[-1].startswith("FLEET FAIL:")


# --------------------------------------------------------------------------- single findings


def small(n: int = 2, **over_by_rank) -> list:
    report = node_report(load_facts("h100_healthy"))
    return [
        rank_record(r, "a", r, n, report if r == 0 else None, **over_by_rank.get(f"r{r}", {}))
        for r in range(n)
    ]


def test_missing_rank_is_named_with_host_and_last_phase():
    records = small(2)
    missing = [{"rank": 2, "host": "b", "phase": "collectives", "error": None}]
    doc = validate(fleet.aggregate(records, 3, missing))
    ranks = finding(doc, "fleet.ranks")
    assert ranks["status"] == "fail" and ranks["details"]["ranks"] == [2]
    assert "rank 2 (b, last seen in phase 'collectives')" in ranks["summary"]
    assert doc["hosts"][-1] == {"host": "b", "ranks": [2], "report_rank": None}
    assert "missing" in render_text(doc)


def test_wrong_collective_result_fails_and_names_the_rank():
    records = small(2)
    records[1]["collectives"]["all_reduce"] = {"status": "fail", "summary": "got 5, expected 3"}
    f = finding(fleet.aggregate(records, 2), "fleet.collectives")
    assert f["status"] == "fail"
    assert f["summary"] == "all_reduce on rank 1 (a): got 5, expected 3"


def test_timed_out_collective_is_reported_once():
    records = small(2)
    records[0]["collectives"]["all_reduce"] = {"status": "error", "summary": "late"}
    records[0]["errors"] = [{"phase": "collectives", "message": "all_reduce: late"}]
    f = finding(fleet.aggregate(records, 2), "fleet.collectives")
    assert f["summary"] == "all_reduce on rank 0 (a): late"


def test_gloo_fallback_on_gpu_ranks_is_a_warning():
    records = small(2)
    for r in records:
        r["backend"], r["backend_fallback"] = "gloo", "NCCL not usable on ranks 1 (cuda)"
    f = finding(fleet.aggregate(records, 2), "fleet.collectives")
    assert f["status"] == "warn" and "fallback" in f["summary"] and f["remedies"]


def test_torch_version_disagreement_fails_with_a_pinned_reinstall():
    records = small(3, r2={"versions__torch": "2.10.0+cu128", "versions__nccl": "2.26.2"})
    f = finding(validate(fleet.aggregate(records, 3)), "fleet.versions")
    assert f["status"] == "fail" and f["details"]["ranks"] == [2]
    assert (
        "torch differs: 2.11.0+cu130 on ranks 0-1 (a); 2.10.0+cu128 on rank 2 (a)" in f["summary"]
    )
    assert "NCCL differs" in f["summary"]
    cmds = [c for r in f["remedies"] for c in r["commands"]]
    assert (
        "python -m pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"
        in cmds
    )


def test_a_tie_keeps_rank_0_as_the_reference():
    records = small(2, r1={"versions__python": "3.12.1"})
    f = finding(fleet.aggregate(records, 2), "fleet.versions")
    assert f["details"]["ranks"] == [1]


def test_mixed_gpu_models_warn():
    records = small(
        2, r1={"device__name": "NVIDIA A100-SXM4-40GB", "device__memory_total_bytes": 42949672960}
    )
    f = finding(fleet.aggregate(records, 2), "fleet.devices")
    assert f["status"] == "warn" and f["details"]["ranks"] == [1]
    assert "GPU memory differs" in f["summary"]


def test_cpu_fleet_skips_device_comparison_and_a_single_rank_has_no_bandwidth():
    rec = rank_record(0, "a", 0, 1, device__type="cpu", device__name="cpu")
    rec["bandwidth"] = []
    doc = validate(fleet.aggregate([rec], 1))
    assert finding(doc, "fleet.devices")["status"] == "skip"
    assert finding(doc, "fleet.bandwidth")["status"] == "skip"
    assert finding(doc, "fleet.checks")["status"] == "skip"


def test_fail_on_warn_turns_a_slow_rank_into_exit_1():
    records = cluster(nodes=2, per_node=2, slow_rank=3)
    assert fleet.aggregate(records, 4)["exit_code"] == 0
    assert fleet.aggregate(records, 4, fail_on="warn")["exit_code"] == 1


def test_reaggregate_rejects_what_is_not_a_fleet_report():
    with pytest.raises(ValueError, match="not a torchdoctor fleet report"):
        fleet.reaggregate({"schema_version": 1, "checks": []})


# --------------------------------------------------------------------------- small pieces


def test_rank_ranges_and_where():
    assert fleet_common.rank_ranges([7, 0, 1, 2, 5, 8]) == "0-2,5,7-8"
    assert fleet_common.where([3], {3: "n0"}) == "rank 3 (n0)"
    hosts = {r: f"n{r // 2}" for r in range(10)}
    assert fleet_common.where(list(range(10)), hosts) == "ranks 0-9 (n0, n1, n2 and 2 more)"


def test_bus_bandwidth_follows_nccl_tests():
    m = bandwidth.measure("all_reduce", 1_000_000_000, 0.5, 8)
    assert m["algbw_gbps"] == 2.0 and m["busbw_gbps"] == 3.5  # 2 * 2(n-1)/n
    assert bandwidth.measure("all_gather", 10**9, 1.0, 4)["busbw_gbps"] == 0.75
    assert bandwidth.measure("broadcast", 10**9, 1.0, 4)["busbw_gbps"] == 1.0
    assert bandwidth.parse_sizes("64K, 4M,1G,512") == [65536, 4 << 20, 1 << 30, 512]
    with pytest.raises(ValueError, match="'4X' is not a size"):
        bandwidth.parse_sizes("4X")


def test_launch_from_torchrun_and_srun_environments():
    env = {"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8"}
    env.update(MASTER_ADDR="n0", MASTER_PORT="29500")
    got = launch.from_env(env)
    assert (got.rank, got.world_size, got.local_rank, got.launcher) == (3, 16, 3, "torchrun")
    assert launch.from_env({}) is None
    slurm = {"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1"}
    with pytest.raises(launch.LaunchError, match="export MASTER_ADDR and MASTER_PORT"):
        launch.from_env(slurm)
    got = launch.from_env({**slurm, "MASTER_ADDR": "n0", "MASTER_PORT": "29500"})
    assert (got.rank, got.world_size, got.local_rank, got.launcher) == (9, 16, 1, "srun")
    exported: dict[str, str] = {}
    launch.export_for_env_rendezvous(got, exported)
    assert exported == {"RANK": "9", "WORLD_SIZE": "16", "LOCAL_RANK": "1"}


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"WORLD_SIZE": "1000000000"},
            "WORLD_SIZE is '1000000000': it must be an integer from 1 to",
        ),
        ({"RANK": "3", "WORLD_SIZE": "2"}, "RANK is '3': it must be an integer from 0 to 1"),
        ({"WORLD_SIZE": "-1"}, "WORLD_SIZE is '-1': it must be an integer from 1 to"),
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE is '0': it must be an integer from 1 to"),
        ({"WORLD_SIZE": "two"}, "WORLD_SIZE is 'two': it must be an integer"),
        ({"MASTER_PORT": "abc"}, "MASTER_PORT is 'abc': it must be an integer from 1 to 65535"),
        ({"MASTER_PORT": "99999"}, "MASTER_PORT is '99999': it must be an integer from 1 to 65535"),
        ({"MASTER_PORT": ""}, "MASTER_PORT not set"),
        (
            {"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"},
            "LOCAL_RANK is '2': it must be an integer from 0 to 1",
        ),
        ({"LOCAL_WORLD_SIZE": "3"}, "LOCAL_WORLD_SIZE is '3': it must be an integer from 1 to 2"),
        ({"RANK": None}, "RANK is not set"),
    ],
)
def test_bad_launcher_variables_are_exit_2_naming_the_variable(variables, message):
    """WORLD_SIZE=1000000000 exhausted memory, RANK=3 WORLD_SIZE=2 waited 66 s, WORLD_SIZE=-1 was a
    ZeroDivisionError: each is now one line on stderr and exit 2, before torch is imported."""
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    env.update(variables)
    clean = {k: v for k, v in os.environ.items() if k not in env and not k.startswith("SLURM_")}
    clean.update({k: v for k, v in env.items() if v is not None})
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "dist", "--collective-timeout", "5"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean,
        cwd=REPO,
    )
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert time.monotonic() - t0 < 20  # no rendezvous was attempted


def test_srun_rank_outside_its_job_is_a_launch_error():
    slurm = {"SLURM_PROCID": "5", "SLURM_NTASKS": "2", "MASTER_ADDR": "n0", "MASTER_PORT": "1"}
    with pytest.raises(
        launch.LaunchError, match="SLURM_PROCID is '5': it must be an integer from 0 to 1"
    ):
        launch.from_env(slurm)
    with pytest.raises(launch.LaunchError, match="SLURM_NTASKS is '0'"):
        launch.from_env({**slurm, "SLURM_NTASKS": "0"})


def test_within_gives_up_on_a_call_that_does_not_return():
    import threading

    never = threading.Event()
    with pytest.raises(TimeoutError, match="stuck all_reduce did not finish within 0 s"):
        within(0.05, "stuck all_reduce", never.wait)
    assert within(5, "quick", lambda x: x * 2, 21) == 42
    with pytest.raises(KeyError):
        within(5, "raises", {}.__getitem__, "k")


def test_the_fleet_side_never_imports_torch():
    code = (
        "import sys, torchdoctor.cli, torchdoctor.cluster.fleet, torchdoctor.cluster.render, "
        "torchdoctor.cluster.worker; assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


# --------------------------------------------------------------------------- the CLI, without torchrun


def test_dist_outside_a_launcher_is_a_usage_error():
    r = run_cli("dist")
    assert r.returncode == 2
    assert "torchrun --standalone --nproc-per-node=8 -m torchdoctor dist" in r.stderr


def test_replay_judges_a_recorded_fleet_report(tmp_path):
    doc = fleet.aggregate(cluster(nodes=2, per_node=2, old_driver_node=1), 4)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(doc))
    r = run_cli("dist", "--replay", str(path))
    assert r.returncode == 1, r.stderr
    assert "cuda.driver" in r.stdout and "node1" in r.stdout
    r = run_cli("dist", "--replay", str(path), "--json", "--skip", "nonexistent")
    assert r.returncode == 2 and "unknown check id" in r.stderr
    r = run_cli("dist", "--replay", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "cannot replay" in r.stderr


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda recs: recs[:2], "absent from the report"),
        (lambda recs: [*recs, copy.deepcopy(recs[0])], "reported more than once"),
        (lambda recs: [*recs[:-1], {**copy.deepcopy(recs[-1]), "rank": -1}], "outside 0..3"),
    ],
)
def test_a_fleet_that_does_not_add_up_fails(mutate, needle):
    doc = fleet.aggregate(mutate(cluster(2, 2)), 4)
    ranks = finding(doc, "fleet.ranks")
    assert ranks["status"] == "fail" and needle in ranks["summary"]
    assert doc["exit_code"] == 1


def test_replayed_fleet_findings_are_shared_findings_and_can_be_silenced(tmp_path):
    doc = fleet.aggregate(cluster(nodes=2, per_node=2, old_driver_node=1), 4)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(doc))
    r = run_cli("dist", "--replay", str(path), "--json")
    replayed = validate(json.loads(r.stdout))
    failing = {f["id"] for f in replayed["findings"] if f["level"] == "error"}
    assert "cuda.driver" in failing and replayed["command"] == "dist"
    node = next(f for f in replayed["findings"] if f["id"] == "cuda.driver")
    assert node["subject"].startswith("ranks ") and node["doc"].endswith("checks/cuda.driver.md")
    r = run_cli("dist", "--replay", str(path), "--json", "--ignore", ",".join(failing))
    quiet = validate(json.loads(r.stdout))
    assert r.returncode == 0 and quiet["summary"]["silenced"] == len(failing)
