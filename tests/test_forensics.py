"""Issue 5: the libraries torch loaded, variables that bite, extension toolchain, ROCm, XPU."""

from __future__ import annotations

import json
import os

import pytest

from torchdoctor.check import engine, requirements
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.data import alloc_conf
from torchdoctor.probes import toolchain
from torchdoctor.probes.child import libs_probe
from torchdoctor.report.findings import Selection
from torchdoctor.report.result import Status

from .conftest import needs_torch, on_a_cpu_machine, run_cli


def judge(facts: dict, check_id: str, expect: str = "auto"):
    result = engine.run_check(by_id()[check_id], read_facts(facts), Context(expect=expect))
    if result.status in (Status.WARN, Status.FAIL):
        assert result.remedies, (check_id, result.summary)
    return result


def commands(result) -> list[str]:
    return [c for r in result.remedies for c in r.commands]


# --------------------------------------------------------------------------- torch.libs


def test_shadowing_system_cudart_fails_with_filtered_ld_library_path(facts):
    result = judge(facts("libs_shadowed_cudart"), "torch.libs")
    assert result.status == Status.FAIL
    assert "libcudart.so.13.0.48" in result.summary and "LD_LIBRARY_PATH" in result.summary
    # Only the shadowing entry is dropped; the unrelated one is kept.
    assert "export LD_LIBRARY_PATH=/opt/tools/lib" in commands(result)


def test_missing_cudnn_wheel_is_found_even_though_torch_cannot_import(facts):
    result = judge(facts("cudnn_wheel_missing"), "torch.libs")
    assert result.status == Status.FAIL
    assert "nvidia-cudnn-cu13==9.19.0.56" in result.summary
    assert any("--no-deps nvidia-cudnn-cu13==9.19.0.56" in c for c in commands(result))


def test_version_mismatched_nvidia_wheel_warns_with_the_pin(facts):
    f = facts("env_misconfigured")
    f["packages"]["nvidia_wheels"]["nvidia-nccl-cu13"] = "2.26.2"
    result = judge(f, "torch.libs")
    assert result.status == Status.WARN
    assert "nvidia-nccl-cu13 2.26.2" in result.summary and "2.27.7" in result.summary
    assert any("nvidia-nccl-cu13==2.27.7" in c for c in commands(result))


def test_half_uninstalled_wheel_and_cudnn_runtime_mismatch_fail(facts):
    f = facts("env_misconfigured")
    f["torch"]["libs"]["nvidia_wheel_files"]["nvidia-cudnn-cu13"]["missing"] = [
        "nvidia/cudnn/lib/libcudnn_graph.so.9"
    ]
    f["torch"]["libs"]["cudnn"]["runtime"] = [9, 1, 0]
    result = judge(f, "torch.libs")
    assert result.status == Status.FAIL
    assert "half-uninstalled" in result.summary and "cuDNN 9.1.0" in result.summary


def test_ld_preload_of_a_cuda_library_fails(facts):
    f = facts("env_misconfigured")
    path = "/usr/local/cuda/lib64/libcudart.so.13"
    f["torch"]["libs"]["ld_preload"] = [{"path": path, "component": "cudart"}]
    lib = next(x for x in f["torch"]["libs"]["loaded"] if x["component"] == "cudart")
    lib.update(path=path, origin="system", wheel=None)
    result = judge(f, "torch.libs")
    assert result.status == Status.FAIL and "LD_PRELOAD" in result.summary
    # LD_PRELOAD is not set in this environment: the preload came from /etc/ld.so.preload, and
    # `unset LD_PRELOAD` would change nothing (issue 25: no side remedy without evidence).
    assert "unset LD_PRELOAD" not in commands(result)
    assert "cat /etc/ld.so.preload" in commands(result)
    f["env"]["LD_PRELOAD"] = path
    assert "unset LD_PRELOAD" in commands(judge(f, "torch.libs"))


def test_healthy_wheel_set_passes_and_names_paths(facts):
    result = judge(facts("env_misconfigured"), "torch.libs")
    assert result.status == Status.PASS
    assert "nvidia/cudnn/lib: libcudnn.so.9" in result.summary


def test_new_checks_skip_on_facts_recorded_before_them(facts):
    f = facts("cpu_linux")
    del f["torch"]["libs"], f["toolchain"]  # as an older torchdoctor recorded them
    for cid in ("torch.libs", "extensions", "rocm", "xpu"):
        assert judge(f, cid).status == Status.SKIP, cid
    assert judge(f, "env").status == Status.PASS


# --------------------------------------------------------------------------- env


