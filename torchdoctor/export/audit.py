"""`torchdoctor.audit_export(model, example_inputs)`: will this model export, and run on the target?

Three phases, timed: the checklist (checklist.py), a real export of a deep copy (the
user's model is never touched: mode, device, dtype, hooks and parameters stay as they were), and
a run of the exported program on the target device compared with the eager model. Exporting
works in memory or in a temporary directory. Imports torch, so it is only loaded on first use.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..report.result import Remedy
from .checklist import checklist, unwrap
from .compare import (
    ProviderFellBack,
    compare,
    mismatch,
    onnx_cannot_run,
    run_onnx,
    run_torch_export,
    tensor_leaves,
)
from .devices import baked_devices
from .diagnose import failed, short_message
from .model_audit import AuditFinding

VIA = ("torch.export", "onnx")
ONNX_PACKAGES = ("onnx", "onnxscript", "onnxruntime")


class ExportAudit(list):
    """The findings (a list, empty when all is well) and the seconds each phase took."""

    def __init__(self, findings: list[AuditFinding], timings: dict[str, float]) -> None:
        super().__init__(findings)
        self.timings = timings

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self],
            "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
        }


def missing_onnx_packages() -> list[str]:
    return [p for p in ONNX_PACKAGES if importlib.util.find_spec(p) is None]


def _as_args(example_inputs: Any) -> tuple:
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def target_available(target: str) -> str | None:
    """Why the exported program cannot run on ``target`` here, or None when it can."""
    kind = torch.device(target).type
    if kind == "cuda" and not torch.cuda.is_available():
        return "this torch sees no CUDA device"
    if kind == "mps" and not torch.backends.mps.is_available():
        return "this machine has no MPS device"
    if kind not in ("cpu", "cuda", "mps"):
        return f"running on {kind} is not supported by this audit"
    return None


def _export(model: nn.Module, args, kwargs, via: str, tmp: Path):
    """(ExportedProgram, path of the .onnx file or None)."""
    if via == "torch.export":
        return torch.export.export(model, args, kwargs), None
    path = tmp / "model.onnx"
    # The ONNX exporter prints progress lines; the audit's result is its report, not those.
    with contextlib.redirect_stdout(io.StringIO()):
        program = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, verbose=False)
        program.save(str(path))
    return program.exported_program, path


# compare.onnx_cannot_run on a CUDA target: the CPU package of ONNX Runtime is installed
ORT_GPU = Remedy(
    "Replace the CPU package of ONNX Runtime with its CUDA build (both install the same "
    "`onnxruntime` module, so remove the first).",
    ("pip uninstall -y onnxruntime", "pip install onnxruntime-gpu"),
)


def _not_run(target: str, why: str, remedy: Remedy | None = None) -> AuditFinding:
    return AuditFinding(
        "export.not-run",
        "",
        f"the exported program was not run on {target}: {why}, so eager and exported outputs "
        "were not compared.",
        level="note",
        remedies=[remedy or Remedy(f"Run the audit on a machine with {target}.")],
    )


def _unavailable(missing: list[str]) -> AuditFinding:
    return AuditFinding(
        "export.unavailable",
        "",
        f"ONNX export needs {', '.join(missing)}, which are not installed.",
        details={"missing": missing},
        remedies=[
            Remedy(
                "Install the ONNX extra.",
                ('pip install "torchdoctor[onnx]"', f"pip install {' '.join(missing)}"),
            )
        ],
    )


class _Phases:
    def __init__(self, on_phase: Callable[[str], None] | None) -> None:
        self.on_phase = on_phase
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        if self.on_phase:
            self.on_phase(name)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = time.perf_counter() - t0


def _eager(model: nn.Module, args, kwargs) -> tuple[list[torch.Tensor] | None, str | None]:
    try:
        with torch.no_grad():
            outputs = tensor_leaves(model(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - a failing eager model is reported, not raised
        return None, f"the eager model itself fails: {short_message(exc)}"
    if any(t.device.type == "meta" for t in outputs):
        return None, "the eager outputs are on the meta device, which holds no values"
    return outputs, None


def audit_export(
    model: nn.Module,
    example_inputs: Any,
    *,
    via: str | None = "torch.export",
    target: str = "cpu",
    example_kwargs: dict[str, Any] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> ExportAudit:
    """Run the export checklist, export a copy with ``via`` and run it on ``target``.

    ``example_inputs`` is one tensor or a tuple of positional inputs. ``via=None`` runs the
    checklist only. ``on_phase`` is called with each phase's name as it starts.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"audit_export() needs an nn.Module, got {type(model).__name__}")
    if via not in (*VIA, None):
        raise ValueError(f"via must be one of {', '.join(VIA)} (or None), got {via!r}")
    torch.device(target)  # a bad target string raises here, before any work
    args, kwargs = _as_args(example_inputs), dict(example_kwargs or {})
    phase = _Phases(on_phase)
    with phase("checklist"):
        findings = checklist(model, args, kwargs, target)
    if via is None:
        return ExportAudit(findings, phase.timings)
    if via == "onnx" and missing_onnx_packages():
        return ExportAudit([*findings, _unavailable(missing_onnx_packages())], phase.timings)
    with phase("copy"):
        try:
            # Only the copy is put in eval mode and exported: the user's model stays as it was.
            work = copy.deepcopy(unwrap(model)).eval()
        except Exception as exc:  # noqa: BLE001 - an uncopyable model is reported, never exported
            why = f"the model cannot be deep-copied ({short_message(exc)})"
            return ExportAudit([*findings, _not_run(target, why)], phase.timings)
    with tempfile.TemporaryDirectory(prefix="torchdoctor-export-") as tmp:
        with phase("eager"):
            eager, eager_problem = _eager(work, args, kwargs)
        with phase("export"):
            try:
                program, onnx_path = _export(work, args, kwargs, via, Path(tmp))
            except Exception as exc:  # noqa: BLE001 - the exporter's failure is the finding
                return ExportAudit([*findings, failed(exc, work, via)], phase.timings)
            if via == "torch.export":
                findings += baked_devices(program, target)
        with phase("run"):
            why = eager_problem or target_available(target)
            if why:
                return ExportAudit([*findings, _not_run(target, why)], phase.timings)
            why = onnx_cannot_run(target) if onnx_path is not None else None
            if why:
                cuda = torch.device(target).type == "cuda"
                remedy = ORT_GPU if cuda else None
                return ExportAudit([*findings, _not_run(target, why, remedy)], phase.timings)
            try:
                if onnx_path is None:
                    got = run_torch_export(program, args, kwargs, target)
                else:
                    got = run_onnx(onnx_path, args, kwargs, target)
                detail = compare(eager, got)
            except ProviderFellBack as exc:  # not run on the target at all
                return ExportAudit([*findings, _not_run(target, str(exc))], phase.timings)
            except Exception as exc:  # noqa: BLE001 - not running on the target is the finding
                detail = {"error": short_message(exc)}
            if detail:
                baked = any(f.id == "export.baked-device" for f in findings)
                findings.append(mismatch(target, via, detail, baked))
    return ExportAudit(findings, phase.timings)
