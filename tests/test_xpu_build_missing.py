"""xpu.build-missing (atlas class new:xpu-build-missing): a torch without XPU on a machine meant
for an Intel GPU. Each case is recorded facts with only what the thread's machine changes; the
healthy machines (every recorded one, a laptop with an Intel iGPU, an IPEX CPU server) must stay
quiet."""

from __future__ import annotations

import json

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import xpu
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.data import compat
from torchdoctor.data import xpu as xpu_data
from torchdoctor.report.result import Status

from .conftest import FACTS_DIR, load_facts, run_cli

XPU_INDEX = "--index-url https://download.pytorch.org/whl/xpu"
IPEX_INDEX = "--extra-index-url https://pytorch-extension.intel.com/release-whl/stable/xpu/us/"


def _pci(device: str, vendor: str = "0x8086", driver: str | None = "i915") -> dict:
    return {
        "address": "0000:03:00.0",
        "vendor": vendor,
        "device": device,
        "pci_class": "0x030000",
        "driver": driver,
        "vram_bytes": None,
    }


def _machine(base: str = "cpu_linux", torch: str | None = None, **changes) -> dict:
    f = load_facts(base)
    if torch:
        f["torch"]["version"] = torch
        f["packages"]["distributions"]["torch"]["version"] = torch
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = f
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return f


def _ipex(f: dict, version: str) -> dict:
    f["packages"]["distributions"][xpu_data.IPEX] = {"version": version, "location": "/x"}
    return f


def _judge(f: dict, expect: str = "auto"):
    (result,) = engine.diagnose(
        read_facts(f), Context(expect=expect), engine.select(["xpu"])
    ).checks
    return result


def _problem(f: dict, expect: str = "auto"):
    result = _judge(f, expect)
    assert [p.code for p in result.problems] == ["build-missing"], result.summary
    return result.problems[0]


def _commands(problem) -> list[str]:
    return [c for r in problem.remedies for c in r.commands]


def test_pytorch_is_not_linked_with_support_for_xpu_devices_ipex_1_11_intel_extension_244():
    """IPEX 1.11 and torch 1.11 were CPU-only builds (IPEX had no XPU before 1.10.200+gpu) on a
    machine with an Alder Lake GT1 iGPU. IPEX's CPU build beside an iGPU is also a healthy CPU
    setup, so only --expect xpu says XPU was meant. The thread gives no PCI ID: 0x4692 (an ADL-S
    ID in the kernel's list) stands in for the iGPU."""
    f = _ipex(_machine(torch="1.11.0", host__pci_gpus=[_pci("0x4692")]), "1.11.0")
    assert _judge(f).status == Status.SKIP
    problem = _problem(f, "xpu")
    assert problem.status == Status.FAIL and "--expect xpu" in problem.message
    native, keep = problem.remedies
    # No XPU wheel of torch 1.11: the newest release with XPU wheels for this Python, IPEX dropped.
    assert native.commands[0].endswith("uninstall -y intel-extension-for-pytorch")
    assert f"torch==2.14.1 {XPU_INDEX}" in native.commands[1]
    # Or IPEX's last XPU line, with the torch it was built for.
    assert f"torch==2.8.0 {XPU_INDEX}" in keep.commands[0]
    assert f"intel-extension-for-pytorch==2.8.10+xpu {IPEX_INDEX}" in keep.commands[1]


def test_xpu_is_available_false_on_arc_a770_nightly_labelled_xpu_built_for_cpu_pytorch_150260():
    """torch 2.8.0.dev20250327+xpu from the XPU nightly index with torch.xpu._is_compiled()
    False (a CPU binary, pytorch#149995), an Arc A770 (0x56a0), Python 3.12.5."""
    f = _machine(
        torch="2.8.0.dev20250327+xpu",
        host__pci_gpus=[_pci("0x56a0")],
        platform__python_version="3.12.5",
    )
    problem = _problem(f)
    assert problem.status == Status.FAIL and "+xpu label" in problem.message
    (fix,) = problem.remedies
    # The release of that nightly series, from the XPU index (no dev build is pinned).
    assert f"install --force-reinstall torch==2.8.0 {XPU_INDEX}" in fix.commands[0]
    assert "_is_compiled()" in fix.text and "pytorch/pytorch#149995" in fix.text


@pytest.mark.parametrize(
    "device",
    ["0x46a6", "0x7d55", "0x64a0", "0xa7a0", "0x9a49", "0x4692", "0x3e92"],
    ids=[
        "alder-lake-p",
        "meteor-lake",
        "lunar-lake",
        "raptor-lake-p",
        "tiger-lake",
        "adl-s",
        "cfl",
    ],
)
def test_cpu_wheel_on_a_laptop_with_an_intel_igpu_stays_quiet(device):
    f = _machine(host__pci_gpus=[_pci(device)])
    report = engine.diagnose(read_facts(f), Context(), engine.select())
    assert not [x.id for x in report.all_findings() if x.id.startswith("xpu")]
    assert _judge(f).status == Status.SKIP


def test_ipex_cpu_build_on_a_server_or_an_igpu_laptop_stays_quiet():
    assert _judge(_ipex(_machine(torch="2.3.0+cpu"), "2.3.0+cpu")).status == Status.SKIP
    laptop = _machine(torch="2.3.0+cpu", host__pci_gpus=[_pci("0x7d55")])
    assert _judge(_ipex(laptop, "2.3.0+cpu")).status == Status.SKIP
    # and the CUDA machine's recorded facts with an Arc beside its NVIDIA GPUs: CUDA wins.
    f = load_facts("h100_healthy")
    f["host"]["pci_gpus"] = [_pci("0x2330", "0x10de", "nvidia"), _pci("0x56a0")]
    assert _judge(f).status == Status.SKIP


