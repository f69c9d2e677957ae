"""Smoke checks over facts, the rerun-past-a-bad-device logic, and the real probe with injected faults."""

from __future__ import annotations

import copy
import json

import pytest

from torchdoctor.check import engine, gather_smoke, remedy_audit
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import load_facts as typed
from torchdoctor.check.record import read_facts
from torchdoctor.probes.child import smoke_probe
from torchdoctor.probes.runner import ProbeRun
from torchdoctor.report.findings import Selection
from torchdoctor.report.result import Status

from .conftest import needs_torch, run_cli
from .facts.build_corpus import gpu_smoke


def judge(facts: dict, check_id: str, smoke: bool = True):
    return engine.run_check(by_id()[check_id], read_facts(facts), Context(smoke=smoke))


def two_gpus(facts) -> dict:
    f = facts("h100_healthy")
    gpu1 = copy.deepcopy(f["nvml"]["devices"][0])
    gpu1.update(index=1, uuid="GPU-1a2b3c4d-0000-1111-2222-333344445556")
    f["nvml"]["devices"].append(gpu1)
    dev1 = copy.deepcopy(f["torch"]["cuda"]["devices"][0])
    dev1.update(index=1, uuid="1a2b3c4d-0000-1111-2222-333344445556")
    f["torch"]["cuda"]["devices"].append(dev1)
    f["smoke"]["planned"].append("cuda:1")
    f["smoke"]["devices"]["cuda:1"] = gpu_smoke("cuda:1")
    return f


def test_healthy_gpu_smoke_passes(facts):
    f = facts("h100_healthy")
    for cid in ("smoke.compute", "smoke.transfer", "smoke.cuda_memory"):
        assert judge(f, cid).status == Status.PASS, cid
    assert "53.1 pinned" in judge(f, "smoke.transfer").summary
    assert (
        "returned 64 MiB to the driver (64 MiB test block)" in judge(f, "smoke.cuda_memory").summary
    )


def test_cpu_only_machine_runs_cpu_and_skips_accelerator_parts(facts):
    f = facts("cpu_linux")
    compute = judge(f, "smoke.compute")
    assert compute.status == Status.PASS and "accelerator parts skipped" in compute.summary
    assert judge(f, "smoke.transfer").status == Status.SKIP
    assert judge(f, "smoke.cuda_memory").status == Status.SKIP


def test_no_smoke_skips_all_three(facts):
    for cid in ("smoke.compute", "smoke.transfer", "smoke.cuda_memory"):
        assert judge(facts("h100_healthy"), cid, smoke=False).status == Status.SKIP


def test_device_with_wrong_numbers_fails_naming_device_and_dtype(facts):
    f = two_gpus(facts)
    f["smoke"]["devices"]["cuda:1"]["compute"]["dtypes"]["float16"].update(
        ok=False, matmul_rel_err=0.9
    )
    result = judge(f, "smoke.compute")
    assert result.status == Status.FAIL
    assert "cuda:1 float16: wrong results" in result.summary
    assert "cuda:0" not in result.summary
    assert any("CUDA_LAUNCH_BLOCKING=1" in c for r in result.remedies for c in r.commands)


def test_device_whose_test_raised_fails_others_kept(facts):
    f = two_gpus(facts)
    del f["smoke"]["devices"]["cuda:0"]
    f["smoke"]["failures"]["cuda:0"] = {
        "kind": "exception",
        "type": "RuntimeError",
        "message": "CUDA error: an illegal memory access was encountered",
    }
    result = judge(f, "smoke.compute")
    assert result.status == Status.FAIL and "illegal memory access" in result.summary
    assert judge(f, "smoke.transfer").details["bandwidth"]["cuda:1"]["h2d_pinned_gbps"] == 53.1


def test_degraded_pcie_link_warns(facts):
    f = facts("h100_healthy")
    f["smoke"]["devices"]["cuda:0"]["transfer"]["h2d_pinned_gbps"] = 6.0
    result = judge(f, "smoke.transfer")
    assert result.status == Status.WARN and "Gen5 x16" in result.summary
    f = facts("h100_healthy")
    f["nvml"]["devices"][0]["pcie"]["width_current"] = 8
    result = judge(f, "smoke.transfer")
    assert result.status == Status.WARN and "x8 of x16" in result.summary
    f = facts("h100_healthy")
    f["nvml"]["devices"][0]["pcie"]["gen_current"] = 1  # idle GPUs drop the link generation
    assert judge(f, "smoke.transfer").status == Status.PASS


