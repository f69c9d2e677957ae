"""`torchdoctor inspect`: what a checkpoint holds, where it was saved from, how to load it here.

The file is read by probes/child/ckpt_probe.py in a child process with a deadline (a hostile or huge
file cannot hang or crash us); this module turns the probe's stages into a report and the
exact `torch.load(...)` call that works on this machine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..probes.runner import child_argv, run_probe
from ..report.docs import finding_url
from ..report.findings import Finding, Selection, envelope, split
from . import weights_only

PICKLED_MODULE = re.compile(r"^(torch\.nn\.modules\.|__main__\.)")
WEIGHTS_ONLY_FAILED = "Weights only load failed"
CUDA_LOCATION = re.compile(r"cuda(?::(\d+))?")


def dangerous_globals(globals_: list[str]) -> list[str]:
    """`module.name (why)` for each global outside what weights_only=True allows, except torch's
    own layer classes (a pickled nn.Module): judged against the allowlist, never a denylist."""
    return [
        f"{g} (not allowed by weights_only=True: unpickling imports and calls it)"
        for g in weights_only.not_allowed(globals_)
        if not weights_only.TORCH_MODULE_CLASS.fullmatch(g)
    ]


def _loadable_here(location: str, machine: dict[str, Any]) -> bool:
    if location == "cpu" or location.startswith("meta"):
        return True
    cuda = CUDA_LOCATION.fullmatch(location)
    if cuda:
        index = int(cuda.group(1) or 0)
        return bool(machine.get("cuda_available")) and index < machine.get("cuda_device_count", 0)
    if location.startswith("mps"):
        return bool(machine.get("mps_available"))
    return False  # xpu, hpu, privateuse1…: only where that backend is present


def _target(machine: dict[str, Any]) -> str:
    return "cuda:0" if machine.get("cuda_available") else "cpu"


def _problem(report: dict[str, Any], finding_id: str, level: str, text: str) -> None:
    """One problem: its line for the text report, and a finding with a stable id."""
    report["problems"].append(text)
    report["_findings"].append((finding_id, level, text))


def build_report(path: str, run, selection: Selection | None = None) -> dict[str, Any]:
    """The report in the shared findings envelope (command ``inspect``)."""
    report = _build(path, run)
    call = report.get("load_call")
    found = [
        Finding(
            id=fid,
            level=level,
            message=text,
            subject=path,
            remedies=[{"text": f"Load it with: {call}", "commands": []}] if call else [],
            details={"format": report.get("format")},
            doc=finding_url(fid),
        )
        for fid, level, text in report.pop("_findings")
    ]
    kept, silenced = split(found, selection or Selection())
    doc = envelope("inspect", kept, silenced=silenced, fail_on="warning", **report)
    # The exit code says whether the file loads here as it is (documented for inspect).
    doc["summary"]["exit_code"] = 0 if report.get("loads_as_is") else 1
    return doc


def _build(path: str, run) -> dict[str, Any]:
    """Pure: the probe's stages (a ProbeRun) -> the report dict."""
    st, errs = run.stages, run.errors
    report = _empty_report(path, run)
    if not _readable(report, run):
        return report
    quoted = repr(path)
    if report["format"] == "safetensors":
        return _safetensors(report, st.get("safetensors"), errs, quoted)
    pick = st.get("pickle") or {}
    _judge_globals(report, pick)
    load = st.get("load")
    if pick.get("error") and not load:
        _problem(
            report,
            "inspect.malformed",
            "error",
            f"the pickle is malformed or truncated: {pick['error']}",
        )
    locations = (load or {}).get("saved_locations") or pick.get("storage_locations", {})
    needs_map = _judge_locations(report, locations)
    map_arg = f", map_location={_target(report['machine'])!r}" if needs_map else ""
    if load:
        report["content"] = {k: v for k, v in load.items() if not k.startswith("saved_")}
        report["state_dict"] = state_dict_call(report["content"])
        report["load_call"] = f"torch.load({quoted}{map_arg}, weights_only=True)"
        report["loads_as_is"] = not needs_map
    else:
        _judge_load_error(report, (errs.get("load") or {}).get("message", ""), quoted, map_arg)
    return report


def _empty_report(path: str, run) -> dict[str, Any]:
    info = run.stages.get("file") or {}
    return {
        "path": path,
        "format": info.get("format", "unknown"),
        "size_bytes": info.get("size_bytes"),
        "machine": run.stages.get("machine") or {},
        "content": None,
        "saved_locations": {},
        "globals": [],
        "pickled_objects": [],
        "dangerous_globals": [],
        "loads_as_is": False,
        "problems": [],
        "_findings": [],
        "load_call": None,
        "probe": run.summary(),
    }


