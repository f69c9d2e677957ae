"""Fold the smoke phase of probe runs into ``facts["smoke"]``, rerunning past a bad device.

The probe runs one stage per device. When a device hangs or kills the child (an illegal memory
access poisons the whole CUDA context), that device is recorded as failed and a fresh child runs
the smoke test for the devices after it, so one bad GPU never hides the state of the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..probes.runner import ProbeRun

PREFIX = "smoke."


def _device_of(stage: str | None) -> str | None:
    if stage and stage.startswith(PREFIX) and not stage.startswith(PREFIX + "peer."):
        return stage[len(PREFIX) :]
    return None


def _absorb(smoke: dict[str, Any], run: ProbeRun) -> None:
    for stage, data in run.stages.items():
        if stage.startswith(PREFIX + "peer."):
            smoke["peers"][stage[len(PREFIX + "peer.") :]] = data
        elif _device_of(stage):
            smoke["devices"][_device_of(stage)] = data
    for stage, err in run.errors.items():
        if _device_of(stage):
            smoke["failures"][_device_of(stage)] = {"kind": "exception", **err}


def collect(first: ProbeRun, size: str, rerun: Callable[[list[str]], ProbeRun]) -> dict[str, Any]:
    """``rerun(devices)`` runs a smoke-only child for ``devices``."""
    smoke: dict[str, Any] = {
        "enabled": True,
        "size": size,
        "ran": first.phase == "smoke",
        "planned": list(first.phase_info.get("devices") or []),
        "devices": {},
        "peers": {},
        "failures": {},
        "reruns": 0,
    }
    if not smoke["ran"]:
        smoke["reason"] = first.message or "the probe stopped before the smoke phase"
        return smoke
    run = first
    while True:
        _absorb(smoke, run)
        bad = _device_of(run.unfinished_stage)
        if run.status == "ok" or bad is None:
            break
        smoke["failures"][bad] = {"kind": run.status, "message": run.message, "signal": run.signal}
        planned = smoke["planned"]
        left = planned[planned.index(bad) + 1 :] if bad in planned else []
        if not left:
            break
        smoke["reruns"] += 1
        run = rerun(left)
    return smoke
