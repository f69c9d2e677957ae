"""rocm: ROCm builds — HIP version, each GPU's gfx target vs the wheel's, /dev/kfd and /dev/dri."""

from __future__ import annotations

from torchdoctor.data import gpu_names
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.torch import CudaDevice, Node, Nodes
from .common import Context, grounded, pasted, probe_stuck, quoted, torch_ok, torch_unavailable

ID = "rocm"
TITLE = "ROCm (AMD GPUs)"
ORDER = 90  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports one by one, each its own finding id (rocm.<code>).
FINDINGS = {
    "kfd-missing": "/dev/kfd is missing: no amdgpu driver, or the devices were not passed in",
    "node-denied": "a ROCm device node this user cannot open read-write",
    "gfx-unsupported": "a GPU whose gfx target the wheel was not built for",
    "no-gpu": "a ROCm build of torch that sees no AMD GPU",
}

# torch's own "HIP error: invalid device function" pasted with a report is judged here.
EVIDENCE = ("hip-invalid-device-function",)

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


def node_problems(nodes: Nodes, bad: Status) -> list[Problem]:
    out = []
    kfd = nodes.kfd
    groups = ", ".join(nodes.groups) or "none"
    if kfd and not kfd.exists:
        out.append(
            Problem(
                "kfd-missing",
                bad,
                "/dev/kfd is missing: the amdgpu driver is not loaded, or the container was "
                "started without the AMD devices",
                [
                    Remedy(
                        "Load the amdgpu driver on the host; in a container pass the devices.",
                        ("sudo modprobe amdgpu", f"docker run {DOCKER_FLAGS} ..."),
                        evidence=("torch.rocm.nodes",),
                    )
                ],
            )
        )
    for node in [n for n in [kfd, *nodes.render] if n.exists and not n.rw]:
        out.append(
            Problem(
                "node-denied",
                bad,
                f"cannot open {node.path} read-write (group {node.group}, mode {node.mode}; "
                f"this user is in: {groups})",
                [_node_fix(node)],
            )
        )
    return out


def _group_rw(node: Node) -> bool:
    """The node's mode lets its group read and write it (0660, not 0600)."""
    try:
        return int(node.mode or "0", 8) & 0o060 == 0o060
    except ValueError:
        return False


def _node_fix(node: Node) -> Remedy:
    """Joining the node's group helps only where the group may read and write it and is not
    root: a 0600 root-owned /dev/kfd (no udev rule for it, ROCm/ROCT-Thunk-Interface#36) needs
    a rule that hands it to the render group."""
    if _group_rw(node) and node.group not in (None, "root"):
        return Remedy(
            f"Add the user to the {node.group} group, then log in again.",
            (f"sudo usermod -aG {node.group} $USER",),
            evidence=("torch.rocm.nodes",),
        )
    kernel = "kfd" if node.path == "/dev/kfd" else "renderD*"
    rule = f'KERNEL=="{kernel}", GROUP="render", MODE="0660"'
    return Remedy(
        f"{node.path} is mode {node.mode} of group {node.group}: no group can open it. Add a "
        "udev rule that gives it to the render group with mode 0660, reload the rules, and add "
        "the user to render (log in again).",
        (
            f"echo '{rule}' | sudo tee /etc/udev/rules.d/70-amdgpu-compute.rules",
            "sudo udevadm control --reload-rules && sudo udevadm trigger",
            "sudo usermod -aG render $USER",
        ),
        evidence=("torch.rocm.nodes",),
    )


