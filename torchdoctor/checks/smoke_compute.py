"""smoke.compute: matmul and conv2d on every device and dtype, against exact answers.

The probe feeds integer inputs whose products every dtype holds exactly and checks them against
answers worked out in pure Python (probes/smoke_probe.py), so a library wrong in every dtype
fails. Facts recorded before that carry relative errors against a float64 torch reference.
"""

from __future__ import annotations

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context
from .smoke_common import device_remedy, failure_of, failure_text, not_run

ID = "smoke.compute"
TITLE = "Compute smoke test on each device"
ORDER = 160  # position in the report: basic facts first, the smoke test last


def _dtype_problems(device: str, compute: dict) -> list[str]:
    if compute.get("error"):
        return [f"{device}: {compute['error']}"]
    out = []
    for dtype, r in compute.get("dtypes", {}).items():
        if r.get("error"):
            out.append(f"{device} {dtype}: {r['error']}")
        elif not r.get("ok") and "tolerance" in r:  # facts from before exact references
            worst = max(r.get("matmul_rel_err", 0), r.get("conv2d_rel_err", 0))
            out.append(
                f"{device} {dtype}: wrong results (relative error {worst:.2g} > {r.get('tolerance')})"
            )
        elif not r.get("ok"):
            wrong = [
                f"{op} off by up to {r[f'{op}_max_err']:.3g}"
                for op in ("matmul", "conv2d")
                if r.get(f"{op}_max_err")
            ]
            out.append(
                f"{device} {dtype}: wrong results ({', '.join(wrong) or 'not exact'}; "
                "exact integer answers expected)"
            )
    return out


def check(facts: Facts, ctx: Context) -> Verdict:
    skipped = not_run(facts, ctx)
    if skipped:
        return skipped
    devices = dig(facts, "smoke.devices", {})
    problems: list[str] = []
    remedies: list[Remedy] = []
    passed: list[str] = []
    table = {}
    for device in dig(facts, "smoke.planned", []):
        failure = failure_of(facts, device)
        compute = (devices.get(device) or {}).get("compute")
        if failure or compute is None:
            problems.append(failure_text(device, failure or {"message": "no result"}))
            remedies.append(device_remedy(device, facts))
            continue
        table[device] = {k: v.get("ok") for k, v in compute.get("dtypes", {}).items()}
        found = _dtype_problems(device, compute)
        if found:
            problems += found
            remedies.append(device_remedy(device, facts))
        else:
            passed.append(f"{device} ({'/'.join(compute.get('dtypes', {}))})")
    details = {"results": table, "size": dig(facts, "smoke.size")}
    injected = {
        d: v.get("test_fault_injected") for d, v in devices.items() if v.get("test_fault_injected")
    }
    if injected:
        details["test_fault_injected"] = injected
        problems.append(f"test faults injected through TORCHDOCTOR_TEST_SMOKE_FAULT: {injected}")
    if problems:
        return verdict(Status.FAIL, "; ".join(problems), details, remedies)
    summary = "matmul and conv2d correct on " + ", ".join(passed)
    if len(passed) == 1:
        summary += "; no accelerator: accelerator parts skipped"
    return verdict(Status.PASS, summary, details)