def test_allocator_typo_and_stale_launch_blocking(facts):
    result = judge(facts("env_misconfigured"), "env")
    assert result.status == Status.FAIL
    assert "expandable_segment" in result.summary and "CUDA_LAUNCH_BLOCKING=1" in result.summary
    cmds = commands(result)
    assert "export PYTORCH_ALLOC_CONF=expandable_segments:True" in cmds
    assert "unset CUDA_LAUNCH_BLOCKING" in cmds


def test_accepted_launch_blocking_is_silenced_alone_and_the_allocator_typo_still_fails(facts):
    """Each variable's problem is its own finding: a CI job that keeps CUDA_LAUNCH_BLOCKING=1 on
    purpose ignores env.launch-blocking and still hears about the misspelt allocator key."""
    report = engine.diagnose(
        read_facts(facts("env_misconfigured")),
        Context(),
        engine.select(["env"]),
        selection=Selection(ignore=("env.launch-blocking",)),
    )
    kept, silenced = report.findings()
    assert [(f.id, f.level) for f in kept] == [("env.alloc-conf-invalid", "error")]
    assert silenced == 1
    assert "expandable_segment" in kept[0].message
    assert "export PYTORCH_ALLOC_CONF=expandable_segments:True" in kept[0].remedies[0]["commands"]


@pytest.mark.parametrize(
    ("env", "status", "needle"),
    [
        ({"CUDA_VISIBLE_DEVICES": ""}, Status.FAIL, "hides every GPU"),
        ({"CUDA_VISIBLE_DEVICES": "0,3"}, Status.FAIL, "index 3 does not exist"),
        ({"CUDA_VISIBLE_DEVICES": "GPU-deadbeef"}, Status.FAIL, "matches no GPU"),
        ({"CUDA_VISIBLE_DEVICES": "MIG-1a2b3c4d-aaaa,MIG-1a2b3c4d-bbbb"}, Status.WARN, "MIG"),
        ({"CUDA_VISIBLE_DEVICES": "GPU-1a2b3c4d-0000"}, Status.PASS, "CUDA_VISIBLE_DEVICES ok"),
        # 2.11.0's libc10.so no longer holds the deprecation message (only 2.9.1's does)
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, Status.PASS, "ok"),
        (
            {"PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync,max_split_size_mb:512"},
            Status.PASS,
            "ok",
        ),
        ({"OMP_NUM_THREADS": "64"}, Status.WARN, "oversubscribe"),
        ({"NCCL_DEBUG": "INFO"}, Status.WARN, "NCCL_DEBUG=INFO"),
        ({"HSA_OVERRIDE_GFX_VERSION": "gfx1030"}, Status.WARN, "MAJOR.MINOR.STEP"),
    ],
)
def test_env_variables_judged(facts, env, status, needle):
    f = facts("h100_healthy")
    f["env"].update(env)
    result = judge(f, "env")
    assert result.status == status, result.summary
    assert needle in result.summary


