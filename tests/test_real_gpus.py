"""Real GPU machines, recorded: each lent to this project once and recorded by
scripts/gpu_record.sh, torch 2.11.0+cu130, torchvision 0.26.0+cu130, driver 580.159.04:

- h200: one NVIDIA H200 (2026-11-26, first session);
- h100: one NVIDIA H100 80GB HBM3 (2026-11-26, second session).

Everything here replays what those machines produced; nothing is constructed. Each was healthy
by construction of its image (the GPU tests in tests/test_gpu.py passed on it), so every finding
on it would be a false alarm.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from .conftest import FACTS_DIR, REPO, REPORT_SCHEMA, judge_facts, load_facts, run_cli

FLEET = FACTS_DIR / "fleet"
# machine -> its GPU's name, as NVML and torch give it
MACHINES = {"h200": "NVIDIA H200", "h100": "NVIDIA H100 80GB HBM3"}
machines = pytest.mark.parametrize("machine", sorted(MACHINES))


def paste(machine: str):
    return REPO / "tests" / "collect_env" / f"linux_torch2.11_cu130_{machine}_real_2026-11-26.txt"


@machines
def test_the_recorded_machine_is_judged_healthy_with_no_finding(tmp_path, machine):
    """Before the probe wrote torchvision's version.cuda (the int 13000) as '13.0', the H200
    failed torch.install: "torchvision 0.26.0 is built for the CPU but torch 2.11.0+cu130 for
    CUDA 13.0"."""
    facts = load_facts(f"{machine}_real")
    assert facts["torch"]["companions"]["torchvision"]["cuda"] == "13.0"
    assert facts["nvml"]["devices"][0]["name"] == MACHINES[machine]
    assert judge_facts(tmp_path, facts, "--expect", "cuda") == []


@machines
def test_the_recorded_smoke_figures_are_a_pcie5_hopper_gpus(machine):
    cuda = load_facts(f"{machine}_real")["smoke"]["devices"]["cuda:0"]
    assert cuda["transfer"]["roundtrip_pinned_exact"] is True
    assert 20 < cuda["transfer"]["h2d_pinned_gbps"] < 70  # PCIe 5.0 x16 tops out near 64
    assert all(d["ok"] for d in cuda["compute"]["dtypes"].values())
    assert cuda["memory"]["returned_mib"] >= cuda["memory"]["block_mib"]


@machines
def test_cuda_visible_devices_empty_is_one_finding_not_two(tmp_path, machine):
    """With CUDA_VISIBLE_DEVICES='' on the H200, cuda.available and env both reported "hides
    every GPU" as errors; the cause is reported once, by cuda.available."""
    facts = load_facts(f"{machine}_real_cuda_hidden")
    assert facts["env"]["CUDA_VISIBLE_DEVICES"] == ""
    found = judge_facts(tmp_path, facts)
    assert [(f["id"], f["level"]) for f in found] == [("cuda.available.hidden", "error")]
    assert "unset CUDA_VISIBLE_DEVICES" in found[0]["remedies"][0]["commands"]


@machines
def test_the_machines_own_collect_env_paste_reads_as_its_live_facts(machine):
    """The pasted report of a machine whose live facts are known: every field the paste holds
    must agree with what the probe saw, and a healthy paste must raise nothing."""
    proc = run_cli("check", "--facts", str(paste(machine)), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["findings"] == []
    pasted, live = doc["facts"], load_facts(f"{machine}_real")
    assert pasted["torch"]["version"] == live["torch"]["version"] == "2.11.0+cu130"
    assert pasted["torch"]["build"]["cuda"] == live["torch"]["build"]["cuda"]
    assert pasted["torch"]["build"]["arch_list"] == live["torch"]["build"]["arch_list"]
    assert pasted["nvml"]["driver_version"] == live["nvml"]["driver_version"]
    assert [d["name"] for d in pasted["nvml"]["devices"]] == [
        d["name"] for d in live["nvml"]["devices"]
    ]
    assert pasted["torch"]["cuda"]["devices"][0]["capability"] == [9, 0]
    assert pasted["platform"]["python_version"] == live["platform"]["python_version"]


def test_replayed_one_rank_nccl_fleet_passes():
    proc = run_cli("dist", "--replay", str(FLEET / "h200_one_rank_nccl.json"), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, REPORT_SCHEMA)
    status = {r["id"]: r["status"] for r in doc["results"]}
    assert status["fleet.collectives"] == "pass" and status["fleet.checks"] == "pass"
    assert doc["backend"] == "nccl"


@machines
def test_replayed_two_ranks_on_one_gpu_fleet_warns_and_counts_the_gpu_once(machine):
    """torchrun --nproc-per-node=2 on a one-GPU machine: gloo ran instead of NCCL, and the
    report says why ('Duplicate GPU detected') and how many ranks the host can take. Both real
    machines' reports said "fleet.devices: 2 × NVIDIA H100 80GB HBM3" for their one GPU; the two
    ranks share one UUID, and the GPU is now counted once."""
    fleet = FLEET / f"{machine}_two_ranks_one_gpu.json"
    proc = run_cli("dist", "--replay", str(fleet), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads(proc.stdout)
    result = {r["id"]: r for r in doc["results"]}
    coll = result["fleet.collectives"]
    assert coll["status"] == "warn"
    assert "ranks 0-1 on vm share one GPU (cuda:0)" in coll["summary"]
    assert "this host has 1 GPU(s)" in coll["summary"]
    assert any("--nproc-per-node" in c for r in coll["remedies"] for c in r["commands"])
    devices = result["fleet.devices"]["summary"]
    assert devices.startswith(f"2 ranks on 1 × {MACHINES[machine]}, "), devices


def test_cuda_13_alternatives_link_is_listed_once_and_dumped_facts_replay(tmp_path):
    """The H200 image has /usr/local/cuda-13 -> cuda-13.0 (NVIDIA's alternatives link). The
    probe listed it with release null, and `check --facts` then refused the machine's own
    --dump-facts file: "field 'toolchain.toolkits[0].release' must be a version like '12.4',
    got null". Now the link is listed once, a folder named without a release is read from its
    version.json, and a null release (files already written) is accepted."""
    from torchdoctor.probes.toolchain import installed_toolkits

    for name in ("cuda-13.0", "cuda-x"):
        (tmp_path / name / "bin").mkdir(parents=True)
        (tmp_path / name / "bin" / "nvcc").write_text("")
    (tmp_path / "cuda-x" / "version.json").write_text('{"cuda": {"version": "12.8.93"}}')
    (tmp_path / "cuda-13").symlink_to(tmp_path / "cuda-13.0")
    kits = installed_toolkits(str(tmp_path / "cuda-*"))
    assert [(k["path"].rsplit("/", 1)[1], k["release"]) for k in kits] == [
        ("cuda-13.0", "13.0"),
        ("cuda-x", "12.8"),
    ]
    recorded = load_facts("h200_real")["toolchain"]["toolkits"]
    assert recorded[0] == {"has_headers": True, "path": "/usr/local/cuda-13", "release": None}
