"""Every check judged against the facts corpus (no GPU, no torch import)."""

from __future__ import annotations

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import load_facts as typed
from torchdoctor.check.record import read_facts
from torchdoctor.report.result import Status

from .conftest import FACTS_DIR


def judge(facts: dict, check_id: str, expect: str = "auto"):
    return engine.run_check(by_id()[check_id], read_facts(facts), Context(expect=expect))


def test_cpu_machine_passes_with_auto(facts):
    report = engine.diagnose(read_facts(facts("cpu_linux")), Context(), engine.select())
    assert report.exit_code() == 0, [(c.id, c.status, c.summary) for c in report.checks]
    assert judge(facts("cpu_linux"), "cuda.available").status == Status.SKIP


def test_cpu_machine_fails_when_cuda_expected(facts):
    result = judge(facts("cpu_linux"), "cuda.available", expect="cuda")
    assert result.status == Status.FAIL
    assert result.remedies and "GPU" in result.remedies[0].text


def test_healthy_h100_passes_everything(facts):
    f = facts("h100_healthy")
    for cid in ("cuda.driver", "cuda.available", "cuda.devices", "torch.build"):
        result = judge(f, cid, expect="cuda")
        assert result.status == Status.PASS, (cid, result.summary)
    devices = judge(f, "cuda.devices").details["devices"]
    assert devices[0]["arch_coverage"] == "cubin"
    assert "132 SMs" in judge(f, "cuda.devices").summary


def test_driver_too_old_fails_with_both_fixes(facts):
    f = facts("driver_too_old")
    drv = judge(f, "cuda.driver")
    assert drv.status == Status.FAIL
    assert "580.65.06" in drv.summary
    commands = [c for r in drv.remedies for c in r.commands]
    # A wheel the 535 driver can run: cu128 through minor-version compatibility, never cu130.
    assert any("whl/cu128" in c for c in commands)
    assert not any("whl/cu130" in c for c in commands)
    avail = judge(f, "cuda.available")
    assert avail.status == Status.FAIL
    assert "found version 12020" in avail.summary


def test_gpu_too_old_for_arch_list(facts):
    result = judge(facts("gpu_too_old"), "cuda.devices")
    assert result.status == Status.FAIL
    assert "Pascal" in result.summary and "7.5" in result.summary
    assert any("whl/cu126" in c for r in result.remedies for c in r.commands)


def test_cpu_wheel_on_gpu_box(facts):
    result = judge(facts("cpu_wheel_on_gpu"), "cuda.available")
    assert result.status == Status.FAIL
    cmd = result.remedies[0].commands[0]
    # Driver 570 supports CUDA 12.8; torch 2.13 ships cu126/cu130/cu132, so cu126 is the fit.
    assert "--index-url https://download.pytorch.org/whl/cu126" in cmd
    assert "2 NVIDIA GPU" in result.summary
    # With --expect cpu the CPU wheel is intentional.
    assert judge(facts("cpu_wheel_on_gpu"), "cuda.available", "cpu").status == Status.SKIP


def test_mps_mac(facts):
    f = facts("mps_mac")
    assert judge(f, "mps", "mps").status == Status.PASS
    assert judge(f, "cuda.available", "mps").status == Status.SKIP
    f["torch"]["mps"]["available"] = False
    f["platform"]["mac_ver"] = "13.6"
    result = judge(f, "mps", "mps")
    assert result.status == Status.FAIL and "13.6" in result.summary


def test_mps_expected_on_linux_fails(facts):
    assert judge(facts("cpu_linux"), "mps", "mps").status == Status.FAIL


def test_torch_missing(facts):
    result = judge(facts("torch_missing"), "torch.install")
    assert result.status == Status.FAIL
    assert "whl/cpu" in result.remedies[0].commands[0]
    for cid in ("torch.build", "cuda.available"):
        assert judge(facts("torch_missing"), cid).status == Status.SKIP


def test_torch_missing_on_gpu_box_suggests_cuda_wheel(facts):
    f = facts("torch_missing")
    f["nvml"] = facts("h100_healthy")["nvml"]
    cmd = judge(f, "torch.install").remedies[0].commands[0]
    assert "whl/cu130" in cmd


def test_torch_import_error_names_the_library(facts):
    result = judge(facts("torch_import_error"), "torch.install")
    assert result.status == Status.FAIL
    assert result.details["missing_library"] == "libcudnn.so.9"
    assert "nvidia-" in result.remedies[0].text


