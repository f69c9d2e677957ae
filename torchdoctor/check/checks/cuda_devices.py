"""cuda.devices: each GPU's name, capability, SMs and memory, against the wheel's arch list."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from torchdoctor.data import archs, compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import pasted_errors
from .common import (
    EVER_FLOOR,
    Context,
    device_capability,
    gpu_paths,
    grounded,
    nvml_gpus,
    pasted,
    probe_stuck,
    quoted,
    wheel_fixes,
)

ID = "cuda.devices"
TITLE = "CUDA devices and the wheel's arch list"
ORDER = 70  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# A pasted report: the build must be in it, or torch's own "not compatible" warning.
NEEDS = ("torch.build",)
EVIDENCE = ("arch-unsupported",)
# The problems it reports, one per GPU and kind, each its own finding id (cuda.devices.<code>).
FINDINGS = {
    "none-visible": "CUDA expected, but torch sees no CUDA device",
    "gpu-too-old": "a GPU older than the wheel's lowest architecture",
    "arch-missing": "a GPU missing from the wheel's arch list: 'no kernel image is available'",
    "ptx-only": "a GPU the wheel runs only through PTX JIT",
    "memory-held": "another process holds most of a GPU's memory",
    "gpus-missing": "NVML sees more GPUs than torch",
    "ordinal-out-of-range": "a pasted 'invalid device ordinal': the code named a GPU index past the last",
}

MIB = 1024 * 1024
# Below this share of free memory, something else is holding the GPU.
LOW_FREE_FRACTION = 0.10


@dataclass
class Gpu:
    """One GPU as judged here, from torch's view or NVML's; ``row`` is what details show."""

    index: int
    name: str | None
    capability: tuple[int, ...]
    total: int | None
    free: int | None
    sms: int | None
    row: dict[str, Any]
    path: str = ""  # where its facts are: torch.cuda.devices.N or nvml.devices.N
    memory_path: str = ""  # the fact its free memory came from


def _torch_gpus(facts: Facts) -> list[Gpu]:
    free = {m.index: m.free_bytes for m in facts.torch.cuda_init.memory}
    return [
        Gpu(
            d.index,
            d.name,
            tuple(d.capability),
            d.total_memory_bytes,
            free.get(d.index),
            d.multi_processor_count,
            {**d.raw, "free_bytes": free.get(d.index)},
            f"torch.cuda.devices.{pos}",
            next(
                (f"torch.cuda_init.memory.{i}" for i, m in enumerate(facts.torch.cuda_init.memory)
                 if m.index == d.index),
                "",
            ),
        )
        for pos, d in enumerate(facts.torch.cuda.devices)
    ]  # fmt: skip


def _nvml_gpus(facts: Facts) -> list[Gpu]:
    out = []
    for pos, g in enumerate(nvml_gpus(facts)):
        cap = device_capability(g.name, g.capability)
        total, used = g.memory_total_bytes, g.memory_used_bytes
        free = total - used if total and used is not None else None
        row = {
            "index": g.index,
            "name": g.name,
            "capability": list(cap) or None,
            "total_memory_bytes": total,
            "free_bytes": free,
        }
        path = f"nvml.devices.{pos}"
        gpu = Gpu(g.index, g.name, cap, total, free, None, row, path)
        gpu.memory_path = f"{path}.memory_used_bytes"
        out.append(gpu)
    return out


def _devices(facts: Facts) -> tuple[list[Gpu], str]:
    """Torch's view of the devices for an examined CUDA build (even when it sees none);
    NVML's otherwise (a CPU wheel on a GPU box, torch missing), so the GPUs are still judged."""
    if facts.torch.status == "ok" and facts.torch.build.variant in ("cuda", "rocm"):
        seen = _torch_gpus(facts)
        # A report whose torch could not use CUDA still lists nvidia-smi's GPUs: judge those.
        if seen or facts.collected.source in (None, "probe"):
            return seen, "torch"
    return _nvml_gpus(facts), "nvml"


