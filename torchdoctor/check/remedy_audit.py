"""Judge one remedy against the whole machine it is offered on (issue 25).

A remedy can answer its problem and still be wrong for the machine: it unsets a variable that is
not set, sets a variable or allocator key the examined torch does not read, installs from a
package index that does not publish that torch release, or moves to a driver branch that drops a
GPU in the box without saying so. ``faults`` names each such fault; the engine drops a remedy
with a fault it can see cheaply (``offerable``) and the scenario tests fail on any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from torchdoctor.data import alloc_conf, alloc_keys, compat, driver_archs, torch_env
from torchdoctor.report import evidence

_UNSET = re.compile(r"(?:^|[;&|]\s*|\s)(?:unset|env\s+-u)\s+([A-Za-z_][A-Za-z0-9_]*)")
_EXPORT = re.compile(r"(?:^|\s)export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)")
_TORCH_PIN = re.compile(r"torch==(\d+\.\d+(?:\.\d+)?)(?:\+(cu\d+|cpu|rocm[\d.]+))?")
_INDEX = re.compile(r"download\.pytorch\.org/whl/(cu\d+|cpu|rocm[\d.]+)\b(?!/torch_stable)")
_DRIVER = re.compile(r"Upgrade the NVIDIA driver to (\d{3})")
ALLOCATOR_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def _torch_version(facts: Mapping[str, Any]) -> str | None:
    value = evidence.lookup(facts, "torch.version")
    return value if isinstance(value, str) else None


def unset_faults(facts: Mapping[str, Any], commands: tuple[str, ...]) -> list[str]:
    env = facts.get("env") or {}
    return [
        f"unsets {var}, which is not set"
        for cmd in commands
        for var in _UNSET.findall(cmd)
        if var not in env
    ]


def _allocator_faults(var: str, value: str, version: str | None) -> list[str]:
    out = []
    if alloc_keys.cuda_allocator_reads(var, version) is False:
        out.append(f"sets {var}, which the CUDA allocator of torch {version} does not read")
    for key, raw in alloc_conf.split_pairs(value.strip("'\"")) or []:
        if alloc_keys.accepts(key, version) is False:
            out.append(f"sets allocator key {key}, which torch {version} rejects")
        elif raw.startswith("[") and alloc_keys.accepts_syntax(key, "list", version) is False:
            out.append(f"uses the [..] form of {key}, which torch {version} rejects")
    return out


def export_faults(facts: Mapping[str, Any], commands: tuple[str, ...]) -> list[str]:
    version = _torch_version(facts)
    out: list[str] = []
    for cmd in commands:
        for var, value in _EXPORT.findall(cmd):
            if var in ALLOCATOR_VARS:
                out += _allocator_faults(var, value, version)
            elif torch_env.reads(var, version) is False:
                out.append(f"sets {var}, which torch {version} does not read")
    return out


def index_faults(commands: tuple[str, ...]) -> list[str]:
    """A pinned torch from a wheel index that does not publish that release."""
    out = []
    for cmd in commands:
        pin, index = _TORCH_PIN.search(cmd), _INDEX.search(cmd)
        variant = (index.group(1) if index else None) or (pin.group(2) if pin else None)
        if not pin or not variant or variant == "cpu" or variant.startswith("rocm"):
            continue
        row = compat.release(pin.group(1))
        if row is not None and variant not in row.variants:
            out.append(f"torch {pin.group(1)} is not published on the {variant} index")
    return out


def _gpus(facts: Mapping[str, Any]) -> list[tuple[str, tuple[int, int]]]:
    nvml = facts.get("nvml") or {}
    if nvml.get("status") != "ok":
        return []
    return [
        (str(d.get("name") or f"GPU {i}"), (int(d["capability"][0]), int(d["capability"][1])))
        for i, d in enumerate(nvml.get("devices") or [])
        if isinstance(d, Mapping) and isinstance(d.get("capability"), list)
        and len(d["capability"]) >= 2
    ]  # fmt: skip


def driver_faults(facts: Mapping[str, Any], text: str) -> list[str]:
    """A driver upgrade that gives up a present GPU must name it."""
    gpus = _gpus(facts)
    out = []
    for match in _DRIVER.finditer(text):
        dropped = driver_archs.dropped_by(int(match.group(1)), [c for _, c in gpus])
        out += [
            f"driver branch {match.group(1)} drops the {gpus[i][0]} and the remedy does not say so"
            for i in dropped
            if gpus[i][0] not in text
        ]
    return out


def faults(facts: Mapping[str, Any], remedy: Any) -> list[str]:
    """Everything wrong with ``remedy`` on the machine ``facts`` describe ([] when none)."""
    paths = tuple(getattr(remedy, "evidence", ()))
    out = [] if paths else ["has no evidence"]
    out += [f"evidence {p} names nothing in the facts" for p in evidence.unresolved(facts, paths)]
    commands = tuple(remedy.commands)
    out += unset_faults(facts, commands)
    out += export_faults(facts, commands)
    out += index_faults(commands)
    out += driver_faults(facts, remedy.text)
    return out


def offerable(facts: Mapping[str, Any], remedy: Any) -> bool:
    """What the engine keeps: grounded evidence, and no command that unsets an unset variable."""
    return evidence.grounded(facts, remedy.evidence) and not unset_faults(facts, remedy.commands)
