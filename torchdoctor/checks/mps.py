"""mps: Apple's Metal backend — built, available, macOS recent enough, fallback variable."""

from __future__ import annotations

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, pinned_family, probe_stuck, python_cmd, torch_ok

ID = "mps"
TITLE = "Apple MPS backend"
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "mps"

MIN_MACOS = (14, 0)  # torch ≥ 2.6 requires macOS 14 for MPS (older releases: 12.3/13)


def check(facts: Facts, ctx: Context) -> Verdict:
    system = dig(facts, "platform.system")
    if system != "Darwin":
        status = Status.FAIL if ctx.expect == "mps" else Status.SKIP
        return verdict(
            status,
            f"MPS exists only on macOS (this is {system or 'unknown'})",
            {},
            [Remedy("MPS needs a Mac with Apple Silicon.")] if status == Status.FAIL else [],
        )
    if not torch_ok(facts):
        return verdict(Status.SKIP, "torch could not be examined; see torch.install")
    stuck = probe_stuck(facts, ("mps",))
    if stuck:
        return stuck
    mac = dig(facts, "platform.mac_ver", "")
    macv = tuple(int(x) for x in mac.split(".")[:2] if x.isdigit())
    mps = dig(facts, "torch.mps", {})
    fallback = dig(facts, "env.PYTORCH_ENABLE_MPS_FALLBACK")
    details = {
        "macos": mac,
        "built": mps.get("built", False),
        "available": mps.get("available", False),
        "machine": dig(facts, "platform.machine"),
        "fallback": fallback,
    }
    bad = Status.FAIL if ctx.expect == "mps" else Status.WARN
    if dig(facts, "platform.rosetta"):
        return verdict(
            bad,
            "Python runs under Rosetta (x86_64): MPS is unavailable",
            details,
            [Remedy("Install an arm64 Python and recreate the environment.")],
        )
    if not mps.get("built"):
        return verdict(
            bad,
            "this torch build has no MPS support",
            details,
            [
                Remedy(
                    "Install the macOS arm64 wheel from PyPI.",
                    (
                        f"{python_cmd(facts)} install --force-reinstall {' '.join(pinned_family(facts))}",
                    ),
                )
            ],
        )
    if not mps.get("available"):
        if macv and macv < MIN_MACOS:
            return verdict(
                bad,
                f"macOS {mac} is too old for MPS (needs {MIN_MACOS[0]}.{MIN_MACOS[1]}+)",
                details,
                [Remedy("Upgrade macOS.", ("softwareupdate --list",))],
            )
        return verdict(
            bad,
            "MPS is built but not available",
            details,
            [Remedy("MPS needs Apple Silicon and a Metal-capable macOS session.")],
        )
    summary = f"MPS available on macOS {mac}"
    if fallback != "1":
        summary += " (PYTORCH_ENABLE_MPS_FALLBACK unset: ops missing on MPS will raise)"
    return verdict(Status.PASS, summary, details)