def test_empty_cache_returning_nothing_warns(facts):
    f = facts("h100_healthy")
    f["smoke"]["devices"]["cuda:0"]["memory"]["returned_mib"] = 0.0
    result = judge(f, "smoke.cuda_memory")
    assert result.status == Status.WARN
    assert any("expandable_segments" in c for r in result.remedies for c in r.commands)


@pytest.mark.parametrize(
    ("version", "command"),
    [
        ("2.11.0+cu130", "export PYTORCH_ALLOC_CONF=expandable_segments:True"),
        # 2.9.1's CUDA allocator reads only PYTORCH_CUDA_ALLOC_CONF (pytorch#183387)
        ("2.9.1+cu128", "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        # expandable_segments is first in libc10_cuda.so of the 2.1.2 wheel: 2.0 would raise
        # "Unrecognized CachingAllocator option: expandable_segments"
        ("2.0.1+cu118", None),
        ("1.12.1+cu116", None),
    ],
)
def test_empty_cache_remedy_sets_only_what_the_release_reads(facts, version, command):
    f = facts("h100_healthy")
    f["smoke"]["devices"]["cuda:0"]["memory"]["returned_mib"] = 0.0
    f["torch"]["version"] = version
    result = judge(f, "smoke.cuda_memory")
    assert result.status == Status.WARN
    exports = [c for r in result.remedies for c in r.commands if c.startswith("export ")]
    assert exports == ([command] if command else [])
    assert not any(remedy_audit.faults(f, r) for r in result.remedies)


def test_smoke_never_started_is_an_error(facts):
    result = judge(facts("probe_hang_cuda_init"), "smoke.compute")
    assert result.status == Status.ERROR and "cuda.init" in result.summary


def _run(status, stages, unfinished=None, planned=("cpu", "cuda:0", "cuda:1", "cuda:2")):
    run = ProbeRun(status=status, stages=stages, unfinished_stage=unfinished, phase="smoke")
    run.phase_info = {"devices": list(planned)}
    run.message = f"{status} in {unfinished}"
    return run


def test_collect_reruns_the_devices_after_a_hung_one():
    first = _run("timeout", {"smoke.cpu": {"ok": 1}, "smoke.cuda:0": {"ok": 2}}, "smoke.cuda:1")
    calls = []

    def rerun(devices):
        calls.append(devices)
        return _run("ok", {"smoke.cuda:2": {"ok": 3}}, planned=devices)

    smoke = gather_smoke.collect(first, "quick", rerun)
    assert calls == [["cuda:2"]]
    assert set(smoke["devices"]) == {"cpu", "cuda:0", "cuda:2"}
    assert smoke["failures"]["cuda:1"]["kind"] == "timeout"
    assert smoke["reruns"] == 1


def test_collect_gives_up_after_the_last_device():
    first = _run("crashed", {"smoke.cpu": {}}, "smoke.cuda:2")
    smoke = gather_smoke.collect(first, "quick", lambda d: pytest.fail("no rerun expected"))
    assert smoke["failures"]["cuda:2"]["kind"] == "crashed"


def test_collect_when_smoke_never_started():
    run = ProbeRun(status="timeout", unfinished_stage="cuda.init")
    run.message = "stuck in cuda.init"
    smoke = gather_smoke.collect(run, "quick", lambda d: pytest.fail("no rerun expected"))
    assert smoke["ran"] is False and "cuda.init" in smoke["reason"]


def _checks(proc) -> dict:
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


@needs_torch
@pytest.mark.parametrize(
    ("fault", "needle"),
    [("wrong", "wrong results"), ("raise", "injected fault"), ("segv", "SIGSEGV")],
)
def test_real_probe_reports_an_injected_cpu_fault(fault, needle):
    env = {"TORCHDOCTOR_TEST_SMOKE_FAULT": f"cpu={fault}"}
    proc = run_cli("check", "--json", env=env)
    assert proc.returncode == 1
    checks = _checks(proc)
    assert checks["smoke.compute"]["status"] == "fail"
    assert needle in checks["smoke.compute"]["summary"]
    assert checks["torch.install"]["status"] == "pass"  # gathered before the smoke phase


@needs_torch
def test_real_probe_hanging_mid_smoke_keeps_earlier_facts():
    env = {"TORCHDOCTOR_TEST_SMOKE_FAULT": "cpu=hang"}
    proc = run_cli("check", "--json", "--timeout", "20", env=env, timeout=120)
    checks = _checks(proc)
    assert proc.returncode == 1
    assert checks["smoke.compute"]["status"] == "fail"
    assert "deadline" in checks["smoke.compute"]["summary"]
    assert checks["torch.build"]["status"] == "pass"
    assert checks["host"]["status"] in ("pass", "warn")


class _FakeCachingAllocator:
    """A stand-in for torch.cuda's caching allocator: freed blocks stay reserved until
    empty_cache() hands them back to the driver. Enough to exercise the probe's CUDA memory cycle
    (its arithmetic and the order of its steps) on a machine without a GPU."""

    TOTAL = 80 * 1024**3

    def __init__(self) -> None:
        self.allocated = 0
        self.reserved = 0
        self.empty_cache_calls = 0

    # torch.cuda API used by smoke_probe.cuda_memory
    def memory_allocated(self, idx):
        return self.allocated

    def memory_reserved(self, idx):
        return self.reserved

    def mem_get_info(self, idx):
        return self.TOTAL - self.reserved, self.TOTAL

    def empty_cache(self):
        self.empty_cache_calls += 1
        self.reserved = self.allocated

    def synchronize(self, device=None):
        pass


class _FakeTorch:
    uint8 = "uint8"

    def __init__(self) -> None:
        self.cuda = _FakeCachingAllocator()

    def empty(self, nbytes, dtype=None, device=None):
        import weakref

        cuda = self.cuda
        cuda.allocated += nbytes
        cuda.reserved = max(cuda.reserved, cuda.allocated)

        class Block:
            pass

        block = Block()
        weakref.finalize(block, lambda: setattr(cuda, "allocated", cuda.allocated - nbytes))
        return block


def test_cuda_memory_cycle_reports_what_empty_cache_returned():
    fake = _FakeTorch()
    out = smoke_probe.cuda_memory(fake, "cuda:0", smoke_probe.SIZES["quick"])
    block = smoke_probe.SIZES["quick"]["block_mib"]
    assert fake.cuda.empty_cache_calls == 1
    assert out["after_alloc"]["allocated_bytes"] == block * 1024**2
    assert out["after_free"]["allocated_bytes"] == 0
    assert out["after_free"]["reserved_bytes"] == block * 1024**2  # cached, not yet returned
    assert out["after_empty_cache"]["reserved_bytes"] == 0
    assert out["returned_mib"] == block


# --------------------------------------------------------------------------- exact references


def test_matmul_reference_is_exact_and_needs_no_torch():
    """The reference is pure Python: checked here against a plain triple loop."""
    a, b = smoke_probe._matrix(9, 9, 1), smoke_probe._matrix(9, 9, 2)
    product = [[sum(a[i][k] * b[k][j] for k in range(9)) for j in range(9)] for i in range(9)]
    ref = smoke_probe.matmul_reference(a, b)
    assert smoke_probe.matmul_error(ref, product) == 0
    wrong = copy.deepcopy(product)
    wrong[4][5] += 1  # one entry off, in the middle: caught by its row and column sums
    assert smoke_probe.matmul_error(ref, wrong) == 1
    wrong[4][5] = float("nan")
    assert smoke_probe.matmul_error(ref, wrong) == float("inf")


def test_inputs_stay_exact_in_bfloat16_at_the_full_size():
    """At most 256 non-zero terms per dot product: every partial sum is an integer that
    bfloat16 (8 significant bits) holds exactly, whatever order a kernel adds in."""
    n = smoke_probe.SIZES["full"]["matmul"]
    stride = -(-n // smoke_probe.EXACT_TERMS)
    a, b = smoke_probe._matrix(n, n, 1, stride), smoke_probe._matrix(n, n, 2, stride)
    nonzero_a = max(sum(1 for v in row if v) for row in a)
    assert nonzero_a <= smoke_probe.EXACT_TERMS and all(v in (-1, 0, 1) for row in b for v in row)


def test_conv_reference_matches_a_plain_loop():
    x = [[smoke_probe._matrix(5, 5, 3 * i + j) for j in range(3)] for i in range(2)]
    w = [[smoke_probe._matrix(3, 3, 20 + 3 * o + j) for j in range(3)] for o in range(4)]

    def at(b, o, h, c):
        return sum(
            x[b][ch][h + dh - 1][c + dw - 1] * w[o][ch][dh][dw]
            for ch in range(3)
            for dh in range(3)
            for dw in range(3)
            if 0 <= h + dh - 1 < 5 and 0 <= c + dw - 1 < 5
        )

    got = [
        [[[at(b, o, h, c) for c in range(5)] for h in range(5)] for o in range(4)] for b in range(2)
    ]
    ref = smoke_probe.conv_reference(x, w, [0, 2, 4])
    assert smoke_probe.conv_error(ref, got) == 0
    got[1][3][4][0] -= 2
    assert smoke_probe.conv_error(ref, got) == 2


@needs_torch
def test_a_library_wrong_in_every_dtype_fails_the_compute_smoke_test():
    """Reported: the reference was torch itself in float64, so a BLAS wrong for every dtype
    passed. Here matmul and conv2d are 1% wrong in float64 too; the check must still fail."""
    env = {"TORCHDOCTOR_TEST_SMOKE_FAULT": "cpu=library"}
    proc = run_cli("check", "--json", env=env)
    assert proc.returncode == 1
    compute = _checks(proc)["smoke.compute"]
    assert compute["status"] == "fail"
    assert compute["details"]["results"]["cpu"] == {"float32": False}
    assert "cpu float32: wrong results (matmul off by up to" in compute["summary"]


def test_transfer_that_raised_out_of_memory_fails_with_its_error_and_the_facts_still_load(facts):
    """The probe records a part that raised as {"ok": false, "error": ...}: that is a result,
    not a malformed facts file (a dumped file with it must replay), and the finding names it."""
    f = two_gpus(facts)
    f["smoke"]["devices"]["cuda:0"]["transfer"] = {
        "ok": False,
        "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB",
    }
    f["smoke"]["devices"]["cuda:0"]["memory"] = {"ok": False, "error": "RuntimeError: boom"}
    typed(f)  # strict, as for --facts FILE: must not raise
    report = engine.diagnose(
        read_facts(f), Context(), engine.select(["smoke.transfer", "smoke.cuda_memory"])
    )
    assert report.facts_problems == []
    found = {x.id: x for x in report.all_findings()}
    assert set(found) == {"smoke.transfer.device-failed", "smoke.cuda_memory.device-failed"}
    assert found["smoke.transfer.device-failed"].message.startswith("cuda:0: OutOfMemoryError")
    assert "cuda:1" in report.checks[0].details["bandwidth"]  # the other GPU still measured


def test_slow_link_and_changed_round_trip_are_two_findings_silenced_apart(facts):
    f = two_gpus(facts)
    f["smoke"]["devices"]["cuda:0"]["transfer"]["h2d_pinned_gbps"] = 6.0
    f["smoke"]["devices"]["cuda:1"]["transfer"]["roundtrip_pinned_exact"] = False
    result = judge(f, "smoke.transfer")
    assert [p.code for p in result.problems] == ["roundtrip-changed", "link-slow"]
    assert result.status == Status.FAIL
    assert result.summary.startswith("cuda:1: round trip changed the data (roundtrip_pinned_exact)")
    report = engine.diagnose(
        read_facts(f),
        Context(),
        engine.select(["smoke.transfer"]),
        selection=Selection(ignore=("smoke.transfer.link-slow",)),
    )
    kept, silenced = report.findings()
    assert [x.id for x in kept] == ["smoke.transfer.roundtrip-changed"] and silenced == 1
