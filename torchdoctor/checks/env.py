"""env: the environment variables that change what torch does, each judged.

Only the whitelisted variables in ``facts['env']`` are read (probes/host.py TORCH_ENV_VARS); the
report names them and their judged values, never the rest of the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import alloc_conf
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context, nvml_gpus
from .host import usable_cpus

ID = "env"
TITLE = "Environment variables"
ORDER = 140  # position in the report: basic facts first, the smoke test last

_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]+(/\d+/\d+)?$")


@dataclass
class Findings:
    fails: list[str] = field(default_factory=list)
    warns: list[str] = field(default_factory=list)
    remedies: list[Remedy] = field(default_factory=list)
    judged: dict[str, str] = field(default_factory=dict)  # variable -> verdict in a few words

    def add(self, status: Status, var: str, message: str, remedy: Remedy) -> None:
        (self.fails if status == Status.FAIL else self.warns).append(message)
        self.remedies.append(remedy)
        self.judged[var] = status.value


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
    )
    status = Status.FAIL if gpus or dig(facts, "torch.build.variant") == "cuda" else Status.WARN
    if value.strip() in ("", "-1"):
        out.add(
            status,
            "CUDA_VISIBLE_DEVICES",
            f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU",
            fix_all,
        )
        return
    uuids = [g.uuid or "" for g in gpus]
    for pos, entry in enumerate(entries):
        if entry.isdigit():
            if gpus and int(entry) >= len(gpus):
                out.add(
                    status,
                    "CUDA_VISIBLE_DEVICES",
                    f"CUDA_VISIBLE_DEVICES={value!r}: index {entry} does not exist ({len(gpus)} "
                    f"GPU(s)); CUDA ignores it and every entry after it",
                    fix_all,
                )
                return
        elif _UUID.match(entry):
            if entry.startswith("MIG-") and len(entries) > 1:
                out.add(
                    Status.WARN,
                    "CUDA_VISIBLE_DEVICES",
                    "CUDA_VISIBLE_DEVICES lists a MIG instance among several entries: a process "
                    "sees only one MIG instance",
                    Remedy(
                        "Run one process per MIG instance, each with its own UUID.",
                        ("nvidia-smi -L",),
                    ),
                )
                return
            if entry.startswith("GPU-") and uuids and not any(u.startswith(entry) for u in uuids):
                out.add(
                    status,
                    "CUDA_VISIBLE_DEVICES",
                    f"CUDA_VISIBLE_DEVICES entry {pos + 1} is a GPU UUID that matches no GPU here",
                    fix_all,
                )
                return
        else:
            out.add(
                status,
                "CUDA_VISIBLE_DEVICES",
                f"CUDA_VISIBLE_DEVICES={value!r}: {entry!r} is neither an index nor a GPU/MIG UUID",
                fix_all,
            )
            return
    out.judged["CUDA_VISIBLE_DEVICES"] = "ok"


def device_order(env: dict[str, str], facts: Facts, out: Findings) -> None:
    order = env.get("CUDA_DEVICE_ORDER")
    names = {g.name for g in nvml_gpus(facts)}
    fix = Remedy(
        "Number GPUs as nvidia-smi does (PCI bus order) so indices mean the same everywhere.",
        ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",),
    )
    if order not in (None, "PCI_BUS_ID", "FASTEST_FIRST"):
        out.add(
            Status.WARN,
            "CUDA_DEVICE_ORDER",
            f"CUDA_DEVICE_ORDER={order!r} is not a valid value",
            fix,
        )
    elif len(names) > 1 and order != "PCI_BUS_ID":
        out.add(
            Status.WARN,
            "CUDA_DEVICE_ORDER",
            f"mixed GPUs ({', '.join(sorted(n for n in names if n))}) and CUDA_DEVICE_ORDER "
            f"{'unset' if order is None else order}: CUDA numbers them fastest first, unlike nvidia-smi",
            fix,
        )
    elif order is not None:
        out.judged["CUDA_DEVICE_ORDER"] = "ok"


def allocator(env: dict[str, str], facts: Facts, out: Findings) -> None:
    new, old = env.get("PYTORCH_ALLOC_CONF"), env.get("PYTORCH_CUDA_ALLOC_CONF")
    accelerated = dig(facts, "torch.build.variant") in ("cuda", "rocm", "xpu")
    for var, value in (("PYTORCH_ALLOC_CONF", new), ("PYTORCH_CUDA_ALLOC_CONF", old)):
        if value is None:
            continue
        problems = alloc_conf.problems(value)
        if not problems:
            out.judged[var] = "ok"
            continue
        fixed = alloc_conf.corrected(value)
        target = "PYTORCH_ALLOC_CONF" if new is None or var == "PYTORCH_ALLOC_CONF" else var
        cmds = (f"export {target}={fixed}",) if fixed else (f"unset {var}",)
        out.add(
            Status.FAIL if accelerated else Status.WARN,
            var,
            f"{var}={value!r}: "
            + "; ".join(p.message for p in problems)
            + (" — torch raises at the first GPU allocation" if accelerated else ""),
            Remedy(
                "Fix the allocator setting (keys and values are case-sensitive; booleans are "
                "True/False)." + ("" if fixed else " No safe correction is obvious: unset it."),
                cmds,
            ),
        )
    if old is not None and new is not None:
        out.add(
            Status.WARN,
            "PYTORCH_CUDA_ALLOC_CONF",
            "both PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are set: the CUDA allocator reads "
            "PYTORCH_CUDA_ALLOC_CONF and ignores the other",
            Remedy("Keep one: PYTORCH_ALLOC_CONF.", ("unset PYTORCH_CUDA_ALLOC_CONF",)),
        )
    elif old is not None and out.judged.get("PYTORCH_CUDA_ALLOC_CONF") == "ok":
        out.add(
            Status.WARN,
            "PYTORCH_CUDA_ALLOC_CONF",
            "PYTORCH_CUDA_ALLOC_CONF is deprecated (torch 2.9+) in favour of PYTORCH_ALLOC_CONF",
            Remedy(
                "Rename the variable; the value stays the same.",
                (f"export PYTORCH_ALLOC_CONF={old}", "unset PYTORCH_CUDA_ALLOC_CONF"),
            ),
        )


# Debugging switches that cost speed when left on: variable -> (is it on?, why it is slow).
DEBUG_SWITCHES: dict[str, tuple[Callable[[str], bool], str]] = {
    "CUDA_LAUNCH_BLOCKING": (
        lambda v: v.strip() not in ("", "0"),
        "every CUDA kernel launch waits for completion (debugging only; much slower)",
    ),
    "TORCH_SHOW_CPP_STACKTRACES": (
        lambda v: v.strip() not in ("", "0"),
        "every error collects a C++ stack trace (debugging only)",
    ),
    "NCCL_DEBUG": (
        lambda v: v.strip().upper() in ("INFO", "TRACE"),
        "NCCL logs every operation (debugging only; slows collectives, floods logs)",
    ),
    "TORCH_USE_CUDA_DSA": (
        lambda v: v.strip() not in ("", "0"),
        "is a build-time option of torch: it does nothing for an installed wheel (a source build "
        "with it has slower kernels)",
    ),
}


def debug_switches(env: dict[str, str], out: Findings) -> None:
    for var, (on, why) in DEBUG_SWITCHES.items():
        value = env.get(var)
        if value is None:
            continue
        if on(value):
            out.add(
                Status.WARN,
                var,
                f"{var}={value} left on: {why}",
                Remedy(f"Unset {var} unless you are debugging right now.", (f"unset {var}",)),
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
        )
        if n is None or n == 0:
            out.add(
                Status.WARN, var, f"{var}={value!r} is not a positive whole number (ignored)", fix
            )
        elif usable and n > usable:
            out.add(
                Status.WARN,
                var,
                f"{var}={n} but only {usable} CPU(s) are usable: threads oversubscribe them",
                fix,
            )
        else:
            out.judged[var] = "ok"


def mps_vars(env: dict[str, str], facts: Facts, out: Findings) -> None:
    mac = dig(facts, "platform.system") == "Darwin"
    fallback = env.get("PYTORCH_ENABLE_MPS_FALLBACK")
    if fallback is not None:
        if mac and fallback not in ("0", "1"):
            out.add(
                Status.WARN,
                "PYTORCH_ENABLE_MPS_FALLBACK",
                f"PYTORCH_ENABLE_MPS_FALLBACK={fallback!r}: only 1 enables the CPU fallback",
                Remedy("Use 1 to enable it.", ("export PYTORCH_ENABLE_MPS_FALLBACK=1",)),
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
        )
        if value is None or value < 0:
            out.add(
                Status.WARN,
                "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
                f"PYTORCH_MPS_HIGH_WATERMARK_RATIO={ratio!r} is not a non-negative number",
                fix,
            )
        elif value == 0 and mac:
            out.add(
                Status.WARN,
                "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
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
            f"HSA_OVERRIDE_GFX_VERSION={value!r} is not of the form MAJOR.MINOR.STEP (e.g. 10.3.0)",
            Remedy(
                "Use the gfx target's version, e.g. 10.3.0 for gfx1030.",
                ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",),
            ),
        )
    elif dig(facts, "torch.build.variant") != "rocm":
        out.judged["HSA_OVERRIDE_GFX_VERSION"] = "no effect (not a ROCm build)"
    else:
        out.judged["HSA_OVERRIDE_GFX_VERSION"] = "set (unofficial; see rocm)"


def check(facts: Facts, ctx: Context) -> Verdict:
    env = dig(facts, "env", {})
    out = Findings()
    visible_devices(env, facts, out)
    device_order(env, facts, out)
    allocator(env, facts, out)
    debug_switches(env, out)
    thread_counts(env, facts, out)
    mps_vars(env, facts, out)
    hsa_override(env, facts, out)
    details = {"judged": out.judged, "recorded": sorted(env)}
    if out.fails or out.warns:
        status = Status.FAIL if out.fails else Status.WARN
        return verdict(status, "; ".join(out.fails + out.warns), details, out.remedies)
    if not out.judged:
        return verdict(Status.PASS, "no variable that changes torch's behaviour is set", details)
    return verdict(
        Status.PASS,
        ", ".join(f"{k} {v}" for k, v in out.judged.items()),
        details,
    )
