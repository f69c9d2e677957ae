"""nvcc older than the GPU it builds for (extensions.nvcc-too-old-for-gpu): "nvcc fatal :
Unsupported gpu architecture 'compute_86'" (Ruyi-Zha/naf_cbct#15: a CUDA 11.0 nvcc on an RTX
3090; deepspeedai/DeepSpeed#607 and NVIDIA/apex#1296 the same)."""

from __future__ import annotations

import json

from .conftest import REPO, judge_facts

FINDING = "extensions.nvcc-too-old-for-gpu"


def _facts(tmp_path, **changes) -> list[dict]:
    facts = json.loads((REPO / "tests" / "facts" / "nvcc_mismatch.json").read_text())
    for dotted, value in changes.items():
        node = facts
        *parents, last = dotted.split("__")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return judge_facts(tmp_path, facts)


RTX3090 = {
    "torch__version": "1.8.1+cu111",
    "torch__build__cuda": "11.1",
    "torch__build__arch_list": ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"],
    "toolchain__nvcc__release": "11.0",
    "toolchain__nvcc__version": "11.0.221",
    "toolchain__toolkits": [
        {"path": "/usr/local/cuda-11.0", "release": "11.0", "has_headers": True}
    ],
    "nvml__devices__0__name": "NVIDIA GeForce RTX 3090",
    "nvml__devices__0__capability": [8, 6],
}


def test_naf_cbct_15_cuda_11_0_nvcc_on_an_rtx_3090_unsupported_gpu_architecture_compute_86(
    tmp_path,
):
    [found] = [f for f in _facts(tmp_path, **RTX3090) if f["id"] == FINDING]
    assert "compute_86" in found["message"] and "11.1" in found["message"]
    commands = [c for r in found["remedies"] for c in r["commands"]]
    assert "sudo apt-get install -y cuda-toolkit-11-1" in commands


def test_an_installed_toolkit_that_knows_the_gpu_is_pointed_at(tmp_path):
    kits = [
        {"path": "/usr/local/cuda-11.0", "release": "11.0", "has_headers": True},
        {"path": "/usr/local/cuda-11.1", "release": "11.1", "has_headers": True},
    ]
    [found] = [
        f
        for f in _facts(tmp_path, **{**RTX3090, "toolchain__toolkits": kits})
        if f["id"] == FINDING
    ]
    assert found["remedies"][0]["commands"][0] == "export CUDA_HOME=/usr/local/cuda-11.1"


def test_a_gpu_above_torchs_own_arch_list_is_left_to_the_wheel_checks(tmp_path):
    """torch 1.7.1+cu110 (sm_80 at most) on an RTX 3090: the wheel itself lacks sm_86, which
    cuda.devices reports; cpp_extension's target is not this check's to guess."""
    facts = {**RTX3090, "torch__build__arch_list": ["sm_37", "sm_50", "sm_60", "sm_70", "sm_80"]}
    assert not [f for f in _facts(tmp_path, **facts) if f["id"] == FINDING]


def test_an_nvcc_that_knows_the_gpu_is_quiet(tmp_path):
    facts = {**RTX3090, "toolchain__nvcc__release": "11.1", "toolchain__nvcc__version": "11.1.105"}
    assert not [f for f in _facts(tmp_path, **facts) if f["id"] == FINDING]