def _arch_fix(facts: Facts, d: Gpu, devices: list[Gpu], why: str) -> list[Remedy]:
    """A wheel that covers this GPU and every other one in the box; where none does, say so and
    offer the wheel for this GPU with the others hidden, or the others' wheel with it hidden."""
    because = grounded(facts, f"{d.path}.capability", "torch.build.arch_list")
    caps = [(g.capability[0], g.capability[1]) for g in devices if len(g.capability) == 2]
    fixes = wheel_fixes(facts, caps, why, because)
    if len(caps) < 2 or any(r.commands for r in fixes):
        return fixes
    others = [g for g in devices if g is not d and len(g.capability) == 2]
    alone = wheel_fixes(facts, [(d.capability[0], d.capability[1])], why, because)
    rest = wheel_fixes(facts, [(g.capability[0], g.capability[1]) for g in others], why, because)
    names = ", ".join(f"cuda:{g.index} {g.name}" for g in devices)
    order = ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",) if devices[0].path.startswith("nvml") else ()
    ev = (*because, *grounded(facts, *(f"{g.path}.capability" for g in others)))
    return [
        Remedy(
            f"No single torch wheel covers all of these GPUs ({names}): run this GPU's jobs "
            "with the others hidden and a wheel for it, or the others' jobs with it hidden.",
            (*order, f"export CUDA_VISIBLE_DEVICES={d.index}"),
            ev,
        ),
        *[r for r in alone if r.commands],
        Remedy(
            f"Or hide cuda:{d.index} {d.name} and keep a wheel for the rest.",
            (*order, f"export CUDA_VISIBLE_DEVICES={','.join(str(g.index) for g in others)}"),
            ev,
        ),
        *[r for r in rest if r.commands],
    ]


def _dropped(cap: tuple[int, int]) -> str:
    """'the newest wheels for it are torch 2.14 from …/cu126' for a GPU new wheels left behind."""
    last = compat.newest_supporting(cap)
    if not last:
        return "no published wheel supports it"
    url = compat.INDEX_URL.format(variant=last.variant)
    return f"the newest wheels for it are torch {compat.latest_patch(last.release)} from {url}"


def _row(d: Gpu) -> str:
    cap = archs.fmt(d.capability) if d.capability else "?"
    mem = f", {d.total // MIB} MiB" if d.total else ""  # a pasted report has no memory sizes
    if d.total and d.free is not None:
        mem = f", {d.free // MIB}/{d.total // MIB} MiB free"
    sms = f", {d.sms} SMs" if d.sms else ""
    return f"cuda:{d.index} {d.name} (sm {cap}{sms}{mem})"


def _none_visible(facts: Facts, ctx: Context, source: str) -> Verdict:
    nvml_count = len(nvml_gpus(facts))
    seen = (
        f"torch sees none of the {nvml_count} GPU(s) NVML lists"
        if nvml_count
        else "no CUDA devices"
    )
    if ctx.expect != "cuda":
        return verdict(Status.SKIP, f"{seen} (cuda.available says why)" if nvml_count else seen)
    because = grounded(
        facts,
        "torch.cuda.device_count",
        "torch.cuda.available",
        "nvml.status",
        *gpu_paths(facts, "name"),
    )
    if not because:
        # A pasted report that says nothing of CUDA devices: unknown, not absent.
        return verdict(Status.SKIP, "the report does not say whether torch sees a GPU")
    fix = Remedy(
        "Run where an NVIDIA GPU is visible (containers: `--gpus all`); cuda.available says why not.",
        evidence=because,
    )
    details = {"source": source, "nvml_gpus": nvml_count}
    return from_problems([Problem("none-visible", Status.FAIL, seen, [fix])], details, "")


def _never_built(d: Gpu) -> Problem:
    """A GPU below every wheel PyTorch ever published: named as such, never a driver to install
    (its last driver predates every CUDA torch used) nor a wheel to try."""
    sm, family = archs.fmt(d.capability), compat.family(d.capability)
    why = (
        f"cuda:{d.index} {d.name} (sm {sm}, {family}) is older than any GPU a PyTorch wheel was "
        f"built for (sm {archs.fmt(EVER_FLOOR)} and up): no driver or wheel runs torch on it"
    )
    fix = Remedy(
        "Use the CPU build of torch on this machine, or a GPU of compute capability 3.7 or "
        "newer; no driver update or reinstall makes this GPU usable by torch.",
        evidence=(f"{d.path}.name",),
    )
    return Problem("gpu-too-old", Status.FAIL, why, [fix])


def _rests_on(facts: Facts, d: Gpu, remedies: list[Remedy]) -> list[Remedy]:
    """The facts a wheel fix for this GPU rests on: the GPU, the build, the pasted warning."""
    paths = [f"{d.path}.name"] if d.path else []
    paths += ["torch.version"] if facts.torch.version else []
    paths += ["torch.build.arch_list"] if facts.torch.build.arch_list else []
    paths += [p for p, _ in pasted(facts, "arch-unsupported", "no-kernel-image")]
    return [replace(r, evidence=tuple(dict.fromkeys((*r.evidence, *paths)))) for r in remedies]


