"""`torchdoctor.audit_export(model, example_inputs)`: will this model export, and run on the target?

Three phases, timed: the checklist (export_checklist.py), a real export of a deep copy (the
user's model is never touched: mode, device, dtype, hooks and parameters stay as they were), and
a run of the exported program on the target device compared with the eager model. Exporting
works in memory or in a temporary directory. Imports torch, so it is only loaded on first use.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import linecache
import re
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .export_checklist import checklist, unwrap
from .model import Remedy
from .model_audit import AuditFinding

VIA = ("torch.export", "onnx")
ONNX_PACKAGES = ("onnx", "onnxscript", "onnxruntime")
# abs and rel tolerance per output dtype: exporters reorder float maths, so not bit-exact.
TOLERANCE = {
    torch.float64: (1e-7, 1e-5),
    torch.float32: (1e-4, 1e-3),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}
MESSAGE_CHARS = 600
CAUSES = [
    (
        re.compile(r"same device|at least two devices|device mismatch|Unhandled FakeTensor Device"),
        "mixed devices: tensors on different devices meet in one operation",
        "Put every parameter, buffer and input on one device (model.to(device)), and create "
        "tensors in forward with device=x.device.",
    ),
    (
        re.compile(r"data.dependent|GuardOnDataDependent|Dynamic control flow", re.I),
        "data-dependent control flow: an `if`/loop or a Python number that depends on tensor "
        "values, which a graph cannot capture",
        "Replace the branch with torch.where or torch.cond, or compute it from shapes only.",
    ),
    (
        re.compile(r"no fake impl|fake kernel|meta kernel|register_fake", re.I),
        "a custom operator without a fake (meta) implementation, which tracing needs",
        "Register one: @torch.library.register_fake for the operator (shapes and dtypes only).",
    ),
    (
        re.compile(
            r"unsupported|not supported|no decomposition|not implemented|no onnx function|"
            r"DispatcherError|cannot be exported|Error when translating node",
            re.I,
        ),
        "an operator the exporter does not support",
        "Rewrite that line with supported operators, or register a decomposition/translation "
        "for the operator.",
    ),
]
OPERATOR = re.compile(r"\b(aten(?:\.|::)\w+(?:\.\w+)?|torch\.ops\.\w+\.\w+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
DISPATCH_FILE = "torch/nn/modules/module.py"  # Module.__call__: its frames say nothing
STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.+)')


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


def _short(exc: BaseException) -> str:
    text = ANSI.sub("", f"{type(exc).__name__}: {exc}").strip()
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " …"


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what caused it: exporters wrap the error raised in forward."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _receiver(frame) -> Any:
    """The object a frame's method runs on (its first argument, whatever it is called), or None
    when the frame is not running a method of that object's class."""
    code = frame.f_code
    owner = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
    method = getattr(type(owner), code.co_name, None)
    return owner if getattr(method, "__code__", None) is code else None


def _frames(exc: BaseException) -> list:
    """Every frame of the exception chain, the original error's innermost frame last."""

    frames = []
    for e in _chain(exc):  # a wrapper's frames end where it caught the error it wraps
        frames.extend(frame for frame, _ in traceback.walk_tb(e.__traceback__))
    return frames


def _innermost(frames: list, names: dict[int, str]) -> tuple[str, str, str] | None:
    """(module path, file:line, source line) of the deepest frame running one of our modules."""
    for frame in reversed(frames):
        code = frame.f_code
        if code.co_filename.endswith(DISPATCH_FILE) or id(_receiver(frame)) not in names:
            continue
        line = linecache.getline(code.co_filename, frame.f_lineno).strip()
        return names[id(_receiver(frame))], f"{code.co_filename}:{frame.f_lineno}", line
    return None


def _user_line(frames: list) -> tuple[str, str]:
    """(file:line, source) of the deepest frame outside torch and torchdoctor: the user's code."""
    skip = (str(Path(torch.__file__).parent), str(Path(__file__).parent))
    for frame in reversed(frames):
        file = frame.f_code.co_filename
        if not file.startswith(skip) and not file.startswith("<"):
            return f"{file}:{frame.f_lineno}", linecache.getline(file, frame.f_lineno).strip()
    return "", ""


def _operator(frames: list, messages: str) -> str | None:
    """The aten operator being dispatched when the error was raised, else one the message names."""
    for frame in reversed(frames):
        func = frame.f_locals.get("func")
        if isinstance(func, torch._ops.OpOverload):
            return str(func)
    found = OPERATOR.search(messages)
    return found.group(1) if found else None


