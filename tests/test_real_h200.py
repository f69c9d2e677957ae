"""A real GPU machine, recorded: one NVIDIA H200 with torch 2.11.0+cu130, torchvision 0.26.0+cu130
and driver 580.159.04, lent to this project once (2026-11-26) and recorded by
scripts/gpu_record.sh. Everything here replays what that machine produced; nothing is
constructed. Healthy by construction of the image (the GPU tests in tests/test_gpu.py passed on
it), so every finding on it would be a false alarm.
"""

from __future__ import annotations

import json

import jsonschema

from .conftest import FACTS_DIR, REPO, REPORT_SCHEMA, judge_facts, load_facts, run_cli

PASTE = REPO / "tests" / "collect_env" / "linux_torch2.11_cu130_h200_real_2026-11-26.txt"
FLEET = FACTS_DIR / "fleet"


def test_the_recorded_h200_is_judged_healthy_with_no_finding(tmp_path):
    """Before the probe wrote torchvision's version.cuda (the int 13000) as '13.0', this machine
    failed torch.install: "torchvision 0.26.0 is built for the CPU but torch 2.11.0+cu130 for
    CUDA 13.0"."""
    facts = load_facts("h200_real")
    assert facts["torch"]["companions"]["torchvision"]["cuda"] == "13.0"
    assert judge_facts(tmp_path, facts, "--expect", "cuda") == []


def test_the_recorded_smoke_figures_are_an_h200s():
    cuda = load_facts("h200_real")["smoke"]["devices"]["cuda:0"]
    assert cuda["transfer"]["roundtrip_pinned_exact"] is True
    assert 20 < cuda["transfer"]["h2d_pinned_gbps"] < 70  # PCIe 5.0 x16 tops out near 64
    assert all(d["ok"] for d in cuda["compute"]["dtypes"].values())
    assert cuda["memory"]["returned_mib"] >= cuda["memory"]["block_mib"]


def test_cuda_visible_devices_empty_is_one_finding_not_two(tmp_path):
    """With CUDA_VISIBLE_DEVICES='' on the H200, cuda.available and env both reported "hides
    every GPU" as errors; the cause is reported once, by cuda.available."""
    facts = load_facts("h200_real_cuda_hidden")
    assert facts["env"]["CUDA_VISIBLE_DEVICES"] == ""
    found = judge_facts(tmp_path, facts)
    assert [(f["id"], f["level"]) for f in found] == [("cuda.available.hidden", "error")]
    assert "unset CUDA_VISIBLE_DEVICES" in found[0]["remedies"][0]["commands"]


def test_the_h200s_own_collect_env_paste_reads_as_its_live_facts():
    """The pasted report of a machine whose live facts are known: every field the paste holds
    must agree with what the probe saw, and a healthy paste must raise nothing."""
    proc = run_cli("check", "--facts", str(PASTE), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["findings"] == []
    pasted, live = doc["facts"], load_facts("h200_real")
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


def test_replayed_two_ranks_on_one_gpu_fleet_warns_and_says_one_rank_per_gpu():
    """torchrun --nproc-per-node=2 on the one-GPU H200: gloo ran instead of NCCL, and the
    report says why ('Duplicate GPU detected') and how many ranks the host can take."""
    proc = run_cli("dist", "--replay", str(FLEET / "h200_two_ranks_one_gpu.json"), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    doc = json.loads(proc.stdout)
    coll = next(r for r in doc["results"] if r["id"] == "fleet.collectives")
    assert coll["status"] == "warn"
    assert "ranks 0-1 on vm share one GPU (cuda:0)" in coll["summary"]
    assert "this host has 1 GPU(s)" in coll["summary"]
    assert any("--nproc-per-node" in c for r in coll["remedies"] for c in r["commands"])


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