def test_pytorch_cuda_alloc_conf_is_deprecated_use_pytorch_alloc_conf_only_on_2_9_comfyui_10386(
    facts,
):
    # Comfy-Org/ComfyUI#10386 quotes the warning on 2.9.0; the 2.10.0 wheel no longer holds it.
    f = facts("h100_healthy")
    f["env"]["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    for version, status in (("2.9.0+cu130", Status.WARN), ("2.10.0+cu130", Status.PASS)):
        f["torch"]["version"] = version
        result = judge(f, "env")
        assert result.status == status, (version, result.summary)
    assert "deprecated" not in result.summary


def test_device_order_warns_on_mixed_gpus(facts):
    f = facts("cpu_wheel_on_gpu")
    f["nvml"]["devices"][1]["name"] = "NVIDIA GeForce RTX 4090"
    result = judge(f, "env")
    assert result.status == Status.WARN and "mixed GPUs" in result.summary
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in commands(result)


def test_env_report_never_carries_unlisted_variables(facts):
    f = facts("env_misconfigured")
    f["env"]["AWS_SECRET_ACCESS_KEY"] = "hunter2"  # not whitelisted: must not be echoed
    result = judge(f, "env")
    assert "hunter2" not in json.dumps(result.details) + result.summary


# --------------------------------------------------------------------------- extensions, ROCm, XPU


def test_nvcc_12_1_against_cu130_torch_fails(facts):
    result = judge(facts("nvcc_mismatch"), "extensions")
    assert result.status == Status.FAIL
    assert "nvcc 12.1" in result.summary and "13.0" in result.summary
    cmds = commands(result)
    assert "conda install -c nvidia cuda-toolkit=13.0" in cmds
    assert any("whl/cu126" in c for c in cmds)  # torch 2.11's CUDA 12 wheel nearest to 12.1


def test_nvcc_major_mismatch_and_missing_ninja_are_two_findings_each_with_its_fix(facts):
    """'The detected CUDA version (12.1) mismatches ...' and 'Ninja is required to load C++
    extensions' are two fixes: each its own finding, the mismatch still failing alone."""
    f = facts("nvcc_mismatch")
    f["toolchain"]["ninja"] = {}
    report = engine.diagnose(
        read_facts(f),
        Context(),
        engine.select(["extensions"]),
        selection=Selection(ignore=("extensions.no-ninja",)),
    )
    (check,) = report.checks
    assert [p.code for p in check.problems] == ["nvcc-major-mismatch", "no-ninja"]
    assert "install ninja" in check.problems[1].remedies[0].commands[0]
    kept, silenced = report.findings()
    assert [x.id for x in kept] == ["extensions.nvcc-major-mismatch"] and silenced == 1
    assert kept[0].level == "error"


def test_nvcc_minor_mismatch_warns_and_a_matching_toolkit_is_offered(facts):
    f = facts("nvcc_mismatch")
    f["toolchain"]["nvcc"]["release"] = "13.1"
    f["toolchain"]["toolkits"].append(
        {"path": "/usr/local/cuda-13.0", "release": "13.0", "has_headers": True}
    )
    result = judge(f, "extensions")
    assert result.status == Status.WARN and "minor" in result.summary
    assert "export CUDA_HOME=/usr/local/cuda-13.0" in commands(result)


def test_arch_list_missing_the_gpu_and_no_ninja_warn(facts):
    f = facts("nvcc_mismatch")
    f["toolchain"]["nvcc"]["release"] = "13.0"
    f["toolchain"]["ninja"] = {"name": "ninja", "path": None}
    f["env"]["TORCH_CUDA_ARCH_LIST"] = "8.0;8.6"
    result = judge(f, "extensions")
    assert result.status == Status.WARN
    assert "9.0" in result.summary and "ninja" in result.summary
    assert 'export TORCH_CUDA_ARCH_LIST="9.0"' in commands(result)


def test_accepted_missing_ninja_is_silenced_alone_and_the_nvcc_12_1_mismatch_still_fails(facts):
    """Each extension-build problem is its own finding: a setup.py-only project that never calls
    load() ignores extensions.no-ninja and still hears that nvcc 12.1 cannot build for cu130."""
    f = facts("nvcc_mismatch")
    f["toolchain"]["ninja"] = {"name": "ninja", "path": None}
    report = engine.diagnose(
        read_facts(f),
        Context(),
        engine.select(["extensions"]),
        selection=Selection(ignore=("extensions.no-ninja",)),
    )
    kept, silenced = report.findings()
    assert [(x.id, x.level) for x in kept] == [("extensions.nvcc-major-mismatch", "error")]
    assert silenced == 1
    assert "major versions differ" in kept[0].message
    assert "conda install -c nvidia cuda-toolkit=13.0" in kept[0].remedies[0]["commands"]


def test_cpu_torch_beside_nvcc_warns_only_when_cuda_is_expected(facts):
    f = facts("nvcc_mismatch")
    f["torch"]["build"].update(variant="cpu", cuda=None)
    assert judge(f, "extensions").status == Status.PASS
    result = judge(f, "extensions", expect="cuda")
    assert result.status == Status.WARN and "CPU build of torch" in result.summary
    assert [p.code for p in result.problems] == ["toolkit-cpu-torch"]


def test_rocm_gfx1031_not_in_targets_offers_the_override(facts):
    result = judge(facts("rocm_gfx1031"), "rocm")
    assert result.status == Status.FAIL and "gfx1031" in result.summary
    assert "export HSA_OVERRIDE_GFX_VERSION=10.3.0" in commands(result)
    f = facts("rocm_gfx1031")
    f["torch"]["rocm"]["nodes"]["kfd"]["rw"] = False
    f["torch"]["cuda"]["devices"][0]["gcn_arch_name"] = "gfx1030:sramecc-:xnack-"
    result = judge(f, "rocm")
    assert result.status == Status.FAIL and "/dev/kfd" in result.summary
    assert "sudo usermod -aG render $USER" in commands(result)


def test_xpu_build_without_devices(facts):
    result = judge(facts("xpu_no_devices"), "xpu")
    assert result.status == Status.FAIL and "renderD128" in result.summary
    f = facts("xpu_no_devices")
    f["torch"]["xpu"]["nodes"]["render"] = []
    result = judge(f, "xpu")
    assert result.status == Status.WARN
    assert any("whl/cpu" in c for c in commands(result))


# --------------------------------------------------------------------------- helpers


def test_alloc_conf_parser():
    assert (
        alloc_conf.problems("expandable_segments:True,roundup_power2_divisions:[256:1,>:4]") == []
    )
    assert alloc_conf.corrected("expandable_segments:true,max_split_size_mb:10") == (
        "expandable_segments:True,max_split_size_mb:20"
    )
    assert alloc_conf.problems("garbage_collection_threshold:1.5")
    assert alloc_conf.problems("nonsense")[0].key == ""


def test_requirement_pins_and_markers():
    req = requirements.parse('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"')
    assert (req.name, req.pinned) == ("nvidia-cudnn-cu12", "9.10.2.21")
    linux = requirements.marker_env("Linux", "x86_64", "3.11.7")
    assert requirements.applies(req.marker, linux) is True
    assert (
        requirements.applies(req.marker, requirements.marker_env("Darwin", "arm64", "3.12"))
        is False
    )
    assert requirements.applies('extra == "opt-einsum"', linux) is False
    assert requirements.applies('python_version >= "3.12"', linux) is False
    assert requirements.applies('implementation_name == "cpython"', linux) is None
    assert requirements.parse("filelock").pinned is None


def test_maps_parsing_and_origin():
    maps = (
        "7f0-7f1 r-xp 0 08:01 1 /usr/local/cuda-12.1/lib64/libcudart.so.12.1.105\n"
        "7f1-7f2 r--p 0 08:01 1 /usr/local/cuda-12.1/lib64/libcudart.so.12.1.105\n"
        "7f2-7f3 r-xp 0 08:01 2 /venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (deleted)\n"
        "7f3-7f4 rw-p 0 00:00 0 [heap]\n"
    )
    paths = libs_probe.mapped_paths(maps)
    assert paths == [
        "/usr/local/cuda-12.1/lib64/libcudart.so.12.1.105",
        "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
    ]
    assert [libs_probe.component(p) for p in paths] == ["cudart", "cudnn"]
    assert libs_probe.origin(paths[0], "/venv/lib/python3.11/site-packages/torch") == "system"
    assert libs_probe.origin(paths[1], "/venv/lib/python3.11/site-packages/torch") == "wheel"
    assert libs_probe.component("libgomp-a34b3233.so.1") == "openmp"


def test_cuda_home_resolution_follows_cpp_extension():
    def which(path):
        return lambda name: path if name == "nvcc" else None

    def no(_):
        return False

    assert (
        toolchain.resolve_cuda_home({"CUDA_PATH": "/opt/cuda"}, which(None), no)[0] == "/opt/cuda"
    )
    # A wrapper nvcc in /usr/local/bin makes torch use CUDA_HOME=/usr/local (no headers there).
    assert toolchain.resolve_cuda_home({}, which("/usr/local/bin/nvcc"), no)[0] == "/usr/local"
    assert toolchain.resolve_cuda_home({}, which(None), lambda p: True)[0] == "/usr/local/cuda"
    assert toolchain.resolve_cuda_home({}, which(None), no)[0] is None


# --------------------------------------------------------------------------- end to end


@needs_torch
@on_a_cpu_machine  # with a GPU, the misspelt allocator key is an error (seen on an H100)
def test_end_to_end_on_this_machine_with_bad_variables():
    env = {
        "PYTORCH_ALLOC_CONF": "expandable_segment:True",
        "CUDA_LAUNCH_BLOCKING": "1",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    }
    proc = run_cli("check", "--json", "--no-smoke", "--only", "torch.libs,env,extensions", env=env)
    assert proc.returncode == 0, proc.stderr  # warnings only: a CPU build of torch
    doc = json.loads(proc.stdout)
    checks = {c["id"]: c for c in doc["checks"]}
    libs = checks["torch.libs"]
    assert libs["status"] == "pass"
    import torch

    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    loaded = {x["path"]: x for x in libs["details"]["loaded"]}
    assert os.path.join(torch_lib, "libtorch_cpu.so") in loaded
    if not torch.version.cuda:  # the CPU wheel: OpenMP from torch/lib, MKL/oneDNN static
        assert any(x["component"] == "openmp" and x["origin"] == "torch" for x in loaded.values())
        assert any(s.startswith("MKL ") for s in libs["details"]["static"])
    assert checks["env"]["status"] == "warn"  # CPU build: the typo cannot crash anything yet
    assert "expandable_segments:True" in json.dumps(checks["env"]["remedies"])
    ext = checks["extensions"]
    nvcc = doc["facts"]["toolchain"].get("nvcc", {})
    if nvcc.get("ok") and not torch.version.cuda:
        assert ext["status"] == "pass" and f"nvcc {nvcc['release']}" in ext["summary"]
        assert "CPU build" in ext["summary"]
    assert doc["facts"]["torch"]["libs"]["maps_available"] is True
