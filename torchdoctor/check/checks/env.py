"""env: the environment variables that change what torch does, each judged.

Only the whitelisted variables in ``facts['env']`` are read (probes/host.py TORCH_ENV_VARS); the
report names them and their judged values, never the rest of the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from torchdoctor.data import alloc_conf, alloc_keys, torch_env
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems

from ..record import Facts
from ..record.nvml import NvmlDevice
from .common import Context, gpu_paths, grounded, nvml_gpus, set_env
from .host import usable_cpus

ID = "env"
TITLE = "Environment variables"
ORDER = 140  # position in the report: basic facts first, the smoke test last
# Each variable's problem is its own finding id (env.<code>).
FINDINGS = {
    "visible-devices-empty": "CUDA_VISIBLE_DEVICES is empty or -1: it hides every GPU",
    "visible-devices-bad-index": "CUDA_VISIBLE_DEVICES names a GPU index that does not exist",
    "visible-devices-unknown-uuid": "CUDA_VISIBLE_DEVICES names a GPU UUID that matches no GPU",
    "visible-devices-several-mig": "CUDA_VISIBLE_DEVICES lists a MIG instance among several",
    "visible-devices-invalid": "a CUDA_VISIBLE_DEVICES entry is neither an index nor a UUID",
    "device-order-invalid": "CUDA_DEVICE_ORDER is not a valid value",
    "device-order-mixed-gpus": "mixed GPUs numbered fastest first, unlike nvidia-smi",
    "alloc-conf-invalid": "PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF does not parse",
    "alloc-conf-both-set": "both allocator variables set: the allocator takes only one",
    "alloc-conf-ignored": "PYTORCH_ALLOC_CONF set, but this torch's CUDA allocator does not read it",
    "cuda-alloc-conf-deprecated": "this torch warns that PYTORCH_CUDA_ALLOC_CONF is deprecated",
    "launch-blocking": "CUDA_LAUNCH_BLOCKING left on: every kernel launch waits",
    "cpp-stacktraces": "TORCH_SHOW_CPP_STACKTRACES left on",
    "nccl-debug": "NCCL_DEBUG=INFO or TRACE left on",
    "cuda-dsa": "TORCH_USE_CUDA_DSA set: a build-time option that does nothing at run time",
    "threads-invalid": "OMP_NUM_THREADS or MKL_NUM_THREADS is not a positive whole number",
    "threads-oversubscribed": "OMP_NUM_THREADS or MKL_NUM_THREADS exceeds the usable CPUs",
    "mps-fallback-invalid": "PYTORCH_ENABLE_MPS_FALLBACK is neither 0 nor 1",
    "mps-watermark-invalid": "PYTORCH_MPS_HIGH_WATERMARK_RATIO is not a non-negative number",
    "mps-watermark-unlimited": "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0 removes the MPS memory limit",
    "hsa-override-invalid": "HSA_OVERRIDE_GFX_VERSION is not MAJOR.MINOR.STEP",
}

_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]+(/\d+/\d+)?$")


@dataclass
class Findings:
    problems: list[Problem] = field(default_factory=list)
    judged: dict[str, str] = field(default_factory=dict)  # variable -> verdict in a few words

    def add(self, status: Status, var: str, code: str, message: str, remedy: Remedy) -> None:
        self.problems.append(Problem(code, status, message, [remedy]))
        self.judged[var] = status.value


def _entry_problem(
    entries: list[str], pos: int, gpus: list[NvmlDevice], value: str
) -> tuple[str, str] | None:
    """(code, message) for the first CUDA_VISIBLE_DEVICES entry CUDA would stop at."""
    entry = entries[pos]
    if entry.isdigit():
        if gpus and int(entry) >= len(gpus):
            return (
                "visible-devices-bad-index",
                f"CUDA_VISIBLE_DEVICES={value!r}: index {entry} does not exist ({len(gpus)} "
                f"GPU(s)); CUDA ignores it and every entry after it",
            )
        return None
    if not _UUID.match(entry):
        return (
            "visible-devices-invalid",
            f"CUDA_VISIBLE_DEVICES={value!r}: {entry!r} is neither an index nor a GPU/MIG UUID",
        )
    if entry.startswith("MIG-") and len(entries) > 1:
        return (
            "visible-devices-several-mig",
            "CUDA_VISIBLE_DEVICES lists a MIG instance among several entries: a process "
            "sees only one MIG instance",
        )
    uuids = [g.uuid or "" for g in gpus]
    if entry.startswith("GPU-") and uuids and not any(u.startswith(entry) for u in uuids):
        return (
            "visible-devices-unknown-uuid",
            f"CUDA_VISIBLE_DEVICES entry {pos + 1} is a GPU UUID that matches no GPU here",
        )
    return None


def visible_devices(env: dict[str, str], facts: Facts, out: Findings) -> None:
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return
    gpus = nvml_gpus(facts)
    entries = [e.strip() for e in value.split(",")]
    fix_all = Remedy(
        "List the GPUs this job should use by index (nvidia-smi order with "
        "CUDA_DEVICE_ORDER=PCI_BUS_ID) or UUID, or unset the variable to see them all.",
        ("nvidia-smi -L", "unset CUDA_VISIBLE_DEVICES"),
        grounded(facts, "env.CUDA_VISIBLE_DEVICES", *gpu_paths(facts, "uuid")),
    )
    status = Status.FAIL if gpus or facts.torch.build.variant == "cuda" else Status.WARN
    var = "CUDA_VISIBLE_DEVICES"
    if value.strip() in ("", "-1"):
        if facts.torch.build.variant == "cuda" and facts.torch.cuda.available is False:
            # cuda.available names it as the reason CUDA is not available, with the same fix:
            # on a real H200 with CUDA_VISIBLE_DEVICES='' both said so, two errors for one cause
            out.judged[var] = "hides every GPU (cuda.available reports it)"
            return
        why = f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU"
        out.add(status, var, "visible-devices-empty", why, fix_all)
        return
    for pos in range(len(entries)):
        found = _entry_problem(entries, pos, gpus, value)
        if found and found[0] == "visible-devices-several-mig":
            mig = Remedy(
                "Run one process per MIG instance, each with its own UUID.",
                ("nvidia-smi -L",),
                ("env.CUDA_VISIBLE_DEVICES",),
            )
            out.add(Status.WARN, var, *found, mig)
            return
        if found:
            out.add(status, var, *found, fix_all)
            return
    out.judged[var] = "ok"


def device_order(env: dict[str, str], facts: Facts, out: Findings) -> None:
    order = env.get("CUDA_DEVICE_ORDER")
    names = {g.name for g in nvml_gpus(facts)}
    fix = Remedy(
        "Number GPUs as nvidia-smi does (PCI bus order) so indices mean the same everywhere.",
        ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",),
        grounded(facts, "env.CUDA_DEVICE_ORDER", *gpu_paths(facts, "name")),
    )
    if order not in (None, "PCI_BUS_ID", "FASTEST_FIRST"):
        out.add(
            Status.WARN,
            "CUDA_DEVICE_ORDER",
            "device-order-invalid",
            f"CUDA_DEVICE_ORDER={order!r} is not a valid value",
            fix,
        )
    elif len(names) > 1 and order != "PCI_BUS_ID":
        out.add(
            Status.WARN,
            "CUDA_DEVICE_ORDER",
            "device-order-mixed-gpus",
            f"mixed GPUs ({', '.join(sorted(n for n in names if n))}) and CUDA_DEVICE_ORDER "
            f"{'unset' if order is None else order}: CUDA numbers them fastest first, unlike nvidia-smi",
            fix,
        )
    elif order is not None:
        out.judged["CUDA_DEVICE_ORDER"] = "ok"


ALLOC_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def _version_problems(value: str, version: str | None) -> list[str]:
    """Keys and value forms the examined torch rejects, though newer releases take them."""
    out = []
    for key, raw in alloc_conf.split_pairs(value) or []:
        row = alloc_keys.KEYS.get(key)
        if row and alloc_keys.accepts(key, version) is False:
            out.append(f"{key} is not known to torch {version} (first in {row.since})")
        elif raw.startswith("[") and alloc_keys.accepts_syntax(key, "list", version) is False:
            first = alloc_keys.SYNTAX[(key, "list")][0]
            out.append(f"the [..] form of {key} is not known to torch {version} (first in {first})")
    return out


def _judge_value(env: dict[str, str], facts: Facts, var: str, out: Findings) -> None:
    """One allocator variable's value: what this torch's parser would reject, and the fix."""
    value, version = env[var], facts.torch.version
    accelerated = facts.torch.build.variant in ("cuda", "rocm", "xpu")
    found = [p.message for p in alloc_conf.problems(value)] + _version_problems(value, version)
    if not found:
        out.judged[var] = "ok"
        return
    fixed = alloc_conf.corrected(value)
    if fixed and _version_problems(fixed, version):
        fixed = None  # a correction this torch would still reject is no correction
    cmds = (f"export {var}={fixed}",) if fixed else (f"unset {var}",)
    newer = (
        " (or upgrade torch to a release that knows it)"
        if _version_problems(value, version)
        else ""
    )
    out.add(
        Status.FAIL if accelerated else Status.WARN,
        var,
        "alloc-conf-invalid",
        f"{var}={value!r}: "
        + "; ".join(found)
        + (" — torch raises at the first GPU allocation" if accelerated else ""),
        Remedy(
            "Fix the allocator setting (keys and values are case-sensitive; booleans are "
            f"True/False){newer}." + ("" if fixed else " No safe correction is obvious: unset it."),
            cmds,
            grounded(facts, f"env.{var}", "torch.version"),
        ),
    )


def _ignored(env: dict[str, str], facts: Facts, out: Findings) -> bool:
    """PYTORCH_ALLOC_CONF on a torch whose CUDA allocator does not read it (before 2.9 torch
    does not read it at all; on 2.9.x only PYTORCH_CUDA_ALLOC_CONF reaches CUDA, pytorch#183387)."""
    value, version = env.get("PYTORCH_ALLOC_CONF"), facts.torch.version
    if value is None or facts.torch.build.variant != "cuda":
        return False
    if alloc_keys.cuda_allocator_reads("PYTORCH_ALLOC_CONF", version) is not False:
        return False
    read = torch_env.reads("PYTORCH_ALLOC_CONF", version)
    why = (
        "does not read it at all (first read in 2.9)"
        if read is False
        else "reads it, but its CUDA allocator takes settings only from PYTORCH_CUDA_ALLOC_CONF "
        "(pytorch#183387; from 2.10 it falls back to PYTORCH_ALLOC_CONF)"
    )
    cmds = ("unset PYTORCH_ALLOC_CONF",)
    if "PYTORCH_CUDA_ALLOC_CONF" not in env:
        cmds = (set_env(facts, "PYTORCH_CUDA_ALLOC_CONF", value), *cmds)
    out.add(
        Status.WARN,
        "PYTORCH_ALLOC_CONF",
        "alloc-conf-ignored",
        f"PYTORCH_ALLOC_CONF={value!r} is ignored by this torch ({version}): it {why}",
        Remedy(
            "Give the setting to the variable this torch reads (the value stays the same), or "
            "upgrade torch to 2.10 or later, whose CUDA allocator reads PYTORCH_ALLOC_CONF.",
            cmds,
            grounded(facts, "env.PYTORCH_ALLOC_CONF", "torch.version", "torch.build.variant"),
        ),
    )
    return True


def _both_set(env: dict[str, str], facts: Facts, out: Findings) -> None:
    version = facts.torch.version
    keep = (
        "PYTORCH_ALLOC_CONF"
        if alloc_keys.cuda_allocator_reads("PYTORCH_ALLOC_CONF", version)
        else "PYTORCH_CUDA_ALLOC_CONF"
    )
    drop = next(v for v in ALLOC_VARS if v != keep)
    out.add(
        Status.WARN,
        "PYTORCH_CUDA_ALLOC_CONF",
        "alloc-conf-both-set",
        "both PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are set: the allocator takes one of "
        f"them, and which one depends on the release; torch {version} should get {keep}",
        Remedy(
            f"Keep one: {keep}.",
            (f"unset {drop}",),
            grounded(facts, f"env.{keep}", f"env.{drop}", "torch.version"),
        ),
    )


def _no_allocator_variable(env: dict[str, str], version: str | None, out: Findings) -> bool:
    """Before 1.10 torch reads neither variable (absent from libc10_cuda.so of the 1.8.1 and 1.9.1
    wheels): a value there is inert, so neither "torch raises" nor "move it" would be true."""
    if any(alloc_keys.cuda_allocator_reads(v, version) is not False for v in ALLOC_VARS):
        return False
    for var in ALLOC_VARS:
        if var in env:
            out.judged[var] = f"no effect (torch {version} reads no allocator variable)"
    return True


def allocator(env: dict[str, str], facts: Facts, out: Findings) -> None:
    """Both allocator variables judged against the examined release (data/alloc_keys.py)."""
    if _no_allocator_variable(env, facts.torch.version, out):
        return
    for var in ALLOC_VARS:
        if var in env:
            _judge_value(env, facts, var, out)
    if _ignored(env, facts, out):
        return
    old, version = env.get("PYTORCH_CUDA_ALLOC_CONF"), facts.torch.version
    if old is not None and "PYTORCH_ALLOC_CONF" in env:
        _both_set(env, facts, out)
    elif (
        old is not None
        and out.judged.get("PYTORCH_CUDA_ALLOC_CONF") == "ok"
        and alloc_keys.warns_deprecated(version)
    ):
        out.add(
            Status.WARN,
            "PYTORCH_CUDA_ALLOC_CONF",
            "cuda-alloc-conf-deprecated",
            f"torch {version} warns that PYTORCH_CUDA_ALLOC_CONF is deprecated in favour of "
            "PYTORCH_ALLOC_CONF (only 2.9 prints it; from 2.10 the old name is a plain alias)",
            Remedy(
                "Rename the variable; the value stays the same.",
                (set_env(facts, "PYTORCH_ALLOC_CONF", old), "unset PYTORCH_CUDA_ALLOC_CONF"),
                grounded(facts, "env.PYTORCH_CUDA_ALLOC_CONF", "torch.version"),
            ),
        )


# Debugging switches that cost speed when left on: variable -> (finding code, is it on?, why).
DEBUG_SWITCHES: dict[str, tuple[str, Callable[[str], bool], str]] = {
    "CUDA_LAUNCH_BLOCKING": (
        "launch-blocking",
        lambda v: v.strip() not in ("", "0"),
        "every CUDA kernel launch waits for completion (debugging only; much slower)",
    ),
    "TORCH_SHOW_CPP_STACKTRACES": (
        "cpp-stacktraces",
        lambda v: v.strip() not in ("", "0"),
        "every error collects a C++ stack trace (debugging only)",
    ),
    "NCCL_DEBUG": (
        "nccl-debug",
        lambda v: v.strip().upper() in ("INFO", "TRACE"),
        "NCCL logs every operation (debugging only; slows collectives, floods logs)",
    ),
    "TORCH_USE_CUDA_DSA": (
        "cuda-dsa",
        lambda v: v.strip() not in ("", "0"),
        "is a build-time option of torch: it does nothing for an installed wheel (a source build "
        "with it has slower kernels)",
    ),
}


def debug_switches(env: dict[str, str], out: Findings) -> None:
    for var, (code, on, why) in DEBUG_SWITCHES.items():
        value = env.get(var)
        if value is None:
            continue
        if on(value):
            out.add(
                Status.WARN,
                var,
                code,
                f"{var}={value} left on: {why}",
                Remedy(
                    f"Unset {var} unless you are debugging right now.",
                    (f"unset {var}",),
                    (f"env.{var}",),
                ),
            )
        else:
            out.judged[var] = "ok"


def thread_counts(env: dict[str, str], facts: Facts, out: Findings) -> None:
    usable = usable_cpus(facts.host)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = env.get(var)
        if value is None:
            continue
        n = int(value) if value.strip().isdigit() else None
        fix = Remedy(
            f"Set {var} to a whole number no larger than the CPUs this process may use.",
            (f"export {var}={usable or 1}",),
            grounded(
                facts,
                f"env.{var}",
                "host.cpu_affinity_count",
                "host.cgroup.cpu_quota",
                "host.cpu_count_logical",
            ),
        )
        if n is None or n == 0:
            why = f"{var}={value!r} is not a positive whole number (ignored)"
            out.add(Status.WARN, var, "threads-invalid", why, fix)
        elif usable and n > usable:
            out.add(
                Status.WARN,
                var,
                "threads-oversubscribed",
                f"{var}={n} but only {usable} CPU(s) are usable: threads oversubscribe them",
                fix,
            )
        else:
            out.judged[var] = "ok"


def mps_vars(env: dict[str, str], facts: Facts, out: Findings) -> None:
    mac = facts.platform.system == "Darwin"
    fallback = env.get("PYTORCH_ENABLE_MPS_FALLBACK")
    if fallback is not None:
        if mac and fallback not in ("0", "1"):
            out.add(
                Status.WARN,
                "PYTORCH_ENABLE_MPS_FALLBACK",
                "mps-fallback-invalid",
                f"PYTORCH_ENABLE_MPS_FALLBACK={fallback!r}: only 1 enables the CPU fallback",
                Remedy(
                    "Use 1 to enable it.",
                    ("export PYTORCH_ENABLE_MPS_FALLBACK=1",),
                    grounded(facts, "env.PYTORCH_ENABLE_MPS_FALLBACK", "platform.system"),
                ),
            )
        else:
            out.judged["PYTORCH_ENABLE_MPS_FALLBACK"] = "ok" if mac else "no effect (not macOS)"
    ratio = env.get("PYTORCH_MPS_HIGH_WATERMARK_RATIO")
    if ratio is not None:
        try:
            value: float | None = float(ratio)
        except ValueError:
            value = None
        fix = Remedy(
            "Leave the limit at its default unless MPS runs out of memory.",
            ("unset PYTORCH_MPS_HIGH_WATERMARK_RATIO",),
            grounded(facts, "env.PYTORCH_MPS_HIGH_WATERMARK_RATIO", "platform.system"),
        )
        if value is None or value < 0:
            out.add(
                Status.WARN,
                "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
                "mps-watermark-invalid",
                f"PYTORCH_MPS_HIGH_WATERMARK_RATIO={ratio!r} is not a non-negative number",
                fix,
            )
        elif value == 0 and mac:
            out.add(
                Status.WARN,
                "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
                "mps-watermark-unlimited",
                "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 removes the MPS memory limit: the whole "
                "machine can run out of memory and stall",
                fix,
            )
        else:
            out.judged["PYTORCH_MPS_HIGH_WATERMARK_RATIO"] = (
                "ok" if mac else "no effect (not macOS)"
            )


def hsa_override(env: dict[str, str], facts: Facts, out: Findings) -> None:
    value = env.get("HSA_OVERRIDE_GFX_VERSION")
    if value is None:
        return
    if not re.fullmatch(r"\d+\.\d+\.\d+", value.strip()):
        out.add(
            Status.WARN,
            "HSA_OVERRIDE_GFX_VERSION",
            "hsa-override-invalid",
            f"HSA_OVERRIDE_GFX_VERSION={value!r} is not of the form MAJOR.MINOR.STEP (e.g. 10.3.0)",
            Remedy(
                "Use the gfx target's version, e.g. 10.3.0 for gfx1030.",
                ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",),
                ("env.HSA_OVERRIDE_GFX_VERSION",),
            ),
        )
    elif facts.torch.build.variant != "rocm":
        out.judged["HSA_OVERRIDE_GFX_VERSION"] = "no effect (not a ROCm build)"
    else:
        out.judged["HSA_OVERRIDE_GFX_VERSION"] = "set (unofficial; see rocm)"


def check(facts: Facts, ctx: Context) -> Verdict:
    env = facts.env
    out = Findings()
    visible_devices(env, facts, out)
    device_order(env, facts, out)
    allocator(env, facts, out)
    debug_switches(env, out)
    thread_counts(env, facts, out)
    mps_vars(env, facts, out)
    hsa_override(env, facts, out)
    details = {"judged": out.judged, "recorded": sorted(env)}
    passed = ", ".join(f"{k} {v}" for k, v in out.judged.items())
    # What breaks CUDA first, then what only slows it down.
    problems = sorted(out.problems, key=lambda p: p.status != Status.FAIL)
    return from_problems(
        problems, details, passed or "no variable that changes torch's behaviour is set"
    )