def target_problem(device: CudaDevice, targets: list[str], bad: Status) -> Problem | None:
    """A GPU whose gfx target the wheel was not compiled for."""
    target = (device.gcn_arch_name or "").split(":")[0]
    if not targets or not target or target in targets:
        return None
    sibling = override_for(target, targets)
    remedy = (
        Remedy(
            f"Unofficial but common: make the runtime treat the GPU as {sibling} (same "
            "family). Or install a torch whose ROCm targets include it.",
            (f"export HSA_OVERRIDE_GFX_VERSION={gfx_version(sibling)}",),
            evidence=("torch.cuda.devices", "torch.build.hip"),
        )
        if sibling
        else Remedy(
            "Install a ROCm build of torch whose targets include this GPU.",
            evidence=("torch.cuda.devices", "torch.build.hip"),
        )
    )
    return Problem(
        "gfx-unsupported",
        bad,
        f"{device.name} is {target}, not among the wheel's targets "
        f"({' '.join(targets)}): kernels fail with 'HIP error: invalid device function'",
        [remedy],
    )


def _invalid_function(facts: Facts, bad: Status) -> Verdict | None:
    """A pasted 'HIP error: invalid device function': the ROCm build has no kernels for the GPU's
    gfx target. A report that does not name the GPU gets what to check first."""
    found = pasted(facts, *EVIDENCE)
    if not found or facts.collected.source in (None, "probe"):
        return None
    targets = {
        (d.gcn_arch_name or "").split(":")[0] or gpu_names.gfx_target(d.name)
        for d in facts.torch.cuda.devices
    } - {None, ""}
    which = f"the GPU's target ({', '.join(sorted(targets))})" if targets else "the GPU's target"
    unnamed = "" if targets else "; the report does not name the GPU"
    why = f"HIP error: invalid device function: this ROCm build of torch has no kernels for {which}"
    fix = Remedy(
        "Check first which gfx target the GPU is and which targets this torch was built for; "
        "then install a ROCm build of torch whose targets include it, or (unofficial) set "
        "HSA_OVERRIDE_GFX_VERSION to a supported target of the same family.",
        (
            "rocminfo | grep -m1 -o 'gfx[0-9a-f]*'",
            'python -c "import torch; print(torch.cuda.get_arch_list())"',
        ),
        evidence=tuple(p for p, _ in found),
    )
    problem = Problem("gfx-unsupported", bad, why + unnamed, [fix])
    return from_problems([problem], quoted(found), "")


def check(facts: Facts, ctx: Context) -> Verdict:
    bad = Status.WARN if ctx.expect in ("cpu", "mps", "xpu") else Status.FAIL
    pasted = _invalid_function(facts, bad)
    if pasted:
        return pasted
    if not torch_ok(facts):
        return torch_unavailable(facts)
    build = facts.torch.build
    if build.variant != "rocm":
        return verdict(Status.SKIP, f"not a ROCm build of torch ({build.variant or '?'})")
    stuck = probe_stuck(facts, ("rocm", "cuda"))
    if stuck:
        return stuck
    targets = [t for t in build.arch_list if t.startswith("gfx")]
    devices = facts.torch.cuda.devices
    override = facts.env.get("HSA_OVERRIDE_GFX_VERSION")
    nodes = facts.torch.rocm.nodes
    details = {
        "hip": build.hip,
        "targets": targets,
        "devices": [{"name": d.name, "gcn_arch_name": d.gcn_arch_name} for d in devices],
        "nodes": nodes.raw or None,
        "hsa_override_gfx_version": override,
    }
    found = node_problems(nodes, bad) + [target_problem(d, targets, bad) for d in devices]
    problems = [p for p in found if p]
    if not devices and not problems:
        why = "ROCm build, but torch sees no AMD GPU"
        fix = Remedy(
            "Check that the GPU is visible to ROCm.",
            ("rocminfo", "rocm-smi"),
            evidence=grounded(
                facts,
                "torch.rocm",
                "torch.build.hip",
                "torch.build.variant",
                "env.HSA_OVERRIDE_GFX_VERSION",
            ),
        )
        problems.append(Problem("no-gpu", bad, why, [fix]))
    names = ", ".join(f"{d.name} ({d.gcn_arch_name})" for d in devices)
    note = f"; HSA_OVERRIDE_GFX_VERSION={override} in effect (unofficial)" if override else ""
    return from_problems(problems, details, f"HIP {build.hip}: {names}{note}")