def _arch_problem(facts: Facts, d: Gpu, arch_list: list[str], devices: list[Gpu]) -> Problem | None:
    """The GPU against the wheel's arch list (native code, PTX only, or nothing)."""
    cap = d.capability
    cov = archs.coverage(cap, arch_list)
    d.row["arch_coverage"] = cov
    lowest = archs.min_capability(arch_list)
    family = compat.family(cap)
    name, sm = f"cuda:{d.index} {d.name}", archs.fmt(cap)
    if cov == "none" and lowest and cap < lowest:
        code, fix = "gpu-too-old", f"{family} GPUs need a wheel that still lists them."
        why = (
            f"{name} (sm {sm}, {family}) is older than this wheel supports "
            f"(minimum sm {archs.fmt(lowest)}); {_dropped(cap)}"
        )
    elif cov == "none":
        code, fix = "arch-missing", f"sm {sm} ({family}) needs a wheel built for it."
        why = (
            f"{name} (sm {sm}) is not in the wheel's arch list ({' '.join(arch_list)}): "
            "'no kernel image is available'"
        )
    elif cov == "ptx":
        code, fix = "ptx-only", "A wheel with native code for this GPU avoids the JIT."
        why = (
            f"cuda:{d.index} sm {sm} runs only through PTX JIT "
            "(slow first launch; fails if the driver is older than the toolkit)"
        )
    else:
        return None
    status = Status.WARN if code == "ptx-only" else Status.FAIL
    return Problem(code, status, why, _rests_on(facts, d, _arch_fix(facts, d, devices, fix)))


def _memory_problem(facts: Facts, d: Gpu) -> Problem | None:
    if not d.total or d.free is None or d.free >= LOW_FREE_FRACTION * d.total:
        return None
    why = (
        f"cuda:{d.index} has only {d.free // MIB} of {d.total // MIB} MiB free: "
        "another process holds the GPU"
    )
    fix = Remedy(
        "See which processes hold GPU memory.",
        ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
        grounded(facts, d.memory_path, f"{d.path}.name"),
    )
    return Problem("memory-held", Status.WARN, why, [fix])


def _missing_gpus(facts: Facts, source: str, seen: int) -> Problem | None:
    nvml_count = len(nvml_gpus(facts))
    cvd = facts.env.get("CUDA_VISIBLE_DEVICES")
    if source != "torch" or nvml_count <= seen or cvd is not None:
        return None
    fix = Remedy(
        "Compare nvidia-smi with torch: a GPU in a bad state is left out by CUDA.",
        ("nvidia-smi -L",),
        grounded(facts, "torch.cuda.device_count", *gpu_paths(facts, "name")),
    )
    why = f"NVML sees {nvml_count} GPUs but torch sees {seen}"
    return Problem("gpus-missing", Status.WARN, why, [fix])


def check(facts: Facts, ctx: Context) -> Verdict:
    stuck = probe_stuck(facts, ("cuda", "cuda.init"))
    if stuck:
        return stuck
    devices, source = _devices(facts)
    if not devices:
        return _none_visible(facts, ctx, source)
    arch_list = facts.torch.build.arch_list
    judge_arch = facts.torch.build.variant == "cuda" and arch_list
    found: list[Problem | None] = []
    for d in devices:
        d.row["arch_coverage"] = None
        if len(d.capability) == 2 and d.capability < EVER_FLOOR:
            found.append(_never_built(d))
        elif judge_arch and len(d.capability) == 2:
            found.append(_arch_problem(facts, d, arch_list, devices))
        found.append(_memory_problem(facts, d))
    found.append(_missing_gpus(facts, source, len(devices)))
    found.append(pasted_errors.ordinal_problem(facts, len(devices)))
    # CUDA_DEVICE_ORDER on mixed-GPU hosts is judged by the env check, once.
    details = {"source": source, "arch_list": arch_list, "devices": [d.row for d in devices]}
    details |= quoted(
        pasted(facts, "arch-unsupported", "no-kernel-image", "invalid-device-ordinal")
    )
    summary = "; ".join(_row(d) for d in devices)
    # Failures first, so the summary leads with what breaks.
    problems = sorted((p for p in found if p), key=lambda p: -p.status.rank)
    return from_problems(problems, details, summary)