@pytest.mark.parametrize("name", sorted(p.stem for p in FACTS_DIR.glob("*.json")))
def test_recorded_machines_get_no_build_missing_finding(name):
    report = engine.diagnose(read_facts(load_facts(name)), Context(), engine.select())
    assert "xpu.build-missing" not in [x.id for x in report.all_findings()]


def test_discrete_arc_b580_beside_a_cpu_wheel_keeps_the_release_and_adds_the_driver():
    f = _machine(host__pci_gpus=[_pci("0xe20b", driver=None)])
    problem = _problem(f)
    assert problem.status == Status.WARN and "Arc B-series (Battlemage)" in problem.message
    assert "intel-extension-for-pytorch" not in problem.message
    wheel, driver = problem.remedies
    assert f"torch==2.13.0 {XPU_INDEX}" in wheel.commands[0]
    assert "Level Zero" in driver.text and driver.evidence == ("host.pci_gpus.0.driver",)
    # --expect cpu says the CPU wheel is meant: nothing to say.
    assert _judge(f, "cpu").status == Status.SKIP


def test_ipex_xpu_build_over_a_cpu_torch_gets_its_pair_for_this_release_first():
    f = _ipex(_machine(torch="2.7.1+cpu"), "2.7.10+xpu")
    problem = _problem(f)
    assert problem.status == Status.FAIL
    keep, native = problem.remedies
    assert f"torch==2.7.1 {XPU_INDEX}" in keep.commands[0]
    assert f"intel-extension-for-pytorch==2.7.10+xpu {IPEX_INDEX}" in keep.commands[1]
    assert "uninstall -y intel-extension-for-pytorch" in native.commands[0]


def test_expect_xpu_fails_a_cpu_build_and_moves_an_older_torch_to_an_xpu_release():
    problem = _problem(_machine(), "xpu")
    assert problem.status == Status.FAIL and "--expect xpu" in problem.message
    assert f"torch==2.13.0 {XPU_INDEX}" in _commands(problem)[0]
    # torch 2.4 has no XPU wheels: the newest release that has them for Python 3.11.
    older = _problem(_machine(torch="2.4.1+cpu"), "xpu")
    assert f"torch==2.14.1 {XPU_INDEX}" in _commands(older)[0]


def test_windows_torch_2_5_moves_to_a_release_with_windows_companion_wheels():
    f = _machine(torch="2.5.1+cpu", platform__system="Windows")
    assert xpu.native_release(read_facts(f)) == "2.14"
    f["platform"]["system"] = "Linux"
    assert xpu.native_release(read_facts(f)) == "2.5"


def test_python_3_8_gets_no_command_only_the_python_range():
    f = _machine(torch="2.4.1+cpu", platform__python_version="3.8.10")
    (fix,) = _problem(f, "xpu").remedies
    assert not fix.commands and "Python 3.10 to 3.14" in fix.text


def test_cli_accepts_expect_xpu_and_fails_the_job(tmp_path):
    p = tmp_path / "facts.json"
    p.write_text(json.dumps(_machine()))
    proc = run_cli("check", "--facts", str(p), "--expect", "xpu", "--json", "--only", "xpu")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [(f["id"], f["level"]) for f in doc["findings"]] == [("xpu.build-missing", "error")]


def test_discrete_table_knows_the_cards_of_the_threads_and_no_igpu():
    assert xpu_data.discrete_family("0x8086", "0x56A0") == "Arc A-series (Alchemist, DG2)"
    assert xpu_data.discrete_family("0x8086", "0xe20b") == "Arc B-series (Battlemage)"
    assert xpu_data.discrete_family("0x8086", "0x0bd5") == "Data Center GPU Max (Ponte Vecchio)"
    assert xpu_data.discrete_family("0x8086", "0x56c0") == "Data Center GPU Flex (Arctic Sound-M)"
    assert xpu_data.discrete_family("0x10de", "0x56a0") is None  # another vendor's ID
    assert xpu_data.discrete_family("0x8086", "0x46a6") is None  # Alder Lake iGPU
    assert all(len(d) == 6 and d == d.lower() for d in xpu_data.DISCRETE)
    assert set(xpu_data.IPEX_FOR_TORCH) <= set(xpu_data.XPU_RELEASES) <= set(compat.RELEASES)
    assert xpu_data.ipex_is_xpu_build("1.10.200+gpu") and not xpu_data.ipex_is_xpu_build("1.11.0")


def test_cuda_wheel_beside_an_arc_and_no_nvidia_gpu_is_pointed_at_xpu_not_the_cpu_wheel():
    f = load_facts("h100_healthy")
    f["nvml"] = {"status": "unavailable", "error": "NVMLError_LibraryNotFound", "devices": []}
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": [], "warnings": []}
    f["host"]["nvidia"] = {"dev_nodes": [], "proc_driver_version": None, "uvm_loaded": False}
    f["host"]["pci_gpus"] = [_pci("0x56a0")]
    report = engine.diagnose(read_facts(f), Context(), engine.select(["cuda.available", "xpu"]))
    cuda, intel = report.checks
    assert cuda.status == Status.SKIP and "xpu check" in cuda.summary
    (problem,) = intel.problems
    assert f"torch==2.11.0 {XPU_INDEX}" in problem.remedies[0].commands[0]