def _first_line(exc: BaseException) -> str:
    text = ANSI.sub("", str(exc)).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {line}"[:MESSAGE_CHARS]


def failed(exc: BaseException, model: nn.Module, via: str) -> AuditFinding:
    names = {id(m): path for path, m in model.named_modules()}
    chain = _chain(exc)
    messages = " | ".join(_short(e) for e in chain)
    frames = _frames(exc)
    where = _innermost(frames, names)
    op = _operator(frames, messages)
    cause, fix = next(
        ((c, f) for pattern, c, f in CAUSES if pattern.search(messages)),
        ("not recognised: read the exporter's message", "See the exporter's message."),
    )
    path, location, line = where or ("", "", "")
    user_location, user_code = _user_line(frames)
    at = f" in `{path or '<model>'}` ({type(_module_at(model, path)).__name__})" if where else ""
    return AuditFinding(
        "export.failed",
        path,
        f"{via} failed{at}"
        + (f" at {location}: `{line}`" if line else "")
        + (f" (called from {user_location}: `{user_code}`)" if user_location != location else "")
        + (f", operator {op}" if op else "")
        + f". Likely cause: {cause}. Exporter said: {_first_line(chain[-1])}",
        details={
            "exporter": via,
            "error": _short(exc),
            "errors": [_short(e) for e in chain],
            "location": location,
            "source": line,
            "user_location": user_location,
            "operator": op,
            "cause": cause,
        },
        remedies=[Remedy(fix)],
    )


def _module_at(model: nn.Module, path: str) -> nn.Module:
    return model.get_submodule(path) if path else model


def _same_place(device: torch.device, target: torch.device) -> bool:
    if device.type != target.type:
        return False
    return target.index is None or device.index in (None, target.index)


def _source(node: torch.fx.Node) -> tuple[str, str]:
    """(file:line, code) of the user's line that made the node, when the graph recorded it."""
    trace = node.meta.get("stack_trace") or ""
    frames = STACK_LINE.findall(trace)
    if not frames:
        return "", ""
    file, line, _fn, code = frames[-1]
    return f"{file}:{line}", code.strip()


def _node_devices(node: torch.fx.Node) -> list[torch.device]:
    values = [*node.args, *node.kwargs.values()]
    return [v for v in values if isinstance(v, torch.device)]


def baked_devices(program: torch.export.ExportedProgram, target: str) -> list[AuditFinding]:
    want = torch.device(target)
    out = []
    seen: set[tuple[str, str]] = set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        for device in _node_devices(node):
            if _same_place(device, want):
                continue
            location, code = _source(node)
            if location and (location, str(device)) in seen:
                break  # `.to("cpu")` makes an assert node and a copy node: one line, one finding
            seen.add((location, str(device)))
            out.append(
                AuditFinding(
                    "export.baked-device",
                    (node.meta.get("nn_module_stack") and _module_path(node)) or "",
                    f"node `{node.name}` ({node.target}) pins its result to {device} but the "
                    f"target is {target}"
                    + (f"; it comes from {location}: `{code}`" if location else "")
                    + ". The exported graph keeps that device wherever it runs.",
                    [str(device)],
                    {"node": node.name, "op": str(node.target), "location": location, "code": code},
                    remedies=[Remedy(_baked_fix(node, device, target))],
                )
            )
            break
    for name, value in program.constants.items():
        if isinstance(value, torch.Tensor) and not _same_place(value.device, want):
            out.append(
                AuditFinding(
                    "export.baked-device",
                    name.rpartition(".")[0],
                    f"constant `{name}` was captured on {value.device} but the target is "
                    f"{target}: a plain tensor attribute, which neither model.to() nor moving "
                    "the exported program carries along.",
                    [str(value.device)],
                    {"constant": name},
                    remedies=[Remedy("Register the tensor as a buffer so model.to() moves it.")],
                )
            )
    return out


def _baked_fix(node: torch.fx.Node, device: torch.device, target: str) -> str:
    if (
        "to" in str(node.target).split(".")
        or "_to_copy" in str(node.target)
        or "assert" in str(node.target)
    ):
        return f"Drop the .to({str(device)!r}) inside forward, or export on {target}."
    return (
        "torch.export records the device of a tensor made in forward, even with device=x.device: "
        f"export with the model and inputs on {target}, or make the tensor once in __init__ as a "
        "buffer (register_buffer), which moves with the model."
    )


