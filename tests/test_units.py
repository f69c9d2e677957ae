"""Pure helpers: compatibility tables, arch rules, cgroup parsing, redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor import archs
from torchdoctor.data import compat
from torchdoctor.probes.host import cgroup_limits, selected_env
from torchdoctor.redact import redact


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


def test_best_variant_for_driver():
    assert compat.best_variant_for_driver("580.159.04", "2.11.0") == "cu130"
    assert compat.best_variant_for_driver("570.133.20", "2.11.0") == "cu128"
    assert compat.best_variant_for_driver("570.133.20", "2.13.0") == "cu126"
    assert compat.best_variant_for_driver("450.0", "2.13.0") is None


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