def test_probe_hang_in_cuda_init_is_an_error_not_a_pass(facts):
    f = facts("probe_hang_cuda_init")
    for cid in ("cuda.available", "cuda.devices"):
        result = judge(f, cid)
        assert result.status == Status.ERROR
        assert "cuda.init" in result.summary
    assert judge(f, "torch.install").status == Status.PASS  # gathered before the hang


def test_companion_mismatch(facts):
    f = facts("h100_healthy")
    f["packages"]["distributions"]["torchvision"] = {"version": "0.24.0+cu130", "location": "/x"}
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL
    assert "0.26" in result.summary  # torch 2.11 pairs with torchvision 0.26
    f["packages"]["distributions"]["torchvision"]["version"] = "0.26.0+cu126"
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL and "cu126" in result.summary
    f["packages"]["distributions"]["torchvision"]["version"] = "0.26.0+cu130"
    assert judge(f, "torch.install").status == Status.PASS


def test_numpy2_with_old_torch(facts):
    f = facts("cpu_linux")
    f["torch"]["version"] = "2.2.2+cpu"
    f["packages"]["distributions"]["numpy"] = {"version": "2.1.0", "location": "/x"}
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL and '"numpy<2"' in result.remedies[0].commands[0]


def test_duplicate_torch_installs(facts):
    f = facts("cpu_linux")
    f["packages"]["torch_distributions"].append(
        {"version": "2.1.0", "location": "/home/u/.local/lib/python3.11/site-packages"}
    )
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL and "2 copies" in result.summary


@pytest.mark.parametrize(
    ("quota", "threads", "status"),
    [(None, 2, Status.PASS), (1.0, 2, Status.WARN), (4.0, 2, Status.PASS), (0.5, 64, Status.WARN)],
)
def test_host_threads_vs_cgroup_quota(facts, quota, threads, status):
    f = facts("cpu_linux")
    f["host"]["cgroup"]["cpu_quota"] = quota
    f["torch"]["build"]["num_threads"] = threads
    result = judge(f, "host")
    assert result.status == status
    if status == Status.WARN:
        assert any("OMP_NUM_THREADS=1" in c for r in result.remedies for c in r.commands)


def test_host_memory_limit_reported(facts):
    f = facts("cpu_linux")
    f["host"]["cgroup"]["memory_limit_bytes"] = 512 * 1024**2
    result = judge(f, "host")
    assert result.status == Status.WARN and "cgroup memory limit" in result.summary


def test_platform_32bit_and_rosetta(facts):
    f = facts("cpu_linux")
    f["platform"]["python_bits"] = 32
    assert judge(f, "platform").status == Status.FAIL
    f = facts("mps_mac")
    f["platform"]["rosetta"] = True
    assert judge(f, "platform").status == Status.FAIL


def test_visible_devices_hides_gpus(facts):
    f = facts("h100_healthy")
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": []}
    f["env"]["CUDA_VISIBLE_DEVICES"] = ""
    result = judge(f, "cuda.available")
    assert result.status == Status.FAIL and "CUDA_VISIBLE_DEVICES" in result.summary


def test_cuda_wheel_without_gpu_warns_about_size(facts):
    f = facts("h100_healthy")
    f["nvml"] = facts("cpu_linux")["nvml"]
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": []}
    result = judge(f, "cuda.available")
    assert result.status == Status.WARN
    assert "whl/cpu" in result.remedies[0].commands[0]
    assert judge(f, "cuda.available", "cuda").status == Status.FAIL


def test_a_check_that_raises_becomes_an_error_result(facts):
    class Broken:
        ID, TITLE = "broken", "Broken"

        @staticmethod
        def check(facts, ctx):
            raise KeyError("boom")

    result = engine.run_check(Broken, read_facts(facts("cpu_linux")), Context())
    assert result.status == Status.ERROR and "KeyError" in result.summary


def test_torch_from_user_site_is_flagged(facts):
    f = facts("cpu_linux")
    f["platform"]["user_site"] = "/home/u/.local/lib/python3.11/site-packages"
    f["torch"]["file"] = "/home/u/.local/lib/python3.11/site-packages/torch/__init__.py"
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL and "user site" in result.summary
    assert "export PYTHONNOUSERSITE=1" in result.remedies[0].commands


