"""smoke.compute: matmul and conv2d on every device and dtype, against exact answers.

The probe feeds integer inputs whose products every dtype holds exactly and checks them against
answers worked out in pure Python (probes/child/smoke_probe.py), so a library wrong in every dtype
fails. Facts recorded before that carry relative errors against a float64 torch reference.
"""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems

from ..record import Facts
from ..record.smoke import Compute, DtypeResult
from .common import Context
from .smoke_common import device_remedy, failure_of, failure_text, not_run

ID = "smoke.compute"
TITLE = "Compute smoke test on each device"
ORDER = 160  # position in the report: basic facts first, the smoke test last
# The problems it reports, per device (and dtype), each its own finding id (smoke.compute.<code>).
FINDINGS = {
    "device-failed": "the compute test raised, hung or crashed on a device, or gave no result",
    "dtype-failed": "matmul or conv2d raised in one dtype on a device",
    "wrong-results": "matmul or conv2d gave wrong results on a device",
    "test-fault": "a fault injected through TORCHDOCTOR_TEST_SMOKE_FAULT (tests only)",
}


def _wrong(device: str, dtype: str, r: DtypeResult) -> str:
    if r.tolerance is not None:  # facts from before exact references
        worst = max(r.matmul_rel_err or 0, r.conv2d_rel_err or 0)
        return f"{device} {dtype}: wrong results (relative error {worst:.2g} > {r.tolerance})"
    errs = {"matmul": r.matmul_max_err, "conv2d": r.conv2d_max_err}
    wrong = [f"{op} off by up to {err:.3g}" for op, err in errs.items() if err]
    return (
        f"{device} {dtype}: wrong results ({', '.join(wrong) or 'not exact'}; "
        "exact integer answers expected)"
    )


def _dtype_problems(device: str, compute: Compute, fix: Remedy) -> list[Problem]:
    if compute.error:
        return [Problem("device-failed", Status.FAIL, f"{device}: {compute.error}", [fix])]
    out = []
    for dtype, r in compute.dtypes.items():
        if r.error:
            out.append(Problem("dtype-failed", Status.FAIL, f"{device} {dtype}: {r.error}", [fix]))
        elif not r.ok:
            out.append(Problem("wrong-results", Status.FAIL, _wrong(device, dtype, r), [fix]))
    return out


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    devices = facts.smoke.devices
    problems: list[Problem] = []
    passed: list[str] = []
    table = {}
    for device in facts.smoke.planned:
        failure = failure_of(facts, device)
        record = devices.get(device)
        fix = device_remedy(device, facts)
        if failure or not record or not record.compute:
            why = failure_text(device, failure)
            problems.append(Problem("device-failed", Status.FAIL, why, [fix]))
            continue
        compute = record.compute
        table[device] = {k: v.ok for k, v in compute.dtypes.items()}
        found = _dtype_problems(device, compute, fix)
        problems += found
        if not found:
            passed.append(f"{device} ({'/'.join(compute.dtypes)})")
    details = {"results": table, "size": facts.smoke.size}
    injected = {d: v.test_fault_injected for d, v in devices.items() if v.test_fault_injected}
    if injected:
        details["test_fault_injected"] = injected
        why = f"test faults injected through TORCHDOCTOR_TEST_SMOKE_FAULT: {injected}"
        problems.append(Problem("test-fault", Status.FAIL, why, []))
    summary = "matmul and conv2d correct on " + ", ".join(passed)
    if len(passed) == 1:
        summary += "; no accelerator: accelerator parts skipped"
    return from_problems(problems, details, summary)
