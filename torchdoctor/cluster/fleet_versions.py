"""Do the ranks agree on torch, CUDA, NCCL, Python and the driver, and on their GPUs?"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..check.facts import dig
from ..data import compat
from .fleet_common import Finding, Record, finding, hosts_text, node_facts, remedy, where, worst

# label -> (how to read it for a rank, status when it differs)
VERSION_FACTS: dict[str, tuple[Callable[[Record, dict[str, Any]], Any], str]] = {
    "torch": (lambda r, f: dig(r, "versions.torch") or dig(f, "torch.version"), "fail"),
    "CUDA": (lambda r, f: dig(r, "versions.cuda") or dig(f, "torch.build.cuda"), "fail"),
    "NCCL": (lambda r, f: dig(r, "versions.nccl") or dig(f, "torch.build.nccl"), "fail"),
    "Python": (
        lambda r, f: dig(r, "versions.python") or dig(f, "platform.python_version"),
        "fail",
    ),
    "driver": (lambda r, f: dig(f, "nvml.driver_version"), "warn"),
}


def _groups(records: list[Record], read: Callable[[Record], Any]) -> dict[str, list[int]]:
    """value -> ranks having it, most common first; ranks where it is unknown are left out."""
    by_value: dict[str, list[int]] = {}
    for rec in records:
        value = read(rec)
        if value not in (None, ""):
            by_value.setdefault(str(value), []).append(rec["rank"])
    # Ties go to the value of the lowest rank: with 1 against 1, rank 0 is the reference.
    return dict(sorted(by_value.items(), key=lambda kv: (-len(kv[1]), min(kv[1]))))


def _differs_text(label: str, groups: dict[str, list[int]], host_of: dict[int, str]) -> str:
    parts = [f"{value} on {where(ranks, host_of)}" for value, ranks in groups.items()]
    return f"{label} differs: " + "; ".join(parts)


def _version_remedy(label: str, majority: str, minority_hosts: list[str]) -> dict[str, Any]:
    hosts = hosts_text(minority_hosts)
    if label == "driver":
        return remedy(
            f"Bring the NVIDIA driver on {hosts} to {majority}, the version the rest of the "
            "fleet runs (then reboot or reload the nvidia modules).",
            "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
            "sudo ubuntu-drivers install  # or your distribution's driver package",
        )
    if label == "Python":
        return remedy(f"Run every rank with the same Python ({majority}): one image or one env.")
    local = majority.split("+", 1)[1] if label == "torch" and "+" in majority else None
    commands = []
    if label == "torch":
        index = f" --index-url {compat.INDEX_URL.format(variant=local)}" if local else ""
        commands.append(f"python -m pip install torch=={majority.split('+')[0]}{index}")
    return remedy(
        f"Install one torch build on every node (the same wheel from the same index, ideally "
        f"one container image): mixed {label} versions in one job hang or fail in collectives. "
        f"Most of the fleet runs {label} {majority}; it differs on {hosts}.",
        *commands,
    )


def versions_finding(
    records: list[Record], reports: dict[str, Record], host_of: dict[int, str]
) -> Finding:
    differing: dict[str, dict[str, list[int]]] = {}
    agreed: list[str] = []
    status = "pass"
    remedies = []
    for label, (read, severity) in VERSION_FACTS.items():
        groups = _groups(records, lambda r, read=read: read(r, node_facts(r, reports)))
        if len(groups) > 1:
            differing[label] = groups
            status = worst([status, severity])
            values = list(groups)
            minority = [r for v in values[1:] for r in groups[v]]
            remedies.append(
                _version_remedy(label, values[0], sorted({host_of[r] for r in minority}, key=str))
            )
        elif groups:
            agreed.append(f"{label} {next(iter(groups))}")
    title = "versions agree across the fleet"
    details: dict[str, Any] = {"differing": differing, "agreed": agreed}
    if not differing and not agreed:  # every rank failed before it described itself
        return finding("fleet.versions", title, "skip", "no rank reported its versions", details)
    if not differing:
        return finding(
            "fleet.versions", title, "pass", f"{', '.join(agreed)} on every rank", details
        )
    details["ranks"] = sorted(
        {r for groups in differing.values() for v in list(groups)[1:] for r in groups[v]}
    )
    summary = "; ".join(_differs_text(label, g, host_of) for label, g in differing.items())
    return finding("fleet.versions", title, status, summary, details, remedies)


def _gib(n: Any) -> str | None:
    return f"{n / (1 << 30):.1f} GiB" if isinstance(n, (int, float)) and n > 0 else None


def _gpu_identity(record: Record) -> tuple[Any, ...]:
    """One physical GPU: its UUID where torch gives one, else the host and visible index."""
    uuid = dig(record, "device.uuid")
    return (uuid,) if uuid else (record.get("host"), dig(record, "device.index"))


def devices_finding(records: list[Record], host_of: dict[int, str]) -> Finding:
    gpus = [r for r in records if dig(r, "device.type") == "cuda"]
    title = "GPUs agree across the fleet"
    if not gpus:
        return finding("fleet.devices", title, "skip", "no rank uses a GPU: nothing to compare")
    names = _groups(gpus, lambda r: dig(r, "device.name"))
    memory = _groups(gpus, lambda r: _gib(dig(r, "device.memory_total_bytes")))
    differing = {k: g for k, g in (("GPU model", names), ("GPU memory", memory)) if len(g) > 1}
    details: dict[str, Any] = {"models": names, "memory": memory}
    if not differing:
        mem = f", {next(iter(memory))} each" if memory else ""
        # ranks that share a GPU (two on one card, seen on a real H100/H200) count it once
        count = len({_gpu_identity(r) for r in gpus})
        ranks = f"{len(gpus)} ranks on " if count < len(gpus) else ""
        return finding(
            "fleet.devices",
            title,
            "pass",
            f"{ranks}{count} × {next(iter(names), '?')}{mem}",
            details,
        )
    details["ranks"] = sorted({r for g in differing.values() for v in list(g)[1:] for r in g[v]})
    return finding(
        "fleet.devices",
        title,
        "warn",
        "; ".join(_differs_text(k, g, host_of) for k, g in differing.items()),
        details,
        [
            remedy(
                "Mixed GPU models or memory sizes make every step wait for the slowest, smallest "
                "GPU. Schedule the job on identical nodes (a node selector or Slurm constraint), "
                "or check that the odd GPU is not partitioned (MIG) or partly used.",
                "nvidia-smi --query-gpu=name,memory.total,memory.used,mig.mode.current --format=csv",
            )
        ],
    )