def test_numpy_abi_error_printed_at_import_is_caught(facts):
    f = facts("cpu_linux")
    f["probe"]["torch"]["stderr_tail"] = (
        "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash."
    )
    result = judge(f, "torch.install")
    assert result.status == Status.FAIL and "NumPy ABI" in result.summary
    f = facts("cpu_linux")
    f["torch"]["warnings"] = ["UserWarning: Failed to initialize NumPy: No module named 'numpy'"]
    assert judge(f, "torch.install").status == Status.PASS


CORPUS = sorted(p.stem for p in FACTS_DIR.glob("*.json"))


@pytest.mark.parametrize("name", CORPUS)
@pytest.mark.parametrize("expect", ["auto", "cpu", "cuda", "mps", "xpu"])
def test_every_warn_and_fail_from_a_check_carries_its_own_remedy(facts, name, expect):
    """Checked on the checks themselves, before the engine's safety net adds a generic one."""
    f = facts(name)
    for module in engine.select():
        v = module.check(typed(f), Context(expect=expect))
        if v.status in (Status.WARN, Status.FAIL):
            assert v.remedies, (module.ID, v.summary)
            assert all(r.text for r in v.remedies)


def test_expect_cpu_turns_gpu_only_failures_into_warnings(facts):
    f = facts("driver_too_old")
    assert judge(f, "cuda.driver", "auto").status == Status.FAIL
    result = judge(f, "cuda.driver", "cpu")
    assert result.status == Status.WARN and "not required with --expect cpu" in result.summary
    report = engine.diagnose(
        read_facts(facts("gpu_too_old")), Context(expect="cpu"), engine.select()
    )
    assert report.exit_code() == 0, [(c.id, c.status) for c in report.checks if c.status.rank == 2]


def test_companion_fix_keeps_the_cuda_build_and_pins_versions(facts):
    f = facts("h100_healthy")
    f["torch"]["version"] = "2.13.0"  # PyPI's Linux wheel: a CUDA build with no local tag
    f["packages"]["distributions"]["torchvision"] = {"version": "0.27.0", "location": "/x"}
    result = judge(f, "torch.install")
    cmd = result.remedies[0].commands[0]
    assert "whl/cu130" in cmd and "whl/cpu" not in cmd
    # Only the companion moves, to the exact build for this torch; torch itself is left alone.
    assert "--no-deps 'torchvision==0.28.0'" in cmd and "torch==" not in cmd


def test_missing_library_fix_removes_only_the_torch_wheel_set(facts):
    f = facts("torch_import_error")
    f["packages"]["nvidia_wheels"] = {"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-ml-py": "13.580"}
    f["packages"]["distributions"]["torchmetrics"] = {"version": "1.0", "location": "/x"}
    uninstall = judge(f, "torch.install").remedies[0].commands[0]
    assert uninstall.endswith("uninstall -y torch nvidia-cudnn-cu12")


@pytest.mark.parametrize(
    ("cap", "driver", "index"),
    [([3, 7], "470.256.02", "whl/cu118"), ([12, 0], "580.159.04", "whl/cu130")],
)
def test_arch_fixes_name_a_wheel_that_covers_the_gpu(facts, cap, driver, index):
    f = facts("gpu_too_old")
    f["nvml"]["driver_version"] = driver
    f["nvml"]["devices"][0]["capability"] = cap
    f["torch"]["cuda"]["devices"][0]["capability"] = cap
    f["torch"]["build"]["arch_list"] = [
        "sm_50",
        "sm_60",
        "sm_70",
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_90",
    ]
    result = judge(f, "cuda.devices")
    assert result.status == Status.FAIL
    assert index in result.remedies[0].commands[0]


def test_torch_seeing_no_gpu_is_not_a_passing_device_list(facts):
    f = facts("h100_healthy")
    f["env"]["CUDA_VISIBLE_DEVICES"] = ""
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": []}
    result = judge(f, "cuda.devices")
    assert result.status == Status.SKIP and "none of the 1 GPU" in result.summary
    assert judge(f, "cuda.devices", "cuda").status == Status.FAIL


def test_rocm_build_without_gpu_gets_rocm_advice(facts):
    f = facts("rocm_gfx1031")
    f["torch"]["cuda"]["available"] = False
    result = judge(f, "cuda.available")
    text = " ".join(r.text for r in result.remedies)
    assert "/dev/kfd" in text and "NVIDIA" not in text
