"""mps: Apple's Metal backend — built, available, macOS recent enough, fallback variable."""

from __future__ import annotations

from typing import Any

from torchdoctor.data import compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import pasted_errors
from .common import (
    Context,
    grounded,
    not_in_report,
    pasted,
    pinned_family,
    probe_stuck,
    python_cmd,
    quote,
    quoted,
    torch_ok,
)

ID = "mps"
TITLE = "Apple MPS backend"
ORDER = 80  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("platform", "torch.version")
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "mps"

MIN_MACOS = (14, 0)  # torch ≥ 2.6 requires macOS 14 for MPS
# MPS arrived in torch 1.12 needing macOS 12.3; torch 2.5 needs 13.0 although its message still
# said 12.3 (a maintainer in pytorch/pytorch#139425, macOS 12.7.6 with torch 2.5.1).
FIRST_MPS_RELEASE = (1, 12)
OLD_MIN_MACOS = (12, 3)
# (first torch release, the macOS it needs for MPS), newest first.
FLOORS = (((2, 6), MIN_MACOS), ((2, 5), (13, 0)), (FIRST_MPS_RELEASE, OLD_MIN_MACOS))
FINDINGS = {
    "op-not-implemented": "a pasted NotImplementedError: an operator without an MPS kernel",
    "out-of-memory": "a pasted 'MPS backend out of memory': the allocator's watermark cap",
    "vm": "macOS in a virtual machine: its paravirtual GPU reports MPS that does not run",
}
# the facts every MPS remedy rests on: which Mac, which Python, which torch
MAC = ("platform.system", "platform.machine", "platform.mac_ver", "platform.rosetta")
MAC += ("torch.version", "torch.mps")


def min_macos(torch_version: str | None) -> tuple[int, int] | None:
    """The oldest macOS on which this torch enables MPS; None for a torch without MPS."""
    v = compat.parse_version(torch_version)[:2]
    if not v:
        return MIN_MACOS
    return next((floor for first, floor in FLOORS if v >= first), None)


def last_torch_for(macos: tuple[int, ...]) -> str | None:
    """The newest torch series whose MPS runs on this macOS ('2.5.*'), None when none does
    or the newest one does (nothing older to keep)."""
    fits = [first for first, floor in FLOORS if macos >= floor]
    if not fits or fits[0] == FLOORS[0][0]:
        return None
    newer = FLOORS[[f for f, _ in FLOORS].index(fits[0]) - 1][0]
    return f"{newer[0]}.{newer[1] - 1}.*"


def _off_macos(facts: Facts, ctx: Context) -> Verdict:
    status = Status.FAIL if ctx.expect == "mps" else Status.SKIP
    system = facts.platform.system
    fix = Remedy("MPS needs a Mac with Apple Silicon.", evidence=("platform.system",))
    if facts.container.detected:
        # Docker Desktop on a Mac runs a Linux VM: Metal does not reach it
        # (sonoisa/arm64-docker-pytorch-tensorflow#3).
        fix = Remedy(
            "Metal does not reach Linux containers or VMs, even on a Mac: run torch natively on "
            "macOS to use MPS; inside the container only the CPU is there.",
            evidence=grounded(facts, "platform.system", "container.detected"),
        )
    return verdict(
        status,
        f"MPS exists only on macOS (this is {system or 'unknown'})",
        {},
        [fix] if status == Status.FAIL else [],
    )


def _too_old(facts: Facts, details: dict[str, Any], bad: Status) -> Verdict | None:
    """Rosetta, a torch without MPS, or a macOS older than this torch's floor."""
    if facts.platform.rosetta:
        return verdict(
            bad,
            "Python runs under Rosetta (x86_64): MPS is unavailable",
            details,
            [
                Remedy(
                    "Install an arm64 Python and recreate the environment.",
                    evidence=grounded(facts, *MAC),
                )
            ],
        )
    version = facts.torch.version
    floor = min_macos(version)
    mac = facts.platform.mac_ver or ""
    macv = tuple(int(x) for x in mac.split(".")[:2] if x.isdigit())
    if _intel_mac(facts, macv):
        return verdict(
            Status.SKIP,
            "MPS needs an arm64 Python on Apple Silicon; this Python is x86_64",
            details,
        )
    if floor is None:
        also = " and macOS 12.3 or later" if macv and macv < OLD_MIN_MACOS else ""
        return verdict(
            bad,
            f"torch {version} predates MPS (added in torch 1.12)",
            details,
            [
                Remedy(
                    f"Upgrade torch (1.12 or later){also} to use the GPU of this Apple Silicon Mac.",
                    evidence=grounded(facts, *MAC),
                )
            ],
        )
    if macv and macv < floor and not facts.torch.mps.available:
        fixes = [
            Remedy(
                "Upgrade macOS.",
                ("softwareupdate --list",),
                evidence=grounded(facts, *MAC),
            )
        ]
        keep = last_torch_for(macv)
        if keep:
            fixes.append(
                Remedy(
                    f"Or keep this macOS with torch {keep[:-2]}, the last release whose MPS runs "
                    f"on macOS {mac}.",
                    (f"{python_cmd(facts)} install {quote(facts, 'torch==' + keep)}",),
                    evidence=grounded(facts, *MAC),
                )
            )
        return verdict(
            bad,
            f"macOS {mac} is too old for MPS with torch {version} (needs {floor[0]}.{floor[1]}+)",
            details,
            fixes,
        )
    return None


