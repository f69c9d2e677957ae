"""Pure helpers: compatibility tables, arch rules, cgroup parsing, redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.data import archs, compat
from torchdoctor.probes.host import cgroup_limits, selected_env
from torchdoctor.report.redact import redact


@pytest.mark.parametrize(
    ("driver", "cuda", "verdict"),
    [
        ("580.159.04", "13.0", "full"),
        ("580.65.06", "13.0", "full"),
        ("575.57.08", "13.0", "too_old"),
        ("535.183.01", "12.8", "minor_compat"),
        ("535.183.01", "12.2", "full"),
        ("520.61.05", "12.1", "too_old"),
        ("470.82.01", "11.8", "minor_compat"),
        ("", "12.8", "unknown"),
    ],
)
def test_driver_support(driver, cuda, verdict):
    assert compat.driver_support(driver, cuda) == verdict


def _pick(torch, driver, caps=()):
    choice = compat.pick_wheel(torch, driver, list(caps))
    return (choice.release, choice.variant, choice.support) if choice else None


def test_pick_wheel_prefers_this_release_and_full_support():
    assert _pick("2.11.0", "580.159.04") == ("2.11", "cu130", "full")
    assert _pick("2.11.0", "570.133.20") == ("2.11", "cu128", "full")
    assert _pick("2.13.0", "570.133.20") == ("2.13", "cu126", "full")
    # 535 fully serves none of 2.13's variants; 13.x needs >= 580, so the newest one it runs at
    # all is cu126, through 12.x minor-version compatibility (floor 525.60.13).
    assert _pick("2.13.0", "535.183.01") == ("2.13", "cu126", "minor_compat")


def test_pick_wheel_never_offers_what_the_driver_cannot_run():
    # A 470 driver runs CUDA 11.x only: the last release with cu118 is 2.7.
    assert _pick("2.13.0", "470.256.02") == ("2.7", "cu118", "minor_compat")
    assert _pick("2.13.0", "390.0") is None


def test_pick_wheel_covers_the_gpu():
    assert _pick("2.13.0", "580.159.04", [(6, 0)]) == ("2.13", "cu126", "full")  # Pascal: cu126
    assert _pick("2.13.0", "470.256.02", [(3, 7)]) == ("2.7", "cu118", "minor_compat")  # K80
    assert _pick("2.13.0", "580.159.04", [(12, 0)]) == ("2.13", "cu130", "full")  # Blackwell
    # No Blackwell before 2.7 cu128: the smallest move up (issue 13: RTX 5090 on cu124).
    assert _pick("2.6.0", "580.159.04", [(12, 0)]) == ("2.7", "cu128", "full")


def test_pick_wheel_for_releases_outside_the_table():
    assert _pick("2.3.1", "520.61.05") == ("2.3", "cu118", "full")
    assert _pick("2.0.1", "580.159.04") == ("2.0", "cu118", "full")  # the table reaches 1.8
    assert _pick("1.7.1", "580.159.04")[0] == "1.8"  # older than the table: its oldest row
    assert _pick("2.99.0", "580.159.04")[0] == "2.15"  # newer than the table: its newest row


def test_driver_support_pads_short_versions():
    assert compat.driver_support("580", "13.0") == "minor_compat"
    assert compat.driver_support("580.65.06", "13.0") == "full"


@pytest.mark.parametrize(
    ("cap", "arch_list", "coverage"),
    [
        ((9, 0), ["sm_80", "sm_90"], "cubin"),
        ((8, 6), ["sm_80"], "cubin"),  # same major, higher minor runs the cubin
        ((8, 0), ["sm_86"], "none"),  # lower minor does not
        ((12, 0), ["sm_90", "compute_90"], "ptx"),
        ((6, 0), ["sm_75", "sm_80"], "none"),
        ((10, 0), ["sm_100a"], "cubin"),
        ((10, 3), ["sm_100a"], "none"),  # arch-specific cubins run on exactly one capability
        ((12, 1), ["sm_120"], "cubin"),
    ],
)
def test_arch_coverage(cap, arch_list, coverage):
    assert archs.coverage(cap, arch_list) == coverage


def _tree(tmp: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def test_cgroup_v2(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/job\n",
            "sys/fs/cgroup/cgroup.controllers": "cpu memory",
            "sys/fs/cgroup/job/cpu.max": "150000 100000",
            "sys/fs/cgroup/job/memory.max": "4294967296",
        },
    )
    assert cgroup_limits(root) == {"version": 2, "cpu_quota": 1.5, "memory_limit_bytes": 4 << 30}


def test_cgroup_v2_unlimited(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/\n",
            "sys/fs/cgroup/cgroup.controllers": "cpu memory",
            "sys/fs/cgroup/cpu.max": "max 100000",
            "sys/fs/cgroup/memory.max": "max",
        },
    )
    assert cgroup_limits(root) == {"version": 2, "cpu_quota": None, "memory_limit_bytes": None}


def test_cgroup_v1(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/docker/abc\n1:cpu,cpuacct:/docker/abc\n",
            "sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us": "200000",
            "sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us": "100000",
            "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824",
        },
    )
    assert cgroup_limits(root) == {"version": 1, "cpu_quota": 2.0, "memory_limit_bytes": 1 << 30}


def test_cgroup_v1_unlimited(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/\n1:cpu:/\n",
            "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1",
            "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
            "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712",
        },
    )
    assert cgroup_limits(root) == {"version": 1, "cpu_quota": None, "memory_limit_bytes": None}


def test_selected_env_never_records_other_variables():
    env = {"AWS_SECRET_ACCESS_KEY": "x", "CUDA_VISIBLE_DEVICES": "0", "HF_TOKEN": "y"}
    assert selected_env(env) == {"CUDA_VISIBLE_DEVICES": "0"}


def test_redact_removes_identity_and_gpu_ids():
    doc = {
        "a": "/home/alice/venv/bin/python on box7",
        "uuid": "GPU-1a2b3c4d-0000-1111-2222-333344445555",
        "nested": [{"serial": "1653220100000", "text": "MIG-1a2b3c4d-0000-1111-2222-333344445555"}],
        "n": 3,
    }
    out = redact(doc, [("/home/alice", "~"), ("box7", "<host>"), ("alice", "<user>")])
    assert out["a"] == "~/venv/bin/python on <host>"
    assert out["uuid"] == "<redacted>"
    assert out["nested"][0] == {"serial": "<redacted>", "text": "MIG-<redacted>"}
    assert out["n"] == 3


def test_redact_hides_a_master_addr_naming_another_node_but_keeps_localhost(monkeypatch):
    from torchdoctor.report.redact import _identity

    monkeypatch.setenv("MASTER_ADDR", "gpu-node017.cluster.example")
    doc = {
        "env": {"MASTER_ADDR": "gpu-node017.cluster.example"},
        "m": "rendezvous at gpu-node017.cluster.example:29500",
    }
    out = redact(doc, _identity())
    assert out["env"]["MASTER_ADDR"] == "<redacted>"
    assert out["m"] == "rendezvous at <master>:29500"
    assert redact({"MASTER_ADDR": "localhost"}, []) == {"MASTER_ADDR": "localhost"}
