"""Build the plan from a diagnosis: choose each finding's remedy, then make its commands fit the
environment (PyTorch's indexes through a mirror, companions in the same resolve, conda for a conda
torch) and merge the steps (one command fixing two findings runs once)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace

from ..report.findings import Finding, id_matches
from ..report.result import Report
from . import commands as cmds
from . import conda
from .inventory import Inventory
from .plan import Advice, Plan, Step, choose, refusal


@dataclass(frozen=True)
class PlanOptions:
    only: tuple[str, ...] = ()  # finding ids or id prefixes
    mirror: str | None = None  # stands in for https://download.pytorch.org/whl


def treatable_findings(report: Report, only: tuple[str, ...]) -> list[Finding]:
    kept, _ = report.findings()
    return [
        f
        for f in kept
        if f.level in ("error", "warning") and (not only or any(id_matches(p, f.id) for p in only))
    ]


def build(report: Report, facts, inv: Inventory, opts: PlanOptions) -> Plan:
    torch = inv.dists.get("torch")
    manager = "conda" if conda.torch_from_conda(inv.conda, torch and torch.installer) else "pip"
    plan = Plan(inv.python, inv.prefix, manager, findings=treatable_findings(report, opts.only))
    plan.refused = refusal(facts, inv)
    conda_prefix = inv.prefix if os.path.isdir(os.path.join(inv.prefix, "conda-meta")) else None
    for finding in plan.findings:
        chosen = choose(finding, inv.python, conda_prefix)
        if isinstance(chosen, Step) and plan.refused:
            chosen = chosen.as_advice(plan.refused)
        elif isinstance(chosen, Step):
            chosen = _fitted(chosen, inv, manager, opts)
        if isinstance(chosen, Advice):
            plan.advice.append(chosen)
        else:
            _merge(plan, chosen)
    return plan


def _fitted(step: Step, inv: Inventory, manager: str, opts: PlanOptions) -> Step | Advice:
    """The step's commands for this environment, or advice when they cannot be made to fit."""
    fitted = []
    for cmd in step.commands:
        cmd = cmds.with_mirror(cmd, opts.mirror)
        cmd, notes = cmds.with_companions(cmd, inv.versions())
        step.notes += notes
        if manager == "conda":
            exe = os.environ.get("CONDA_EXE") or shutil.which("conda") or "conda"
            translated = conda.translate(cmd, exe, inv.prefix, inv.conda)
            if isinstance(translated, str):
                return step.as_advice(f"torch came from conda, and {translated}")
            if translated is not cmd:
                step.notes.append(f"torch came from conda: `{cmd.text()}` becomes a conda install")
            cmd = translated
        fitted.append(cmd)
    return replace(step, commands=fitted)


def _merge(plan: Plan, step: Step) -> None:
    """A step whose commands an earlier step runs already joins it; one that installs a package
    an earlier step installs differently is advice (fix again after the first)."""
    argvs = [c.argv for c in step.commands]
    for earlier in plan.steps:
        if [c.argv for c in earlier.commands] == argvs:
            earlier.findings += step.findings
            return
    for earlier in plan.steps:
        shared = {n for c in earlier.commands for n in c.names} & {
            n for c in step.commands for n in c.names
        }
        if shared:
            why = (
                f"it changes {', '.join(sorted(shared))} differently from the fix for "
                f"{earlier.findings[0]}: run `torchdoctor fix` again once that one is verified"
            )
            plan.advice.append(step.as_advice(why))
            return
    plan.steps.append(step)
