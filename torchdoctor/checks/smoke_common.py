"""What the three smoke checks share: whether the smoke test ran, and its per-device records."""

from __future__ import annotations

from typing import Any

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, pinned_family, python_cmd


def not_run(facts: Facts, ctx: Context) -> Verdict | None:
    """A skip/error verdict when there are no smoke results to judge, else None."""
    smoke = dig(facts, "smoke", {})
    if not ctx.smoke or smoke.get("enabled") is False:
        return verdict(Status.SKIP, "smoke tests not run (--no-smoke)")
    if not smoke:
        return verdict(
            Status.SKIP, "no smoke results in these facts (recorded without a smoke test)"
        )
    if dig(facts, "torch.status") != "ok":
        return verdict(Status.SKIP, "torch could not be examined; see torch.install")
    if not smoke.get("ran"):
        return verdict(
            Status.ERROR,
            f"the smoke test did not start: {smoke.get('reason', 'unknown reason')}",
            {"smoke": smoke},
            [Remedy("Fix the problem the other checks report first, then re-run.")],
        )
    return None


def accelerators(facts: Facts) -> list[str]:
    return [d for d in dig(facts, "smoke.planned", []) if d != "cpu"]


def failure_of(facts: Facts, device: str) -> dict[str, Any] | None:
    return dig(facts, "smoke.failures", {}).get(device)


def device_part(facts: Facts, device: str, part: str) -> tuple[dict[str, Any] | None, str | None]:
    """One device's record of one smoke part (transfer, memory…), or why there is none: the
    device failed as a whole, the part raised, or nothing came back."""
    failure = failure_of(facts, device)
    data = (dig(facts, "smoke.devices", {}).get(device) or {}).get(part)
    if failure or not data or data.get("error"):
        why = failure or {"message": (data or {}).get("error", "no result")}
        return None, failure_text(device, why)
    return data, None


def failure_text(device: str, failure: dict[str, Any]) -> str:
    kind = failure.get("kind")
    if kind == "exception":
        return f"{device}: {failure.get('type')}: {failure.get('message', '')[:200]}"
    return f"{device}: {failure.get('message') or kind}"


def device_remedy(device: str, facts: Facts) -> Remedy:
    if device.startswith("cuda"):
        return Remedy(
            f"Re-run with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel on {device}; check "
            "`nvidia-smi -q` for Xid/ECC errors, and reset or replace the GPU if it persists.",
            (
                "CUDA_LAUNCH_BLOCKING=1 torchdoctor check --only smoke.compute -v",
                "nvidia-smi -q -d ECC,PAGE_RETIREMENT",
            ),
        )
    if device == "cpu":
        return Remedy(
            "CPU kernels gave wrong results or raised: a broken BLAS/oneDNN build or an unstable "
            "CPU. Reinstall torch cleanly.",
            (
                f"{python_cmd(facts)} install --force-reinstall --no-cache-dir {' '.join(pinned_family(facts))}",
            ),
        )
    return Remedy(f"Re-run the smoke test on {device} alone and report the error upstream.")
