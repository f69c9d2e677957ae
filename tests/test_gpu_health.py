"""GPU hardware health, NVSwitch, container and peer-to-peer failures from public threads, each
rebuilt on the healthy H100 facts with only the fields the thread's machine changes (the failure
atlas, issue 24), and the NVML probe that gathers them, against a stand-in pynvml."""

from __future__ import annotations

import copy
import sys
import types

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.probes import host, nvml
from torchdoctor.report.result import Status

from .conftest import load_facts

# torch's words for cuInit's 999 and 802, as the threads quote them.
UNKNOWN_999 = (
    "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set "
    "up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting "
    "the available devices to be zero."
)
NOT_READY_802 = (
    "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run "
    "some cuda functions before calling NumCudaDevices() that might have already set an error? "
    "Error 802: system not yet initialized"
)


def _h100(**changes) -> dict:
    facts = copy.deepcopy(load_facts("h100_healthy"))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = facts
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
        node[int(last) if isinstance(node, list) else last] = value
    return facts


def _cuda_down(warning: str) -> dict:
    return {"available": False, "device_count": 0, "devices": [], "warnings": [warning]}


def _gpus(name: str, capability: list[int], count: int, nvlink: int | None = None) -> list:
    return [
        {"index": i, "name": name, "capability": capability, "nvlink_active": nvlink}
        for i in range(count)
    ]


def findings(facts: dict, check_id: str) -> dict:
    verdict = engine.run_check(by_id()[check_id], read_facts(facts), Context())
    return {p.code: p for p in verdict.problems}


def test_the_healthy_h100_gets_no_health_or_p2p_finding():
    facts = _h100()
    assert findings(facts, "gpu.health") == {}
    assert findings(facts, "gpu.p2p") == {}
    # Facts recorded before these fields existed are unknown, not a failure.
    assert engine.run_check(by_id()["gpu.health"], read_facts(facts), Context()).status == (
        Status.PASS
    )


# --- ECC, row remapping, lost GPUs --------------------------------------------------------


def _ecc(volatile: int, aggregate: int, **rows: int) -> dict:
    """An H100's ECC counters: uncorrectable errors, and its row remapper's state."""
    remap = {"corrected": 0, "uncorrected": 0, "pending": 0, "failure": 0} | rows
    return {
        "volatile_uncorrected": volatile,
        "aggregate_uncorrected": aggregate,
        "remapped_rows": remap,
    }


def test_uncorrectable_ecc_error_encountered_vllm_5222():
    found = findings(
        _h100(nvml__devices__0__ecc=_ecc(2, 2, uncorrected=1, pending=1)), "gpu.health"
    )
    ecc_error = found["ecc-uncorrectable"]
    assert ecc_error.status == Status.FAIL
    assert "GPU 0 (NVIDIA H100 80GB HBM3)" in ecc_error.message
    assert "sudo nvidia-smi -r -i 0" in ecc_error.remedies[0].commands
    assert "replaced" in ecc_error.remedies[0].text
    assert ecc_error.remedies[0].evidence[0] == "nvml.devices.0.ecc.volatile_uncorrected"
    assert found["reset-pending"].status == Status.WARN
    assert "remap-failed" not in found


def test_one_node_with_a_faulty_gpu_jade_hpc_gpu_github_io_194():
    ecc = _ecc(17, 40, uncorrected=8, failure=1)
    found = findings(_h100(nvml__devices__0__ecc=ecc), "gpu.health")
    assert set(found) == {"ecc-uncorrectable", "remap-failed"}
    assert "Drain the node" in found["remap-failed"].remedies[0].text


def test_old_ecc_errors_already_remapped_are_not_a_finding():
    ecc = {"volatile_uncorrected": 0, "aggregate_uncorrected": 3, "retired_pages_pending": 0}
    assert findings(_h100(nvml__devices__0__ecc=ecc), "gpu.health") == {}


def test_gpu_has_fallen_off_the_bus_open_gpu_kernel_modules_507():
    lost = [{"index": 0, "error": "NVMLError_GpuIsLost: GPU is lost", "lost": True}]
    facts = _h100(nvml__devices=lost, torch__cuda=_cuda_down(UNKNOWN_999))
    bus = findings(facts, "gpu.health")["fell-off-bus"]
    assert bus.status == Status.FAIL and "Reboot" in bus.remedies[0].text
    assert bus.remedies[0].evidence == ("nvml.devices.0.error",)
    # Reloading the UVM module does not bring back a lost GPU: cuda.available says reboot.
    init = findings(facts, "cuda.available")["init-failed"]
    assert "reboot" in init.remedies[0].text and "rmmod" not in " ".join(init.remedies[0].commands)


# --- CUDA initialisation errors -------------------------------------------------------------


@pytest.mark.parametrize("thread", ["pytorch_49081", "pytorch_88639"])
def test_cuda_unknown_error_after_suspend(thread):
    init = findings(_h100(torch__cuda=_cuda_down(UNKNOWN_999)), "cuda.available")["init-failed"]
    assert init.remedies[0].commands[0] == "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm"