def _readable(report: dict[str, Any], run) -> bool:
    """Problems with reading the file at all; False when there is nothing more to judge."""
    errs = run.errors
    if run.status in ("timeout", "crashed"):
        _problem(report, "inspect.read-failed", "error", f"reading the file failed: {run.message}")
    if "file" in errs:
        message = f"cannot read the file: {errs['file'].get('message')}"
        _problem(report, "inspect.unreadable", "error", message)
        return False
    if report["format"] == "unknown":
        message = "not a torch.save (zip or legacy pickle) or safetensors file"
        _problem(report, "inspect.not-a-checkpoint", "error", message)
        return False
    if "machine" in errs:
        _problem(
            report,
            "inspect.torch-unavailable",
            "warning",
            f"torch could not be imported to check loading: {errs['machine'].get('message')}",
        )
    return True


def _judge_globals(report: dict[str, Any], pick: dict[str, Any]) -> None:
    """The globals the pickle references: pickled modules, and any weights_only refuses."""
    report["globals"] = pick.get("globals", [])
    report["pickled_objects"] = [g for g in report["globals"] if PICKLED_MODULE.match(g)]
    report["dangerous_globals"] = dangerous_globals(report["globals"])
    if report["dangerous_globals"]:
        names = [d.split(" (", 1)[0] for d in report["dangerous_globals"]]
        _problem(
            report,
            "inspect.dangerous-globals",
            "error",
            f"DANGEROUS: references {', '.join(names[:5])}"
            + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            + ", which torch.load(weights_only=True) does not allow and which unpickling "
            "imports and calls. Do not load this file with weights_only=False.",
        )


def _judge_locations(report: dict[str, Any], locations: dict[str, Any]) -> bool:
    """Record where the tensors were saved; True when loading here needs a map_location."""
    machine = report["machine"]
    report["saved_locations"] = locations
    wrong = sorted(loc for loc in locations if not _loadable_here(loc, machine))
    needs_map = bool(wrong) and bool(machine)
    if needs_map:
        _problem(
            report,
            "inspect.saved-on-missing-device",
            "error",
            f"tensors were saved from {', '.join(wrong)}, which this machine does not have: "
            "a plain torch.load fails with 'Attempting to deserialize object on a CUDA device'",
        )
    return needs_map


def _judge_load_error(report: dict[str, Any], message: str, quoted: str, map_arg: str) -> None:
    """Why torch.load(weights_only=True) failed, and the call that loads it if one can."""
    if WEIGHTS_ONLY_FAILED in message and report["dangerous_globals"]:
        report["weights_only_error"] = message.strip().splitlines()[0]
    elif WEIGHTS_ONLY_FAILED in message:
        what = (
            "a pickled module/object (" + ", ".join(report["pickled_objects"][:5]) + ")"
            if report["pickled_objects"]
            else "objects that weights_only loading does not allow ("
            + ", ".join(weights_only.not_allowed(report["globals"])[:5])
            + ")"
        )
        _problem(
            report,
            "inspect.needs-weights-only-false",
            "warning",
            f"the file holds {what}: it loads only with weights_only=False, which runs code from "
            "the file. Do that only for a file you trust; better, re-save its state_dict().",
        )
        report["weights_only_error"] = message.strip().splitlines()[0]
        report["load_call"] = (
            f"torch.load({quoted}{map_arg}, weights_only=False)  # trusted files only"
        )
    elif message:
        _problem(
            report,
            "inspect.load-failed",
            "error",
            f"torch.load(weights_only=True) failed: {message.strip()[:300]}",
        )


# Parts of a checkpoint dict that usually hold the model's weights, most likely first.
STATE_DICT_PARTS = ("state_dict", "model_state_dict", "model", "net", "module")


def state_dict_call(content: dict[str, Any]) -> dict[str, Any] | None:
    """Where the model's state dict is in the loaded object, whether its keys carry the
    `module.` prefix of a DataParallel/DDP wrapper, and the load_state_dict call that fits."""
    if content.get("kind") == "state_dict":
        where, count, prefixed = "ckpt", content.get("tensors", 0), content.get("module_prefixed")
    else:
        parts = {k: p for k, p in (content.get("parts") or {}).items() if p["kind"] == "state_dict"}
        if not parts:
            return None
        key = next((k for k in STATE_DICT_PARTS if k in parts), next(iter(parts)))
        where = f"ckpt[{key!r}]"
        count, prefixed = parts[key]["tensors"], parts[key].get("module_prefixed")
    if not count or prefixed is None:
        return None
    stripped = f'{{k.removeprefix("module."): v for k, v in {where}.items()}}'
    arg = stripped if prefixed == count else where
    return {
        "where": where,
        "keys": count,
        "module_prefixed": prefixed,
        "call": f"model.load_state_dict({arg})",
    }


