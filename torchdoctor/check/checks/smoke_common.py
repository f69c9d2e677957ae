"""What the three smoke checks share: whether the smoke test ran, and its per-device records."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from torchdoctor.report.result import Remedy, Status, Verdict, verdict

from ..record import Facts
from ..record.smoke import Compute, Memory, SmokeDevice, SmokeFailure, Transfer
from .common import Context, grounded, pinned_family, python_cmd

Part = TypeVar("Part", Compute, Transfer, Memory)


def not_run(facts: Facts, ctx: Context) -> Verdict | None:
    """A skip/error verdict when there are no smoke results to judge, else None."""
    smoke = facts.smoke
    if not ctx.smoke or smoke.enabled is False:
        return verdict(Status.SKIP, "smoke tests not run (--no-smoke)")
    if not smoke:
        return verdict(
            Status.SKIP, "no smoke results in these facts (recorded without a smoke test)"
        )
    if facts.torch.status != "ok":
        return verdict(Status.SKIP, "torch could not be examined; see torch.install")
    if not smoke.ran:
        return verdict(
            Status.ERROR,
            f"the smoke test did not start: {smoke.reason or 'unknown reason'}",
            {"smoke": smoke.raw},
            [
                Remedy(
                    "Fix the problem the other checks report first, then re-run.",
                    evidence=grounded(
                        facts, "smoke.reason", "smoke.ran", "smoke.failures", "smoke.devices"
                    ),
                )
            ],
        )
    return None


def accelerators(facts: Facts) -> list[str]:
    return [d for d in facts.smoke.planned if d != "cpu"]


def failure_of(facts: Facts, device: str) -> SmokeFailure | None:
    return facts.smoke.failures.get(device)


def device_part(
    facts: Facts, device: str, part: Callable[[SmokeDevice], Part]
) -> tuple[Part | None, str | None]:
    """One device's record of one smoke part (``lambda d: d.transfer``…), or why there is none:
    the device failed as a whole, the part raised, or nothing came back."""
    failure = failure_of(facts, device)
    record = facts.smoke.devices.get(device)
    data = part(record) if record else None
    if failure or not data or data.error:
        return None, failure_text(device, failure, data.error if data else None)
    return data, None


def failure_text(device: str, failure: SmokeFailure | None, error: str | None = None) -> str:
    """What went wrong on ``device``: its recorded failure, else the part's error."""
    if not failure:
        return f"{device}: {error or 'no result'}"
    if failure.kind == "exception":
        return f"{device}: {failure.type}: {(failure.message or '')[:200]}"
    return f"{device}: {failure.message or failure.kind}"


def device_remedy(device: str, facts: Facts) -> Remedy:
    if device.startswith("cuda"):
        return Remedy(
            f"Re-run with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel on {device}; check "
            "`nvidia-smi -q` for Xid/ECC errors, and reset or replace the GPU if it persists.",
            (
                "CUDA_LAUNCH_BLOCKING=1 torchdoctor check --only smoke.compute -v",
                "nvidia-smi -q -d ECC,PAGE_RETIREMENT",
            ),
            evidence=grounded(
                facts, "smoke.reason", "smoke.ran", "smoke.failures", "smoke.devices"
            ),
        )
    if device == "cpu":
        return Remedy(
            "CPU kernels gave wrong results or raised: a broken BLAS/oneDNN build or an unstable "
            "CPU. Reinstall torch cleanly.",
            (
                f"{python_cmd(facts)} install --force-reinstall --no-cache-dir {' '.join(pinned_family(facts))}",
            ),
            evidence=grounded(
                facts, "smoke.reason", "smoke.ran", "smoke.failures", "smoke.devices"
            ),
        )
    return Remedy(
        f"Re-run the smoke test on {device} alone and report the error upstream.",
        evidence=grounded(facts, "smoke.reason", "smoke.ran", "smoke.failures", "smoke.devices"),
    )