def test_unknown_error_with_uvm_not_loaded_only_loads_it():
    facts = _h100(torch__cuda=_cuda_down(UNKNOWN_999), host__nvidia__uvm_loaded=False)
    init = findings(facts, "cuda.available")["init-failed"]
    assert init.remedies[0].commands[0] == "sudo modprobe nvidia_uvm"
    assert "host.nvidia.uvm_loaded" in init.remedies[0].evidence


def test_error_802_system_not_yet_initialized_gpustack_1254():
    nodes = ["nvidia0", "nvidia-nvswitch0", "nvidia-nvswitchctl", "nvidiactl", "nvidia-uvm"]
    facts = _h100(torch__cuda=_cuda_down(NOT_READY_802), host__nvidia__dev_nodes=nodes)
    found = findings(facts, "cuda.available")
    fm = found["fabricmanager-missing"]
    assert "init-failed" not in found
    assert "sudo systemctl enable --now nvidia-fabricmanager" in fm.remedies[0].commands
    assert "580.159.04" in fm.remedies[0].text  # the version the package must have
    assert "host.nvidia.dev_nodes" in fm.remedies[0].evidence


@pytest.mark.parametrize("thread", ["nvidia_docker_1730", "FastMRI_challenge_263"])
def test_failed_to_initialize_nvml_unknown_error_in_a_container(thread):
    facts = _h100(
        nvml={"status": "unavailable", "error": "NVMLError_Unknown: Unknown Error"},
        container={"detected": True, "kind": "docker"},
        env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
        torch__cuda=_cuda_down(UNKNOWN_999),
    )
    found = findings(facts, "cuda.available")
    lost = found["container-gpu-lost"]
    assert "cuda-wheel-no-gpu" not in found  # not "install the CPU wheel"
    assert "recreate the container" in lost.remedies[0].text
    assert "sudo nvidia-ctk system create-dev-char-symlinks --create-all" in (
        lost.remedies[0].commands
    )


def test_nvml_unknown_error_outside_a_container_is_not_called_a_lost_container():
    facts = _h100(nvml={"status": "unavailable", "error": "NVMLError_Unknown: Unknown Error"})
    facts["torch"]["cuda"] = _cuda_down(UNKNOWN_999)
    assert "container-gpu-lost" not in findings(facts, "cuda.available")


def test_driver_library_version_mismatch_qixuema_envs_8():
    facts = _h100(
        nvml={"status": "unavailable", "error": "NVMLError_LibRmVersionMismatch: RM has detected"},
        host__nvidia__proc_driver_version="NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20",
    )
    mismatch = findings(facts, "cuda.driver")["driver-mismatch"]
    assert "(570.133.20) differs from the user-space driver libraries (580.159.04)" in (
        mismatch.message
    )
    assert mismatch.remedies[0].text.startswith("The new driver is installed")


def test_driver_mismatch_does_not_print_one_version_as_two():
    facts = _h100(nvml={"status": "unavailable", "error": "NVMLError_LibRmVersionMismatch: x"})
    message = findings(facts, "cuda.driver")["driver-mismatch"].message
    assert message.count("580.159.04") == 1


# --- peer-to-peer -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("thread", "name", "capability", "iommu"),
    [
        (
            "nccl_2079",
            "NVIDIA RTX 5880 Ada Generation",
            [8, 9],
            {"cmdline": [], "units": ["ivhd0"]},
        ),
        ("nccl_257", "NVIDIA GeForce GTX 1080 Ti", [6, 1], {"cmdline": ["intel_iommu=on"]}),
        ("nccl_631", "NVIDIA GeForce RTX 3090", [8, 6], {"cmdline": [], "units": ["dmar0"]}),
        ("nccl_667", "NVIDIA A100-PCIE-40GB", [8, 0], {"cmdline": [], "units": ["dmar0"]}),
    ],
)
def test_nccl_hangs_with_the_iommu_translating_peer_traffic(thread, name, capability, iommu):
    facts = _h100(nvml__devices=_gpus(name, capability, 4), host__iommu=iommu)
    found = findings(facts, "gpu.p2p")
    iommu_problem = found["iommu-translates"]
    job, host_fix = iommu_problem.remedies
    assert job.commands[0] == "export NCCL_P2P_DISABLE=1"
    assert "iommu=pt" in host_fix.text
    assert "consumer-no-p2p" not in found


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"host__iommu": {"cmdline": ["iommu=pt"], "units": ["dmar0"]}}, "passthrough"),
        ({"env": {"NCCL_P2P_DISABLE": "1"}}, "already off"),
        ({"nvml__devices": _gpus("NVIDIA H100 80GB HBM3", [9, 0], 8, nvlink=18)}, "NVLink"),
        ({"nvml__devices": _gpus("NVIDIA H100 PCIe", [9, 0], 1)}, "one GPU"),
    ],
)
def test_no_p2p_finding_where_nccl_takes_no_translated_pcie_path(change, why):
    translated = {
        "nvml__devices": _gpus("NVIDIA H100 PCIe", [9, 0], 2),
        "host__iommu": {"cmdline": [], "units": ["dmar0"]},
    }
    assert findings(_h100(**translated), "gpu.p2p"), "the base of this test must have a finding"
    assert findings(_h100(**{**translated, **change}), "gpu.p2p") == {}, why