def _intel_mac(facts: Facts, macv: tuple[int, ...]) -> bool:
    """An x86_64 Python outside Rosetta, or a macOS older than 11 (no Apple Silicon Mac ever ran
    one): no MPS to upgrade to."""
    x86 = facts.platform.machine == "x86_64" and not facts.platform.rosetta
    return x86 or bool(macv and macv < (11, 0))


def _in_vm(facts: Facts, details: dict[str, Any]) -> Verdict:
    """pytorch/pytorch#125197: on GitHub's macos-14 runners (virtual machines) MPS reports
    available, then loading a model on it fails; the runner's GPU, not torch, is at fault."""
    why = (
        "macOS runs in a virtual machine (kern.hv_vmm_present): its paravirtual GPU reports MPS "
        "available, but MPS work fails there (GitHub's hosted macOS runners)"
    )
    fix = Remedy(
        "Do not rely on MPS in a macOS virtual machine: run MPS work on bare-metal Apple Silicon, "
        "and test on the CPU on hosted macOS runners (`torchdoctor check --expect cpu`, "
        "device='cpu').",
        evidence=grounded(facts, "platform.vm", *MAC),
    )
    return from_problems([Problem("vm", Status.WARN, why, [fix])], details, "")


def _backend(facts: Facts, details: dict[str, Any], bad: Status) -> Verdict:
    """On a recent enough macOS: is MPS built into this torch, and available?"""
    mps, mac = facts.torch.mps, facts.platform.mac_ver or ""
    if not mps.built:
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
                    evidence=grounded(facts, *MAC),
                )
            ],
        )
    if not mps.available:
        return verdict(
            bad,
            "MPS is built but not available",
            details,
            [
                Remedy(
                    "MPS needs Apple Silicon and a Metal-capable macOS session.",
                    evidence=grounded(facts, *MAC),
                )
            ],
        )
    if facts.platform.vm:
        return _in_vm(facts, details)
    summary = f"MPS available on macOS {mac}"
    if details["fallback"] != "1":
        summary += " (PYTORCH_ENABLE_MPS_FALLBACK unset: ops missing on MPS will raise)"
    return verdict(Status.PASS, summary, details)


def check(facts: Facts, ctx: Context) -> Verdict:
    system = facts.platform.system
    if system != "Darwin":
        return _off_macos(facts, ctx)
    if not torch_ok(facts):
        return verdict(Status.SKIP, "torch could not be examined; see torch.install")
    stuck = probe_stuck(facts, ("mps",))
    if stuck:
        return stuck
    mac = facts.platform.mac_ver or ""
    details = {
        "macos": mac,
        "built": facts.torch.mps.built or False,
        "available": facts.torch.mps.available or False,
        "machine": facts.platform.machine,
        "fallback": facts.env.get("PYTORCH_ENABLE_MPS_FALLBACK"),
    }
    bad = Status.FAIL if ctx.expect == "mps" else Status.WARN
    blocked = _too_old(facts, details, bad)
    if blocked:
        return blocked
    said = pasted_errors.mps_problems(facts)
    if said:
        found = quoted(pasted(facts, "mps-op-missing", "mps-out-of-memory"))
        return from_problems(said, details | found, "")
    gap = not_in_report(facts, ("torch.mps",))
    if gap:
        floor = min_macos(facts.torch.version) or MIN_MACOS
        gap.summary += f"; macOS {mac or '?'} meets MPS's minimum ({floor[0]}.{floor[1]})"
        return gap
    return _backend(facts, details, bad)
