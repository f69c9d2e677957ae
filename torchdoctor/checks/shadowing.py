"""torch.shadowing: a torch.py or torch/ that a user's `import torch` finds before the real torch.

A script named torch.py, or a folder named torch, in the directory a script runs from (or on
PYTHONPATH) is imported instead of the installed torch: the symptoms are "module 'torch' has no
attribute 'cuda'" or a circular-import error, which point nowhere near the cause.
"""

from __future__ import annotations

import os
import shlex

from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import Context

ID = "torch.shadowing"
TITLE = "Nothing hides the installed torch"
ORDER = 30  # position in the report: basic facts first, the smoke test last

WHERE = {"cwd": "in the current directory", "sys.path": "on PYTHONPATH/sys.path"}


def _renamed(path: str, kind: str) -> str:
    stem, ext = os.path.splitext(path) if kind == "module" else (path, "")
    return f"{stem}_local{ext}"


def _finding(shadow: dict, torch_found: bool) -> tuple[str, Remedy]:
    path, kind, via = (str(shadow.get(k)) for k in ("path", "kind", "via"))
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
    return (
        f"the {what} {path} {where} hides torch: {effect}",
        Remedy(
            f"Rename {path} (and the imports of it in your own code), so that `import torch` "
            "finds the real torch.",
            (f"mv {shlex.quote(path)} {shlex.quote(_renamed(path, kind))}",),
        ),
    )


def check(facts: Facts, ctx: Context) -> Verdict:
    platform = dig(facts, "platform", {})
    shadows = platform.get("torch_shadows") if isinstance(platform, dict) else None
    if not isinstance(shadows, list):
        return verdict(Status.SKIP, "the probe did not look for files that hide torch")
    found = [
        _finding(s, dig(facts, "torch.status") == "ok") for s in shadows if isinstance(s, dict)
    ]
    if not found:
        return verdict(Status.PASS, "no torch.py or torch/ on the path hides the installed torch")
    return verdict(
        Status.FAIL,
        "; ".join(problem for problem, _ in found),
        {"shadows": shadows},
        [remedy for _, remedy in found],
    )
