"""Why an export failed, in words: the exception chain, the user's line that caused it, the operator,
and a likely cause matched from the exporter's message."""

from __future__ import annotations

import linecache
import re
import traceback
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..report.result import Remedy
from .model_audit import AuditFinding

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


def short_message(exc: BaseException) -> str:
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


def _module_at(model: nn.Module, path: str) -> nn.Module:
    return model.get_submodule(path) if path else model


def failed(exc: BaseException, model: nn.Module, via: str) -> AuditFinding:
    names = {id(m): path for path, m in model.named_modules()}
    chain = _chain(exc)
    messages = " | ".join(short_message(e) for e in chain)
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
            "error": short_message(exc),
            "errors": [short_message(e) for e in chain],
            "location": location,
            "source": line,
            "user_location": user_location,
            "operator": op,
            "cause": cause,
        },
        remedies=[Remedy(fix)],
    )
