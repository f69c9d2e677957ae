"""torch.shadowing: a torch.py or torch/ that a user's `import torch` finds before the real torch.

A script named torch.py, or a folder named torch, in the directory a script runs from (or on
PYTHONPATH) is imported instead of the installed torch: the symptoms are "module 'torch' has no
attribute 'cuda'" or a circular-import error, which point nowhere near the cause.
"""

from __future__ import annotations

import os
import shlex

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.platform import Shadow
from .common import Context

ID = "torch.shadowing"
TITLE = "Nothing hides the installed torch"
ORDER = 30  # position in the report: basic facts first, the smoke test last
FINDINGS = {
    "module": "a torch.py file hides the installed torch",
    "package": "a torch/ package hides the installed torch",
    "namespace": "a bare torch/ folder imports as an empty namespace package",
    "stdlib": "a file named like a standard-library module torch imports hides that module",
    "companion": "a torchvision/ or torchaudio/ source checkout hides the installed one",
}

WHERE = {"cwd": "in the current directory", "sys.path": "on PYTHONPATH/sys.path"}


def _renamed(path: str, kind: str) -> str:
    stem, ext = os.path.splitext(path) if kind == "module" else (path, "")
    return f"{stem}_local{ext}"


def _finding(shadow: Shadow, torch_found: bool) -> Problem:
    path, kind, via = str(shadow.path), shadow.kind or "module", str(shadow.via)
    what = {"module": "file", "package": "package", "namespace": "folder"}.get(kind, "file")
    where = WHERE.get(via, "on the path")
    if kind == "namespace":
        effect = "`import torch` gives an empty namespace package (torch is not installed)"
    elif torch_found:
        effect = (
            "`import torch` in a script run from here imports it instead of the installed torch"
        )
    else:
        effect = "`import torch` imports it"
    rename = Remedy(
        f"Rename {path} (and the imports of it in your own code), so that `import torch` "
        "finds the real torch.",
        (f"mv {shlex.quote(path)} {shlex.quote(_renamed(path, kind))}",),
        evidence=("platform.torch_shadows",),
    )
    code = kind if kind in FINDINGS else "module"
    return Problem(code, Status.FAIL, f"the {what} {path} {where} hides torch: {effect}", [rename])


def _stdlib_finding(facts: Facts, shadow: Shadow) -> Problem:
    """pytorch/pytorch#14014: a script named dis.py; `import torch` imports inspect, which takes
    the script for the standard library's dis ("module 'dis' has no attribute ...")."""
    path = str(shadow.path)
    module = os.path.splitext(os.path.basename(path.rstrip("/\\")))[0]
    error = facts.torch.error.message if facts.torch.error else ""
    broke = facts.torch.status == "import_error" and f"'{module}'" in (error or "")
    rename = Remedy(
        f"Rename {path} (and the imports of it in your own code): a script run from this "
        f"directory imports it in place of the standard library's {module}, which torch needs.",
        (f"mv {shlex.quote(path)} {shlex.quote(_renamed(path, 'module'))}",),
        evidence=("platform.torch_shadows", *(("torch.error.message",) if broke else ())),
    )
    effect = "and `import torch` failed on it" if broke else "which `import torch` imports"
    why = f"{path} in the current directory hides the standard library's {module}, {effect}"
    return Problem("stdlib", Status.FAIL if broke else Status.WARN, why, [rename])


def _companion_finding(shadow: Shadow) -> Problem:
    """pytorch/vision#2228: run from a torchvision checkout, `import torchvision` takes the
    checkout, whose C++ ops were never built ("object has no attribute nms")."""
    path, module = str(shadow.path), str(shadow.module)
    where = WHERE.get(str(shadow.via), "on the path")
    fix = Remedy(
        f"Run your script from outside {os.path.dirname(path) or path}: {path} is a {module} "
        f"source checkout (or copy), and a script run there imports it instead of the installed "
        f"{module}. Or build the checkout in place so its compiled ops exist (`pip install -e . "
        "--no-build-isolation` in it).",
        evidence=("platform.torch_shadows",),
    )
    why = f"the package {path} {where} hides the installed {module}: its C++ ops are not built"
    return Problem("companion", Status.WARN, why, [fix])


def _judge(facts: Facts, shadow: Shadow) -> Problem:
    if shadow.kind == "stdlib":
        return _stdlib_finding(facts, shadow)
    if shadow.module:
        return _companion_finding(shadow)
    return _finding(shadow, facts.torch.status == "ok")


def check(facts: Facts, ctx: Context) -> Verdict:
    shadows = facts.platform.torch_shadows
    if shadows is None:
        return verdict(Status.SKIP, "the probe did not look for files that hide torch")
    found = [_judge(facts, s) for s in shadows]
    details = {"shadows": [s.raw for s in shadows]} if shadows else {}
    passed = (
        "no torch.py or torch/ on the path hides the installed torch; no file here hides a "
        "standard-library module it imports"
    )
    return from_problems(found, details, passed)