def test_deadlock_with_multiple_4090_deepspeed_4433():
    facts = _h100(nvml__devices=_gpus("NVIDIA GeForce RTX 4090", [8, 9], 2))
    consumer = findings(facts, "gpu.p2p")["consumer-no-p2p"]
    assert consumer.status == Status.WARN
    assert consumer.remedies[0].commands[0] == "export NCCL_P2P_DISABLE=1"
    assert consumer.remedies[0].evidence == ("nvml.devices.0.name", "nvml.devices.1.name")


def test_4090s_the_driver_already_refuses_p2p_for_get_no_finding():
    facts = _h100(nvml__devices=_gpus("NVIDIA GeForce RTX 4090", [8, 9], 2))
    facts["nvml"]["p2p"] = [{"a": 0, "b": 1, "read": "not-supported"}]
    assert findings(facts, "gpu.p2p") == {}


# --- the probes -----------------------------------------------------------------------------


class _NvmlError(Exception):
    def __init__(self, value: int, text: str):
        super().__init__(text)
        self.value = value


def _fake_pynvml(lost: set[int] = frozenset(), ecc: bool = True) -> types.ModuleType:
    """A stand-in pynvml: two H100s; the ``lost`` ones answer GPU_IS_LOST, and without ``ecc``
    every ECC query is unsupported (a consumer card)."""
    nv = types.ModuleType("pynvml")

    def unsupported(*_a):
        raise _NvmlError(3, "Not Supported")

    def handle(i):
        if i in lost:
            raise _NvmlError(15, "GPU is lost")
        return i

    nv.nvmlInit = nv.nvmlShutdown = lambda: None
    nv.nvmlDeviceGetCount = lambda: 2
    nv.nvmlSystemGetDriverVersion = lambda: "580.159.04"
    nv.nvmlSystemGetCudaDriverVersion = lambda: 13000
    nv.nvmlDeviceGetHandleByIndex = handle
    nv.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    nv.nvmlDeviceGetTotalEccErrors = (
        (lambda h, kind, counter: 5 - 4 * (counter == 0)) if ecc else unsupported
    )
    nv.nvmlDeviceGetRetiredPagesPendingStatus = unsupported  # Hopper remaps rows instead
    nv.nvmlDeviceGetRemappedRows = (lambda h: (0, 1, 1, 0)) if ecc else unsupported
    nv.nvmlDeviceGetNvLinkState = lambda h, link: 1 if link < 18 else unsupported()
    nv.nvmlDeviceGetP2PStatus = lambda a, b, caps: 0
    return nv


def test_probe_reads_ecc_remapping_nvlink_and_p2p(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    info = nvml.gather()
    dev = info["devices"][0]
    assert dev["ecc"] == {
        "volatile_uncorrected": 1,
        "aggregate_uncorrected": 5,
        "retired_pages_pending": None,
        "remapped_rows": {"corrected": 0, "uncorrected": 1, "pending": 1, "failure": 0},
    }
    assert dev["nvlink_active"] == 18
    assert info["p2p"] == [{"a": 0, "b": 1, "read": "ok"}]
    assert "ecc-uncorrectable" in findings(_h100(nvml=info), "gpu.health")


def test_probe_on_a_consumer_card_leaves_ecc_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(ecc=False))
    dev = nvml.gather()["devices"][1]
    assert dev["ecc"]["volatile_uncorrected"] is None
    assert dev["ecc"]["remapped_rows"] is None


def test_probe_records_a_lost_gpu_and_keeps_the_others(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(lost={1}))
    info = nvml.gather()
    assert info["status"] == "ok"
    assert info["devices"][1] == {"index": 1, "error": "_NvmlError: GPU is lost", "lost": True}
    assert info["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert info["p2p"] == []  # one answering GPU: no pair


def test_host_probe_keeps_only_the_iommu_options_of_the_kernel_command_line(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cmdline").write_text(
        "BOOT_IMAGE=/vmlinuz root=UUID=abc ro quiet intel_iommu=on secret=hunter2 iommu=pt\n"
    )
    (tmp_path / "sys/class/iommu/dmar0").mkdir(parents=True)
    assert host.iommu(tmp_path) == {"cmdline": ["intel_iommu=on", "iommu=pt"], "units": ["dmar0"]}
    assert host.iommu(tmp_path / "nowhere") == {"cmdline": None, "units": None}
