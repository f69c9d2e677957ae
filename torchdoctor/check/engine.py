"""Run the selected checks over facts. A check that raises becomes an ``error`` result."""

from __future__ import annotations

import re
import shlex
import time
import traceback
from collections.abc import Iterable
from dataclasses import replace
from types import ModuleType

from torchdoctor.report import evidence
from torchdoctor.report.findings import Selection, normalise_fail_on
from torchdoctor.report.result import CheckResult, Remedy, Report, Status, Verdict, problem_remedies

from ..version import __version__
from . import externally_managed, remedy_audit
from .checks import ALL
from .checks.common import Context, not_in_report
from .record import Facts

NO_FIX = Remedy(
    "torchdoctor knows no automatic fix for this; the details (-v) show what it observed."
)


def _no_fix(facts: Facts, module: ModuleType) -> Remedy:
    """NO_FIX rests on the facts the check judged (its NEEDS), else on the facts' provenance."""
    needs = evidence.present(facts.raw, *getattr(module, "NEEDS", ()))
    return replace(NO_FIX, evidence=needs or evidence.present(facts.raw, "collected"))


def _offered(facts: Facts, remedies: list[Remedy]) -> list[Remedy]:
    """Only remedies grounded in these facts (issue 25): evidence that resolves, and no command
    that unsets a variable that is not set."""
    return [r for r in remedies if remedy_audit.offerable(facts.raw, r)]


def _within_expectation(
    module: ModuleType, ctx: Context, v: Verdict, facts: Facts | None = None
) -> Verdict:
    """Severity follows --expect: a CUDA problem on a job that expects the CPU is worth knowing,
    not worth failing the job for."""
    accel = getattr(module, "ACCELERATOR", None)
    if v.status == Status.FAIL and accel and ctx.expect not in ("auto", accel):
        v.status = Status.WARN
        v.summary += f" (not required with --expect {ctx.expect})"
        for p in v.problems:
            if p.status == Status.FAIL:
                p.status = Status.WARN
                p.message += f" (not required with --expect {ctx.expect})"
    for part in (v, *v.problems):  # the report contract: every warn/fail carries a remedy
        if facts is not None:
            part.remedies = _offered(facts, part.remedies)
        if part.status in (Status.WARN, Status.FAIL) and not part.remedies:
            part.remedies = [_no_fix(facts, module) if facts is not None else NO_FIX]
    return v


_PIP = re.compile(r"^(\S+) -m pip install ")


def verify_command(facts: Facts, check_id: str, commands: tuple[str, ...] = ()) -> str:
    """Re-run just this check against the interpreter the fix installed into (a new virtual
    environment for an externally managed Python), else the one that was examined."""
    installed = next((m.group(1) for m in map(_PIP.match, commands) if m), None)
    exe = installed or facts.platform.executable or facts.collected.python
    python = f" --python {exe if installed else shlex.quote(exe)}" if exe else ""
    return f"torchdoctor check{python} --only {check_id}"


def _with_verify(facts: Facts, check_id: str, remedies: list[Remedy]) -> list[Remedy]:
    """Every fix that runs commands ends with the command that shows whether it worked."""
    return [
        replace(r, commands=(*r.commands, verify_command(facts, check_id, r.commands)))
        if r.commands and not any(c.startswith("torchdoctor check") for c in r.commands)
        else r
        for r in remedies
    ]


def _adapted(facts: Facts, check_id: str, remedies: list[Remedy]) -> list[Remedy]:
    """Remedies as the examined interpreter needs them, each ending with its verify step."""
    return _with_verify(facts, check_id, externally_managed.adapt(remedies, facts))


def run_check(module: ModuleType, facts: Facts, ctx: Context) -> CheckResult:
    """One check's result."""
    t0 = time.perf_counter()
    try:
        # A pasted report carries only some facts: checks judging others skip, never guess.
        needs, kinds = getattr(module, "NEEDS", None), getattr(module, "EVIDENCE", ())
        v = not_in_report(facts, needs, kinds) or _within_expectation(
            module, ctx, module.check(facts, ctx), facts
        )
        for p in v.problems:  # each problem's fixes end with a verify step
            p.remedies = _adapted(facts, module.ID, p.remedies)
        # A check with problems has their remedies (derived, not adapted a second time).
        v.remedies = problem_remedies(v.problems) or _adapted(facts, module.ID, v.remedies)
        result = CheckResult(module.ID, module.TITLE, v.status, v.summary, v.details, v.remedies)
        result.problems = v.problems
    except Exception as exc:  # noqa: BLE001 - one broken check must not lose the report
        result = CheckResult(
            module.ID,
            module.TITLE,
            Status.ERROR,
            f"the check itself failed: {type(exc).__name__}: {exc}",
            {"traceback": traceback.format_exc(limit=8)},
            [
                Remedy(
                    "This is a torchdoctor bug; please report it with `--dump-facts facts.json`.",
                    evidence=evidence.present(facts.raw, "collected.torchdoctor_version")
                    or evidence.present(facts.raw, "collected"),
                )
            ],
        )
    result.duration_s = time.perf_counter() - t0
    return result


def select(only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[ModuleType]:
    only, skip = set(only), set(skip)
    return [m for m in ALL if (not only or m.ID in only) and m.ID not in skip]


def diagnose(
    facts: Facts,
    ctx: Context,
    modules: list[ModuleType],
    fail_on: str = "error",
    selection: Selection | None = None,
) -> Report:
    # The report embeds the facts as JSON, and what did not fit the record when they were read
    # leniently (gathered live, or parsed from a pasted report) beside them for the bug report;
    # a facts file was refused at load when it did not fit.
    checks = [run_check(m, facts, ctx) for m in modules]
    return Report(
        __version__,
        ctx.expect,
        checks,
        facts.raw,
        fail_on=normalise_fail_on(fail_on),
        selection=selection or Selection(),
        facts_problems=facts.misfits,
    )
