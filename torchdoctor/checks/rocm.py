"""rocm: ROCm builds — HIP version, each GPU's gfx target vs the wheel's, /dev/kfd and /dev/dri."""

from __future__ import annotations

from typing import Any

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, probe_stuck, torch_ok, torch_unavailable

ID = "rocm"
TITLE = "ROCm (AMD GPUs)"
ORDER = 90  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"

DOCKER_FLAGS = "--device=/dev/kfd --device=/dev/dri --group-add video --group-add render"


def gfx_version(target: str) -> str | None:
    """'gfx1030' -> '10.3.0', 'gfx90a' -> '9.0.10' (major, then one hex digit each)."""
    digits = target.removeprefix("gfx")
    if len(digits) < 3:
        return None
    try:
        return f"{int(digits[:-2])}.{int(digits[-2], 16)}.{int(digits[-1], 16)}"
    except ValueError:
        return None


def override_for(target: str, targets: list[str]) -> str | None:
    """A supported sibling of ``target`` (same family: gfx1031 -> gfx1030) to pretend to be."""
    siblings = sorted(t for t in targets if t[:-1] == target[:-1] and t != target)
    return siblings[0] if siblings else None


def node_problems(nodes: dict[str, Any]) -> list[tuple[str, Remedy]]:
    out = []
    kfd = nodes.get("kfd") or {}
    groups = ", ".join(nodes.get("groups", [])) or "none"
    if kfd and not kfd.get("exists"):
        out.append(
            (
                "/dev/kfd is missing: the amdgpu driver is not loaded, or the container was "
                "started without the AMD devices",
                Remedy(
                    "Load the amdgpu driver on the host; in a container pass the devices.",
                    ("sudo modprobe amdgpu", f"docker run {DOCKER_FLAGS} ..."),
                ),
            )
        )
    bad = [n for n in [kfd, *nodes.get("render", [])] if n.get("exists") and not n.get("rw")]
    for node in bad:
        out.append(
            (
                f"cannot open {node['path']} read-write (group {node.get('group')}; this user is "
                f"in: {groups})",
                Remedy(
                    f"Add the user to the {node.get('group')} group, then log in again.",
                    (f"sudo usermod -aG {node.get('group')} $USER",),
                ),
            )
        )
    return out


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    build = dig(facts, "torch.build", {})
    if build.get("variant") != "rocm":
        return verdict(Status.SKIP, f"not a ROCm build of torch ({build.get('variant', '?')})")
    stuck = probe_stuck(facts, ("rocm", "cuda"))
    if stuck:
        return stuck
    targets = [t for t in build.get("arch_list", []) if t.startswith("gfx")]
    devices = dig(facts, "torch.cuda.devices", [])
    override = dig(facts, "env.HSA_OVERRIDE_GFX_VERSION")
    details = {
        "hip": build.get("hip"),
        "targets": targets,
        "devices": [
            {"name": d.get("name"), "gcn_arch_name": d.get("gcn_arch_name")} for d in devices
        ],
        "nodes": dig(facts, "torch.rocm.nodes"),
        "hsa_override_gfx_version": override,
    }
    problems = node_problems(dig(facts, "torch.rocm.nodes", {}))
    for d in devices:
        target = (d.get("gcn_arch_name") or "").split(":")[0]
        if targets and target and target not in targets:
            sibling = override_for(target, targets)
            remedy = (
                Remedy(
                    f"Unofficial but common: make the runtime treat the GPU as {sibling} (same "
                    "family). Or install a torch whose ROCm targets include it.",
                    (f"export HSA_OVERRIDE_GFX_VERSION={gfx_version(sibling)}",),
                )
                if sibling
                else Remedy("Install a ROCm build of torch whose targets include this GPU.")
            )
            problems.append(
                (
                    f"{d.get('name')} is {target}, not among the wheel's targets "
                    f"({' '.join(targets)}): kernels fail with 'HIP error: invalid device function'",
                    remedy,
                )
            )
    if not devices and not problems:
        problems.append(
            (
                "ROCm build, but torch sees no AMD GPU",
                Remedy("Check that the GPU is visible to ROCm.", ("rocminfo", "rocm-smi")),
            )
        )
    if problems:
        bad = Status.WARN if ctx.expect in ("cpu", "mps") else Status.FAIL
        return verdict(bad, "; ".join(p[0] for p in problems), details, [p[1] for p in problems])
    names = ", ".join(f"{d.get('name')} ({d.get('gcn_arch_name')})" for d in devices)
    note = f"; HSA_OVERRIDE_GFX_VERSION={override} in effect (unofficial)" if override else ""
    return verdict(Status.PASS, f"HIP {build.get('hip')}: {names}{note}", details)