def _safetensors(report: dict, header: dict | None, errs: dict, quoted: str) -> dict:
    if header is None:
        msg = (errs.get("safetensors") or {}).get("message", "unreadable header")
        _problem(report, "inspect.malformed", "error", f"cannot read the safetensors header: {msg}")
        return report
    report["content"] = {k: v for k, v in header.items() if k != "safetensors_installed"}
    end, available = header.get("data_end"), header.get("data_available")
    if isinstance(end, int) and isinstance(available, int) and end > available:
        _problem(
            report,
            "inspect.truncated",
            "error",
            f"the file is truncated: its tensors need {end} bytes of data, it holds {available}",
        )
        return report
    report["saved_locations"] = {"cpu": header.get("tensors", 0)}  # safetensors has no device
    device = _target(report["machine"]) if report["machine"] else "cpu"
    report["load_call"] = (
        f"safetensors.torch.load_file({quoted}, device={device!r})"  # never unpickles
    )
    if header.get("safetensors_installed"):
        report["loads_as_is"] = True
    else:
        _problem(
            report,
            "inspect.safetensors-missing",
            "warning",
            "the safetensors package is not installed: pip install safetensors",
        )
    return report


def inspect(
    path: str, python: str, timeout_s: float, selection: Selection | None = None
) -> dict[str, Any]:
    run = run_probe(child_argv(python, "ckpt_probe", str(Path(path).resolve())), timeout_s)
    return build_report(path, run, selection)


def exit_code(report: dict[str, Any]) -> int:
    """0: loads as it is here; 1: it needs another call, or could not be read."""
    return 0 if report.get("loads_as_is") else 1


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{n} B"


def render_text(r: dict[str, Any]) -> str:
    out = [f"{r['path']}  ({r['format']}, {_size(r.get('size_bytes'))})"]
    c = r.get("content") or {}
    if c:
        out.append(f"  content:   {c.get('kind')}  ({c.get('python_type', 'safetensors')})")
        for key, part in (c.get("parts") or {}).items():
            out.append(f"    {key}: {part['kind']}, {part['tensors']} tensors")
        out.append(
            f"  tensors:   {c.get('tensors')}, {c.get('elements', 0):,} elements, "
            f"{_size(c.get('bytes'))}"
        )
        dtypes = ", ".join(f"{k} ×{v}" for k, v in (c.get("dtypes") or {}).items())
        out.append(f"  dtypes:    {dtypes or '-'}")
    if r.get("saved_locations"):
        locs = ", ".join(f"{k} ({v} storages)" for k, v in r["saved_locations"].items())
        out.append(f"  saved on:  {locs}")
    if r.get("pickled_objects"):
        out.append(f"  pickled:   {', '.join(r['pickled_objects'][:8])}")
    foreign = weights_only.not_allowed(r.get("globals") or [])
    if foreign:
        out.append(f"  globals:   {', '.join(foreign[:8])}" + (" …" if len(foreign) > 8 else ""))
    m = r.get("machine") or {}
    if m:
        here = f"CUDA ×{m['cuda_device_count']}" if m.get("cuda_available") else "no CUDA"
        out.append(f"  here:      torch {m.get('torch_version')}, {here}")
    for p in r.get("problems", []):
        out.append(f"  ✗ {p}")
    verdict = "loads here as it is" if r.get("loads_as_is") else "does not load here as it is"
    out.append(f"  verdict:   {verdict}")
    if r.get("load_call"):
        out.append(f"  load with: {r['load_call']}")
    sd = r.get("state_dict")
    if sd:
        if sd["module_prefixed"] == sd["keys"]:
            out.append(
                f"  prefix:    every key of {sd['where']} starts with `module.` "
                "(saved from a DataParallel/DistributedDataParallel wrapper)"
            )
        elif sd["module_prefixed"]:
            out.append(
                f"  prefix:    {sd['module_prefixed']} of {sd['keys']} keys start with `module.`"
            )
        out.append(f"  into model: {sd['call']}  # ckpt = the torch.load(...) result")
    return "\n".join(out) + "\n"
