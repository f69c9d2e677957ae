"""Failures people reported in public issue trackers, rebuilt as facts (tests/facts/), and the
verdict and fix they needed. CASES is the list of real-world cases: public report -> facts ->
expected verdict. One case (torchvision_nms_cpu_torch) was recorded on this machine."""

from __future__ import annotations

import copy

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context, wheel_fixes
from torchdoctor.check.record import load_facts as typed
from torchdoctor.check.record import read_facts
from torchdoctor.report.result import Status


def judge(facts: dict, check_id: str, expect: str = "auto"):
    return engine.run_check(by_id()[check_id], read_facts(facts), Context(expect=expect))


def commands(result) -> list[str]:
    return [c for r in result.remedies for c in r.commands]


# (public report, facts file, check, status, text in the summary, text in a command, never in a command)
CASES = [
    ("RTX 5090 sm_120 is not compatible with the current PyTorch installation (2.6 cu124)",
     "rtx5090_cu124_wheel", "cuda.devices", Status.FAIL, "sm 12.0",
     "torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128", "source"),
    ("RTX 5060 Ti: no kernel image is available (2.7 cu126, PyPI's default)",
     "rtx5060ti_cu126_wheel", "cuda.devices", Status.FAIL, "sm 12.0",
     "torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128", "source"),
    ("GTX 1080 sm_61 is not compatible (2.7 cu128 lists sm_75 and up)",
     "gtx1080_cu128_wheel", "cuda.devices", Status.FAIL, "torch 2.14.1 from https://download.pytorch.org/whl/cu126",
     "torch==2.7.0 --index-url https://download.pytorch.org/whl/cu126", "cu128"),
    ("Tesla K80: PyTorch no longer supports this GPU because it is too old",
     "k80_new_torch", "cuda.devices", Status.FAIL, "torch 2.7.1 from https://download.pytorch.org/whl/cu118",
     "torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118", "cu126"),
    ("Torch not compiled with CUDA enabled, driver 440 (CUDA 10.2 era), source build",
     "cpu_source_build_driver_440", "cuda.available", Status.FAIL, "Tesla T4",
     "torch==1.12.1+cu102 --extra-index-url https://download.pytorch.org/whl/cu102", "cu118"),
    ("torchaudio 2.0.2 beside torch 1.13.1: undefined symbol in libtorchaudio.so",
     "torch113_torchaudio2", "torch.install", Status.FAIL, "torchaudio 2.0.2 requires torch==2.0.1",
     "'torchaudio==0.13.1' --index-url https://download.pytorch.org/whl/cu117", "torch=="),
    ("pip install torch==2.13.0 torchvision: operator torchvision::nms does not exist",
     "torchvision_nms_cpu_torch", "torch.install", Status.FAIL, "operator torchvision::nms does not exist",
     "--no-deps 'torchvision==0.28.0' --index-url https://download.pytorch.org/whl/cpu", "cu130"),
    ("GeForce RTX 3090 sm_86 is not compatible: supports sm_37 sm_50 sm_60 sm_70 (1.8 cu102)",
     "rtx3090_cu102_wheel", "cuda.devices", Status.FAIL, "sm 8.6",
     "torch==1.8.1+cu111 -f https://download.pytorch.org/whl/torch_stable.html", "cu102"),
    ("NVIDIA H100 PCIe sm_90 is not compatible (1.13 cu117)",
     "h100_cu117_wheel", "cuda.devices", Status.FAIL, "sm 9.0",
     "torch==2.0.1 --index-url https://download.pytorch.org/whl/cu118", "cu117"),
    ("xFormers was built for PyTorch 2.1.1+cu121 (you have 2.2.0+cu121)",
     "xformers_other_torch", "torch.install", Status.FAIL, "xformers 0.0.23 requires torch==2.1.1",
     "install 'torch==2.2.0' xformers --index-url https://download.pytorch.org/whl/cu121", "2.1.1"),
    ("pip install -U torchvision beside torch 2.0.1: operator torchvision::nms does not exist",
     "torchvision_upgraded_alone", "torch.install", Status.FAIL, "requires torch==2.1.0, not 2.0.1",
     "--no-deps 'torchvision==0.15.2' --index-url https://download.pytorch.org/whl/cu118", "0.16"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("report", "name", "check_id", "status", "summary", "command", "never"),
    CASES,
    ids=[c[1] for c in CASES],
)
def test_public_report(facts, report, name, check_id, status, summary, command, never):
    result = judge(facts(name), check_id)
    assert result.status == status, result.summary
    assert summary in result.summary
    cmds = commands(result)
    assert any(command in c for c in cmds), cmds
    assert not any(never in c for c in cmds), cmds
    assert not any("source" in r.text for r in result.remedies), "a wheel exists: no source build"


def test_recorded_nms_case_names_the_variant_mismatch(facts):
    result = judge(facts("torchvision_nms_cpu_torch"), "torch.install")
    # PyPI's Linux torchvision 0.28.0 is the cu130 build; torch came from the local CPU wheel.
    assert "cu130 build" in result.summary and "2.13.0+cpu" in result.summary


def test_torch_1_13_with_torchaudio_2_fails_on_the_tables_alone(facts):
    f = facts("torch113_torchaudio2")
    del f["torch"]["companions"]
    f["packages"]["distributions"]["torchaudio"].pop("requires")
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL
    assert "torchaudio 2.0.2 is built for torch 2.0; torch 1.13.1 pairs with torchaudio 0.13.x" in (
        result.summary
    )


def test_torchaudio_beside_a_torch_with_no_torchaudio_release_says_remove_it(facts):
    f = facts("h100_healthy")
    f["torch"]["version"] = "2.13.0+cu130"
    f["packages"]["distributions"]["torchaudio"] = {"version": "2.11.0+cu130", "location": "/x"}
    result = judge(f, "torch.install")
    assert "has no torchaudio release" in result.summary
    assert commands(result)[0].endswith("uninstall -y torchaudio")


def test_triton_not_the_one_torch_pins(facts):
    f = facts("h100_healthy")
    f["packages"]["distributions"]["torch"]["requires"].append(
        'triton==3.5.0; platform_system == "Linux"'
    )
    f["packages"]["distributions"]["triton"] = {"version": "3.3.1", "location": "/x"}
    result = judge(f, "torch.install")
    assert "triton 3.3.1 is installed; torch 2.11.0 requires triton 3.5.0" in result.summary
    assert any("'triton==3.5.0'" in c for c in commands(result))


def test_companion_cuda_variant_differs_even_when_versions_match(facts):
    f = facts("h100_healthy")
    f["packages"]["distributions"]["torchvision"] = {"version": "0.26.0", "location": "/x"}
    f["torch"]["companions"] = {"torchvision": {"imported": True, "cuda_known": True, "cuda": None}}
    result = judge(f, "torch.install")
    assert "built for the CPU but torch 2.11.0+cu130 for CUDA 13.0" in result.summary


def test_driver_upgrade_comes_before_a_source_build(facts):
    # Constructed: an H100 (sm_90) on driver 450.51 (CUDA 11.0 GA), below every wheel with sm_90.
    f = copy.deepcopy(facts("h100_healthy"))
    f["nvml"]["driver_version"] = "450.51.05"
    fixes = wheel_fixes(typed(f), [(9, 0)], "Hopper needs sm_90.")
    assert "Upgrade the NVIDIA driver to 580.65.06" in fixes[0].text
    assert "whl/cu130" in fixes[1].commands[0]
    assert not any("source" in r.text for r in fixes)


def test_source_build_only_when_no_wheel_covers_the_gpu(facts):
    # A GTX 680 (sm_30): no pip wheel from 1.8 on lists it (sm_37 cubins do not run on 3.0).
    fixes = wheel_fixes(typed(facts("h100_healthy")), [(3, 0)], "Kepler GK104.")
    assert len(fixes) == 1 and "build torch from source" in fixes[0].text


def test_error_804_forward_compatibility_on_non_supported_hw(facts):
    f = facts("error804_geforce_compat")
    for check_id in ("cuda.available", "torch.libs"):
        result = judge(f, check_id)
        assert result.status == Status.FAIL
        assert (
            "804" in result.summary and "/usr/local/cuda/compat/lib64/libcuda.so" in result.summary
        )
        fix = result.remedies[-1]
        assert fix.commands[0] == "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64"
        assert fix.commands[-1].endswith(f"--only {check_id}")  # the verify step
        assert "CUDA ≤ 12.2" in fix.text


def test_nvml_driver_library_version_mismatch_says_reload_not_install(facts):
    f = facts("nvml_driver_mismatch")
    for check_id in ("cuda.driver", "cuda.available"):
        result = judge(f, check_id)
        assert result.status == Status.FAIL
        assert "535.183.01" in result.summary and "550.127.05" in result.summary
        text = " ".join(r.text for r in result.remedies)
        assert "Reboot" in text and "Install the NVIDIA driver" not in text
        assert any("modprobe nvidia" in c for c in commands(result))


def test_centos7_glibc_2_17_no_matching_distribution_pins_torch_2_6(facts):
    result = judge(facts("centos7_glibc217"), "platform")
    assert result.status == Status.WARN
    assert "glibc 2.17" in result.summary and "torch 2.6.0 at best" in result.summary
    assert commands(result)[0].endswith("install 'torch==2.6.0'")


def test_illegal_instruction_on_a_cpu_without_avx2(facts):
    f = facts("no_avx2_sigill")
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL
    assert "Illegal instruction" in result.summary and "AVX2" in result.summary
    assert judge(f, "platform").status == Status.WARN


def test_jetson_with_pypi_cpu_wheel_is_told_about_jetpack_builds(facts):
    result = judge(facts("jetson_cpu_wheel"), "platform")
    assert (
        result.status == Status.WARN and "Jetson (R36 (release), REVISION: 4.0)" in result.summary
    )
    assert "JetPack" in result.remedies[0].text


def test_torch_from_conda_and_pip_in_one_environment(facts):
    result = judge(facts("conda_and_pip_torch"), "platform")
    assert "conda's pytorch 2.5.1 and pip's torch 2.13.0+cpu" in result.summary
    assert commands(result)[1].endswith(
        "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    )


def test_healthy_linux_platform_names_distro_glibc_and_cpu(facts):
    f = facts("cpu_linux")
    f["platform"].update(
        glibc="2.36",
        distro={"pretty_name": "Debian GNU/Linux 12 (bookworm)"},
        cpu={"model": "AMD EPYC", "isa": ["avx", "avx2"]},
    )
    result = judge(f, "platform")
    assert result.status == Status.PASS
    assert "Debian GNU/Linux 12 (bookworm); glibc 2.36; AMD EPYC" in result.summary


def test_every_fix_targets_the_examined_python_and_ends_with_verify(facts):
    f = facts("rtx5090_cu124_wheel")
    f["platform"]["executable"] = "/opt/envs/train/bin/python"
    result = judge(f, "cuda.devices")
    cmds = result.remedies[0].commands
    assert cmds[0].startswith("/opt/envs/train/bin/python -m pip install")
    assert cmds[-1] == "torchdoctor check --python /opt/envs/train/bin/python --only cuda.devices"


def test_unimportable_torch_is_reinstalled_at_its_exact_version_from_its_index(facts):
    f = facts("torch_import_error")
    f["torch"]["error"]["message"] = "Segmentation fault in some extension"
    f["packages"]["distributions"]["torch"]["version"] = "2.8.0+cu128"
    cmd = judge(f, "torch.install").remedies[0].commands[0]
    assert "torch==2.8.0 --index-url https://download.pytorch.org/whl/cu128 --no-cache-dir" in cmd


def test_driver_too_old_found_version_10020_on_python_3_11_offers_a_torch_1_12_environment(facts):
    f = facts("cu126_wheel_driver_440")
    for check_id in ("cuda.driver", "cuda.available"):
        result = judge(f, check_id)
        assert result.status == Status.FAIL
        keep = result.remedies[-1]
        assert "Python 3.7–3.10" in keep.text
        assert keep.commands == (
            "python3.10 -m venv venv-torch1.12",
            "venv-torch1.12/bin/python -m pip install 'torch==1.12.1+cu102' "
            "--extra-index-url https://download.pytorch.org/whl/cu102",
            "torchdoctor check --python venv-torch1.12/bin/python",
        )


def test_source_build_on_blackwell_gets_the_releases_published_wheel_not_its_own_version(facts):
    f = facts("cpu_source_build_driver_440")
    f["torch"]["version"] = "2.7.0a0+git1341794"
    f["nvml"] = facts("rtx5090_cu124_wheel")["nvml"]
    f["platform"]["python_version"] = "3.11.7"
    cmd = judge(f, "cuda.available").remedies[0].commands[0]
    assert "torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128" in cmd


def test_torch_missing_on_python_3_10_installs_the_newest_release_with_a_3_10_wheel(facts):
    # torch 2.15.0 on PyPI has wheels for CPython 3.11-3.15 only (checked by scripts/check_compat.py).
    f = facts("torch_missing")
    f["platform"]["python_version"] = "3.10.14"
    cmd = judge(f, "torch.install").remedies[0].commands[0]
    assert "'torch==2.14.*'" in cmd


def test_pytorch_183387_alloc_conf_ignored_by_2_9_1(facts):
    """pytorch/pytorch#183387: on 2.9.1+cu128, PYTORCH_ALLOC_CONF=expandable_segments:True is
    silently ignored for CUDA; only PYTORCH_CUDA_ALLOC_CONF reaches the allocator. The fix gives
    the value to the variable this release reads, never 'rename to PYTORCH_ALLOC_CONF'."""
    result = judge(facts("alloc_conf_ignored_291"), "env")
    (problem,) = result.problems
    assert problem.code == "alloc-conf-ignored" and "2.9.1+cu128" in problem.message
    cmds = commands(result)
    assert "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in cmds
    assert not any(c.startswith("export PYTORCH_ALLOC_CONF") for c in cmds)
    assert "env.PYTORCH_ALLOC_CONF" in result.remedies[0].evidence


def test_version_blind_key_on_an_older_torch(facts):
    """expandable_segments arrived in 2.1 (pytorch#96995): on 2.0.1 torch raises 'Unrecognized
    CachingAllocator option' at the first allocation, so the setting is a failure there."""
    f = facts("alloc_conf_ignored_291")
    f["torch"]["version"] = "2.0.1+cu118"
    f["env"] = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    result = judge(f, "env")
    assert result.status == Status.FAIL
    assert "expandable_segments is not known to torch 2.0.1+cu118 (first in 2.1)" in result.summary
    assert commands(result)[0] == "unset PYTORCH_CUDA_ALLOC_CONF"


@pytest.mark.parametrize(
    ("version", "setting", "first"),
    [
        # each key's string is absent from libc10_cuda.so / libc10.so of the wheel named, and
        # present from the first release given (torchdoctor/data/release_strings.json)
        ("1.11.0+cu113", "garbage_collection_threshold:0.6", "1.12"),  # torch-1.11.0 wheel
        ("2.12.1+cu130", "pinned_max_cached_size_mb:1024", "2.13"),  # torch-2.12.1 wheel
        ("2.5.1+cu124", "max_non_split_rounding_mb:512", "2.6"),  # torch-2.5.1 wheel
    ],
)
def test_unrecognized_cachingallocator_option_on_a_release_whose_wheel_lacks_the_key(
    facts, version, setting, first
):
    f = facts("alloc_conf_ignored_291")
    f["torch"]["version"] = version
    f["env"] = {"PYTORCH_CUDA_ALLOC_CONF": setting}
    result = judge(f, "env")
    assert result.status == Status.FAIL
    key = setting.split(":")[0]
    assert f"{key} is not known to torch {version} (first in {first})" in result.summary


def test_allocator_variables_on_1_9_are_not_read_at_all(facts):
    """PYTORCH_CUDA_ALLOC_CONF is first in libc10_cuda.so of the 1.10.2 wheel (absent from
    1.8.1 and 1.9.1): on 1.9 neither variable reaches the allocator, so a key 1.9 lacks raises
    nothing, and moving PYTORCH_ALLOC_CONF's value to PYTORCH_CUDA_ALLOC_CONF would not help."""
    f = facts("alloc_conf_ignored_291")
    f["torch"]["version"] = "1.9.1+cu111"
    f["env"] = {
        "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128",
        "PYTORCH_ALLOC_CONF": "expandable_segments:True",
    }
    result = judge(f, "env")
    assert not [p.code for p in result.problems if p.code.startswith("alloc-conf")]
    assert not any("ALLOC_CONF" in c for c in commands(result))


def test_driver_upgrade_that_drops_a_pascal_gpu_names_it(facts):
    """Hardware-blind (issue 25): a CUDA 13.2 wheel needs R595, which no longer runs a Pascal
    GPU sitting beside the RTX 5090; the driver fix must name the GTX 1080 Ti and offer
    CUDA_VISIBLE_DEVICES. (Rebuilt from the compat tables, not from one public report.)"""
    f = facts("rtx5090_cu124_wheel")
    gpu = dict(f["nvml"]["devices"][0])
    gpu.update(index=1, name="NVIDIA GeForce GTX 1080 Ti", capability=[6, 1], uuid="GPU-1080")
    f["nvml"]["devices"].append(gpu)
    f["torch"]["version"], f["torch"]["build"]["cuda"] = "2.13.0+cu132", "13.2"
    f["nvml"]["driver_version"] = "580.65.06"
    result = judge(f, "cuda.driver")
    texts = " ".join(r.text for r in result.remedies)
    assert "GTX 1080 Ti" in texts and "R580" in texts
    assert "export CUDA_VISIBLE_DEVICES=0" in commands(result)


def test_returnn_1802_undefined_symbol_ncclmemfree_nccl_cu11_beside_cu12(facts):
    """Distribution-blind (issue 25), rwth-i6/returnn#1802: 'libtorch_cuda.so: undefined symbol:
    ncclMemFree' with nvidia-nccl-cu11 2.14.3 beside the nvidia-nccl-cu12 2.27.3 torch pins; the
    finding names the cu11 distribution and the fix removes it by name, then restores the pin."""
    result = judge(facts("returnn_1802_nccl_cu11_cu12"), "torch.libs")
    assert result.status == Status.FAIL
    assert "nvidia-nccl-cu11 2.14.3 is installed beside torch's nvidia-nccl-cu12==2.27.3" in (
        result.summary
    )
    cmds = commands(result)
    assert cmds[0].endswith("pip uninstall -y nvidia-nccl-cu11")
    assert cmds[1].endswith("--force-reinstall --no-deps nvidia-nccl-cu12==2.27.3")
    assert not any("LD_LIBRARY_PATH" in c for c in cmds)  # no guess about variables
    assert "packages.nvidia_wheels.nvidia-nccl-cu11" in result.remedies[0].evidence
