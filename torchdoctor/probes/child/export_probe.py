"""The export-audit probe: builds the user's model from its factory and runs audit_export on it.

Run as ``runner.child_argv(python, "export_probe", REQUEST_JSON)`` in a child process with a deadline (see
runner.py): importing the user's code, exporting and running the graph may hang or crash.
The factory is imported and called, never unpickled. Events are the torch probe's JSON lines;
whatever the user's code prints goes to stderr so it cannot be taken for an event.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from .torch_probe import emit, stage

PACKAGE = Path(__file__).resolve().parents[2]  # torchdoctor/, above probes/child/
INT_HIGH = 2  # random integer inputs (token ids, labels) stay in [0, 2): valid for any vocabulary


class SpecError(Exception):
    """MODULE:CALLABLE does not name something importable: a usage error for the parent."""


def load_torchdoctor() -> None:
    """Import torchdoctor from beside this script without putting the directory that holds it
    on sys.path: under another --python, that directory's torch must not shadow the user's."""
    if "torchdoctor" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "torchdoctor", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["torchdoctor"] = module
    spec.loader.exec_module(module)


def resolve(spec: str, cwd: str):
    """`pkg.module:attr` (imported like `python -m`, from cwd) or `path/file.py:attr`."""
    where, _, attr = spec.rpartition(":")
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = Path(cwd, where)
            if not path.is_file():
                raise SpecError(f"no such file: {where}")
            sys.path.insert(0, str(path.parent))
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[path.stem] = module
            mod_spec.loader.exec_module(module)
        else:
            sys.path.insert(0, cwd)
            module = importlib.import_module(where)
    except ImportError as exc:
        raise SpecError(f"cannot import {where!r}: {exc}") from exc
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"{where!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SpecError(f"{spec!r} is not callable")
    return obj


def make_model(request):
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = resolve(request["model"], request["cwd"])()
    if not isinstance(model, nn.Module):
        raise SpecError(f"{request['model']}() returned {type(model).__name__}, not an nn.Module")
    return model


def make_inputs(request, model):
    import torch

    from torchdoctor.export.checklist import model_device

    if request.get("inputs_factory"):
        made = resolve(request["inputs_factory"], request["cwd"])()
        if isinstance(made, dict):
            return (), made
        return (made if isinstance(made, tuple) else (made,)), {}
    device = model_device(model) or "cpu"
    args = []
    for spec in request["input_shapes"]:
        dtype = getattr(torch, spec["dtype"])
        if dtype.is_floating_point:
            args.append(torch.randn(spec["shape"], dtype=dtype, device=device))
        else:
            args.append(torch.randint(0, INT_HIGH, spec["shape"], device=device).to(dtype))
    return tuple(args), {}


def describe(model, args, kwargs):
    from torchdoctor.export.checklist import named_inputs

    return {
        "type": type(model).__module__ + "." + type(model).__qualname__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "inputs": {
            path: {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            for path, t in named_inputs(args, kwargs)
        },
    }


def main(argv):
    request = json.loads(argv[0])
    emit({"event": "hello", "pid": os.getpid(), "python": sys.executable})
    sys.stdout = sys.stderr  # the user's prints (and the exporters') are not events
    load_torchdoctor()
    built = {}

    def build():
        built["model"] = make_model(request)
        built["args"], built["kwargs"] = make_inputs(request, built["model"])
        return describe(built["model"], built["args"], built["kwargs"])

    if stage("model", build) is not None:
        from torchdoctor.export.audit import audit_export

        def run():
            return audit_export(
                built["model"],
                built["args"],
                example_kwargs=built["kwargs"],
                via=request["via"],
                target=request["target"],
                on_phase=lambda name: emit({"event": "phase", "phase": name}),
            ).to_dict()

        stage("audit", run)
    emit({"event": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
