"""Host failures from public threads (the failure atlas, issue 24): an open-files limit too low
for DataLoader's descriptor passing, a /dev/shm this user cannot write, NVIDIA's UVM module not
loaded, an NVIDIA GPU no kernel module serves after a kernel update, an AMD GPU beside a torch
without ROCm. Each case is the healthy H100 (or CPU) facts with only what the thread's machine
changes, set at dotted paths as the atlas harness sets them; then the probes that gather the
new facts, against fake trees."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import ALL
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.probes import container as container_probe
from torchdoctor.probes import host as host_probe
from torchdoctor.report.result import Status

from .conftest import load_facts

GIB = 1024**3
# torch's words when cuInit fails with 999, as distrobox#804-like reports quote them.
UNKNOWN_999 = (
    "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set "
    "up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting "
    "the available devices to be zero."
)
CUDA_DOWN = {"available": False, "device_count": 0, "devices": [], "warnings": []}
NO_DRIVER = {
    "status": "error",
    "error": "NVMLError_DriverNotLoaded: Driver Not Loaded",
    "devices": [],
    "device_count": None,
    "driver_version": None,
    "cuda_driver_version": None,
}
NO_NVML = {
    "status": "unavailable",
    "error": "NVMLError_LibraryNotFound: NVML Shared Library Not Found",
    "devices": [],
    "device_count": None,
    "driver_version": None,
    "cuda_driver_version": None,
}
NO_NODES = {"dev_nodes": [], "proc_driver_version": None, "uvm_loaded": False}


def _shm(**changes) -> dict:
    shm = {
        "path": "/dev/shm",
        "exists": True,
        "mounted": True,
        "fs_type": "tmpfs",
        "source": "tmpfs",
        "size_bytes": 64 * GIB,
        "free_bytes": 64 * GIB,
        "writable": True,
        "read_only": False,
    }
    return {
        "detected": False,
        "kind": None,
        "engine": None,
        "evidence": [],
        "shm": {**shm, **changes},
        "nvidia": {"driver_libs": {"libcuda.so.1": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}},
    }


def _pci(vendor: str, device: str, pci_class: str, driver: str | None, vram=None) -> dict:
    return {
        "address": "0000:00:04.0",
        "vendor": vendor,
        "device": device,
        "pci_class": pci_class,
        "driver": driver,
        "vram_bytes": vram,
    }


# (name after the thread, thread, base facts, dotted path -> value, finding ids, text in a fix)
CASES = [
    # --- new:open-files-limit-low
    ("pytorch_973", "https://github.com/pytorch/pytorch/issues/973", "h100_healthy",
     {"host.open_files": {"soft": 1024, "hard": 4096}}, ["host.open-files-low"], "ulimit -n 4096"),
    ("pytorch_14768", "https://github.com/pytorch/pytorch/issues/14768", "h100_healthy",
     {"host.open_files": {"soft": 1024, "hard": 1048576}}, ["host.open-files-low"],
     "ulimit -n 65536"),
    ("graph-physics_22", "https://github.com/DonsetPG/graph-physics/issues/22", "h100_healthy",
     {"host.open_files": {"soft": 1024, "hard": 1024}}, ["host.open-files-low"],
     "set_sharing_strategy('file_system')"),
    ("D-FINE_22", "https://github.com/Peterande/D-FINE/issues/22", "h100_healthy",
     {"host.open_files": {"soft": 1024, "hard": 524288}}, ["host.open-files-low"],
     "set_sharing_strategy('file_system')"),
    ("MONAI_701", "https://github.com/Project-MONAI/MONAI/issues/701", "cpu_linux",
     {"host.open_files": {"soft": 1024, "hard": 4096}}, ["host.open-files-low"], "ulimit -n"),
    # --- new:shm-not-writable
    ("pytorch_37004", "https://github.com/pytorch/pytorch/issues/37004", "h100_healthy",
     {"container": _shm(writable=False)}, ["container.shm-not-writable"],
     "sudo chmod 1777 /dev/shm"),
    # --- new:nvidia-uvm-not-loaded
    ("nvidia-docker_288", "https://github.com/NVIDIA/nvidia-docker/issues/288", "h100_healthy",
     {"host.nvidia.dev_nodes": ["nvidia0", "nvidiactl"], "host.nvidia.uvm_loaded": False,
      "torch.cuda": {**CUDA_DOWN, "warnings": [UNKNOWN_999]}},
     ["cuda.available.uvm-missing"], "nvidia-modprobe -u -c=0"),
    ("distrobox_804", "https://github.com/89luca89/distrobox/issues/804", "h100_healthy",
     {"host.nvidia.dev_nodes": ["nvidia0", "nvidiactl"], "host.nvidia.uvm_loaded": False,
      "torch.cuda": CUDA_DOWN},
     ["cuda.available.uvm-missing"], "sudo modprobe nvidia_uvm"),
    # --- new:driver-module-missing-for-kernel
    ("compute-gpu-installation_10",
     "https://github.com/GoogleCloudPlatform/compute-gpu-installation/issues/10", "h100_healthy",
     {"nvml": NO_DRIVER, "host.nvidia": NO_NODES, "torch.cuda": CUDA_DOWN,
      "platform.release": "5.10.0-26-cloud-amd64",
      "host.pci_gpus": [_pci("0x10de", "0x1eb8", "0x030200", None)]},
     ["cuda.available.driver-module-missing"], "sudo dkms autoinstall"),
    ("nvidia-docker_365", "https://github.com/NVIDIA/nvidia-docker/issues/365", "h100_healthy",
     {"nvml": NO_DRIVER, "host.nvidia": NO_NODES, "torch.cuda": CUDA_DOWN,
      "platform.release": "3.13.0-116-generic",
      "host.pci_gpus": [_pci("0x10de", "0x17c8", "0x030000", None)]},
     ["cuda.available.driver-module-missing"], "linux-headers-3.13.0-116-generic"),
    # --- new:cpu-or-cuda-build-on-amd-gpu
    ("legacy-rocm-build_2354", "https://github.com/ROCm/legacy-rocm-build/issues/2354",
     "cpu_linux",
     {"host.pci_gpus": [_pci("0x1002", "0x73bf", "0x030000", "amdgpu", 16 * GIB)],
      "host.dev_kfd": True},
     ["cuda.available.amd-gpu-not-rocm"], "https://download.pytorch.org/whl/rocm"),
    ("VoiceStudio_124", "https://github.com/debpalash/VoiceStudio/issues/124", "h100_healthy",
     {"nvml": NO_NVML, "host.nvidia": NO_NODES, "torch.cuda": CUDA_DOWN,
      "host.pci_gpus": [_pci("0x1002", "0x744c", "0x030000", "amdgpu", 24 * GIB)],
      "host.dev_kfd": True},
     ["cuda.available.amd-gpu-not-rocm"], "https://download.pytorch.org/whl/rocm"),
]  # fmt: skip


def apply(base: str, changes: dict) -> dict:
    """The base facts with values replaced at dotted paths (integer steps index lists)."""
    facts = copy.deepcopy(load_facts(base))
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = facts
        for step in parents:
            node = node[int(step)] if isinstance(node, list) else node.setdefault(step, {})
        node[int(last) if isinstance(node, list) else last] = copy.deepcopy(value)
    return facts


def problems(facts: dict, expect: str = "auto") -> dict:
    """finding id -> (status, remedies) over every check."""
    typed, found = read_facts(facts), {}
    for module in ALL:
        verdict = engine.run_check(module, typed, Context(expect=expect))
        for p in verdict.problems:
            found[f"{module.ID}.{p.code}"] = (p.status, p.remedies)
    return found


def _fix_text(remedies) -> str:
    return " ".join(r.text + " " + " ".join(r.commands) for r in remedies)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_atlas_thread_gets_its_finding_and_settled_fix(case):
    _name, _thread, base, changes, ids, fix = case
    found = problems(apply(base, changes))
    before = problems(load_facts(base))
    for finding in ids:
        status, remedies = found[finding]
        assert status in (Status.WARN, Status.FAIL)
        assert fix in _fix_text(remedies)
        assert all(r.evidence for r in remedies)
    # The new finding replaces a wrong one, never stacks a second finding on the same machine.
    assert set(found) - set(before) == set(ids)


NEW_IDS = {i for c in CASES for i in c[4]}


@pytest.mark.parametrize("base", ["h100_healthy", "cpu_linux"])
def test_healthy_base_facts_get_no_new_finding(base):
    assert not NEW_IDS & set(problems(load_facts(base)))


def test_healthy_values_of_the_new_facts_get_no_new_finding():
    healthy = {
        "host.open_files": {"soft": 1048576, "hard": 1048576},
        "container": _shm(),
        "host.pci_gpus": [_pci("0x10de", "0x2330", "0x030200", "nvidia")],
        "host.dev_kfd": False,
    }
    assert not NEW_IDS & set(problems(apply("h100_healthy", healthy)))


def test_ryzen_apu_beside_an_nvidia_gpu_is_not_an_unused_amd_gpu():
    # A laptop's Ryzen iGPU (512 MiB carve-out) and an NVIDIA dGPU with a working CUDA torch.
    apu = [
        _pci("0x1002", "0x1638", "0x030000", "amdgpu", 512 * 1024**2),
        _pci("0x10de", "0x2520", "0x030000", "nvidia"),
    ]
    assert not NEW_IDS & set(problems(apply("h100_healthy", {"host.pci_gpus": apu})))
    # The same APU alone with the CPU build: too small to count as a GPU left unused.
    assert not NEW_IDS & set(problems(apply("cpu_linux", {"host.pci_gpus": apu[:1]})))


def test_uvm_node_missing_while_cuda_works_is_not_a_finding():
    # The host's facts are read while the probe starts CUDA, which may make the node itself.
    facts = apply("h100_healthy", {"host.nvidia.dev_nodes": ["nvidia0", "nvidiactl"]})
    assert "cuda.available.uvm-missing" not in problems(facts)


def test_gpu_passed_through_to_a_vm_is_not_a_missing_driver():
    facts = apply(
        "h100_healthy",
        {
            "nvml": NO_DRIVER,
            "host.nvidia": NO_NODES,
            "torch.cuda": CUDA_DOWN,
            "host.pci_gpus": [_pci("0x10de", "0x2330", "0x030200", "vfio-pci")],
        },
    )
    assert "cuda.available.driver-module-missing" not in problems(facts)


def test_open_files_limit_on_macos_is_not_judged():
    # macOS has only the file_system strategy: no descriptor passing, its 256 is no problem.
    facts = apply(
        "mps_mac", {"host.open_files": {"soft": 256, "hard": -1}, "platform.system": "Darwin"}
    )
    assert "host.open-files-low" not in problems(facts)


def test_unlimited_hard_limit_raises_soft_to_65536():
    facts = apply("h100_healthy", {"host.open_files": {"soft": 1024, "hard": -1}})
    _, remedies = problems(facts)["host.open-files-low"]
    assert remedies[0].commands[0] == "ulimit -n 65536"


def test_read_only_shm_is_remounted_not_chmodded():
    facts = apply("h100_healthy", {"container": _shm(writable=False, read_only=True)})
    _, remedies = problems(facts)["container.shm-not-writable"]
    assert "sudo mount -o remount,rw /dev/shm" in remedies[0].commands
    assert "chmod" not in _fix_text(remedies)


def test_amd_remedy_pins_torch_and_uses_the_newest_rocm_index_of_its_release():
    _, _, base, changes, _, _ = CASES[-2]
    _, remedies = problems(apply(base, changes))["cuda.available.amd-gpu-not-rocm"]
    command = remedies[0].commands[0]
    assert "torch==2.13.0" in command
    assert command.endswith("--index-url https://download.pytorch.org/whl/rocm7.2")


def test_live_facts_of_this_machine_get_no_new_finding(tmp_path):
    facts = load_facts("cpu_linux")
    facts["host"] = host_probe.gather()
    facts["container"] = container_probe.gather()
    found = problems(facts)
    if facts["host"]["open_files"]["soft"] not in range(0, 2048):
        assert "host.open-files-low" not in found
    assert not (NEW_IDS - {"host.open-files-low"}) & set(found)


# --- the probes, against fake trees ---------------------------------------------------------


def _tree(root: Path, files: dict[str, str], links: dict[str, str] = {}) -> Path:  # noqa: B006
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel, target in links.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)
    return root


def test_pci_probe_lists_display_controllers_and_their_driver(tmp_path):
    dev = "sys/bus/pci/devices"
    root = _tree(
        tmp_path,
        {
            f"{dev}/0000:01:00.0/vendor": "0x10de\n",
            f"{dev}/0000:01:00.0/device": "0x2204\n",
            f"{dev}/0000:01:00.0/class": "0x030000\n",
            f"{dev}/0000:01:00.1/vendor": "0x10de\n",  # the card's audio function
            f"{dev}/0000:01:00.1/class": "0x040300\n",
            f"{dev}/0000:03:00.0/vendor": "0x1002\n",
            f"{dev}/0000:03:00.0/device": "0x73bf\n",
            f"{dev}/0000:03:00.0/class": "0x030000\n",
            f"{dev}/0000:03:00.0/mem_info_vram_total": "17163091968\n",
            "sys/bus/pci/drivers/amdgpu/.keep": "",
        },
        {f"{dev}/0000:03:00.0/driver": str(tmp_path / "sys/bus/pci/drivers/amdgpu")},
    )
    gpus = host_probe.pci_gpus(root)
    assert [(g["address"], g["vendor"], g["driver"]) for g in gpus] == [
        ("0000:01:00.0", "0x10de", None),
        ("0000:03:00.0", "0x1002", "amdgpu"),
    ]
    assert gpus[1]["vram_bytes"] == 17163091968
    assert host_probe.pci_gpus(tmp_path / "nowhere") is None


def test_pci_probe_reads_regular_files_only_and_stops_at_64(tmp_path):
    dev = tmp_path / "sys/bus/pci/devices"
    files = {f"sys/bus/pci/devices/0000:{i:02x}:00.0/class": "0x030200" for i in range(70)}
    root = _tree(tmp_path, files)
    os.mkfifo(dev / "0000:00:00.0" / "vendor")  # a read would block: never opened
    gpus = host_probe.pci_gpus(root)
    assert len(gpus) == host_probe.PCI_MAX_GPUS
    assert gpus[0]["vendor"] is None


def test_open_files_probe_reads_this_process_limit():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    got = host_probe.open_files_limit()
    assert got["soft"] == (-1 if soft == resource.RLIM_INFINITY else soft)
    assert got["hard"] == (-1 if hard == resource.RLIM_INFINITY else hard)


def test_shm_probe_reads_a_read_only_mount(tmp_path):
    info = "36 25 0:31 / /dev/shm ro,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=65536k\n"
    root = _tree(tmp_path, {"proc/self/mountinfo": info})
    (root / "dev/shm").mkdir(parents=True)
    shm = container_probe.shm(root, container_probe.mounts(root))
    assert shm["read_only"] is True
    assert shm["writable"] is True  # the fake tree itself is writable: access(2) says so


def test_shm_probe_sees_a_directory_this_user_cannot_write(tmp_path):
    (tmp_path / "dev/shm").mkdir(parents=True)
    (tmp_path / "dev/shm").chmod(0o555)
    shm = container_probe.shm(tmp_path, [])
    # root may write anywhere but a read-only mount: access(2) answers as open(2) would.
    assert shm["writable"] is (os.geteuid() == 0)
    assert shm["read_only"] is None