def _module_path(node: torch.fx.Node) -> str:
    # nn_module_stack: {key: (qualified path, type)}; the last entry is the innermost module.
    stack = list(node.meta["nn_module_stack"].values())
    path = stack[-1][0] if stack else ""
    return re.sub(r"^L\['self'\]\.?|^L__self__\.?", "", str(path))


def _leaves(obj: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(obj) if isinstance(t, torch.Tensor)]


def _to(obj: Any, device: str) -> Any:
    return pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, obj)


def compare(eager: list[torch.Tensor], exported: list[Any]) -> dict[str, Any] | None:
    """The worst output beyond its dtype's tolerance, or None when all agree."""
    if len(eager) != len(exported):
        return {"problem": f"{len(exported)} outputs instead of {len(eager)}"}
    worst = None
    for i, (want, got) in enumerate(zip(eager, exported, strict=True)):
        got = torch.as_tensor(got).to("cpu")
        want = want.detach().to("cpu")
        if tuple(got.shape) != tuple(want.shape):
            return {
                "output": i,
                "problem": f"shape {tuple(got.shape)} instead of {tuple(want.shape)}",
            }
        atol, rtol = TOLERANCE.get(want.dtype, (0.0, 0.0))
        diff = (got.double() - want.double()).abs()
        bad = diff > atol + rtol * want.double().abs()
        if diff.numel() and bool(bad.any()):
            largest = float(diff.max())
            if worst is None or largest > worst["max_abs_diff"]:
                worst = {
                    "output": i,
                    "dtype": str(want.dtype).replace("torch.", ""),
                    "max_abs_diff": largest,
                    "atol": atol,
                    "rtol": rtol,
                    "elements_beyond": int(bad.sum()),
                }
    return worst


def _run_torch_export(program, args, kwargs, target: str) -> list[Any]:
    module = program.module().to(target)
    with torch.no_grad():
        return _leaves(module(*_to(args, target), **_to(kwargs, target)))


def _run_onnx(path: Path, args, kwargs, target: str) -> list[Any]:
    import onnxruntime as ort

    provider = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}.get(
        torch.device(target).type
    )
    session = ort.InferenceSession(str(path), providers=[provider])
    feeds = [t.detach().cpu().numpy() for t in _leaves((args, kwargs))]
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, feeds, strict=False)))


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


def _not_run(target: str, why: str) -> AuditFinding:
    return AuditFinding(
        "export.not-run",
        "",
        f"the exported program was not run on {target}: {why}, so eager and exported outputs "
        "were not compared.",
        level="note",
        remedies=[Remedy(f"Run the audit on a machine with {target}.")],
    )


def _mismatch(target: str, via: str, detail: dict[str, Any]) -> AuditFinding:
    if "error" in detail:
        what = f"does not run on {target}: {detail['error']}"
        why = "A dtype or operator the target's runtime lacks is the usual cause."
        fix = "Export the float32 model (model.float()), or replace the operator the error names."
    else:
        if "problem" in detail:
            what = f"returns {detail['problem']}" + (
                f" for output {detail['output']}" if "output" in detail else ""
            )
        else:
            what = (
                f"differs from the eager model by up to {detail['max_abs_diff']:.3g} on output "
                f"{detail['output']} ({detail['elements_beyond']} elements beyond the "
                f"{detail['dtype']} tolerance atol={detail['atol']}, rtol={detail['rtol']})"
            )
        why = (
            "Python values (random numbers, counters, globals) and branches are frozen at "
            "export time; the eager model recomputes them."
        )
        fix = "Compute such values from tensors inside forward, or pass them as inputs."
    return AuditFinding(
        "export.mismatch",
        "",
        f"the {via} program {what}. {why}",
        [target],
        {"via": via, "target": target, **detail},
        remedies=[Remedy(fix)],
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
            outputs = _leaves(model(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - a failing eager model is reported, not raised
        return None, f"the eager model itself fails: {_short(exc)}"
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
            why = f"the model cannot be deep-copied ({_short(exc)})"
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
            try:
                if onnx_path is None:
                    got = _run_torch_export(program, args, kwargs, target)
                else:
                    got = _run_onnx(onnx_path, args, kwargs, target)
                detail = compare(eager, got)
            except Exception as exc:  # noqa: BLE001 - not running on the target is the finding
                detail = {"error": _short(exc)}
            if detail:
                findings.append(_mismatch(target, via, detail))
    return ExportAudit(findings, phase.timings)
