"""`torchdoctor fix` from start to end: diagnose, plan, preview, confirm, record, apply, verify,
and restore when a command fails, the verification fails or a signal stops it; `--undo`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..check import pipeline
from ..safeio import OutputError
from . import inventory, planner, preview, record, restore, snapshot
from .apply import Applied, Stopped, apply, signals_ignored, stop_on_signals
from .outcome import Outcome
from .plan import Plan
from .verify import verify

INSTALL_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class FixOptions:
    check: pipeline.CheckOptions
    plan: planner.PlanOptions = field(default_factory=planner.PlanOptions)
    python: str | None = None
    yes: bool = False
    dry_run: bool = False
    install_timeout_s: float = INSTALL_TIMEOUT_S
    # Asks the user (a terminal); None: nobody to ask. Returns whether to go ahead.
    confirm: Callable[[Outcome], bool] | None = None
    # Told what is happening before each long part (the text report on stderr).
    say: Callable[[str], None] = lambda _msg: None


def diagnose(opts: FixOptions) -> tuple[Plan, dict[str, str]]:
    """The plan for the examined environment, previewed, and each diagnosed finding's level."""
    facts = pipeline.gather(opts.check, opts.python)
    report = pipeline.judge(facts, opts.check)
    python = facts.platform.executable or facts.collected.python or opts.python or ""
    prefix = facts.platform.prefix or os.path.dirname(os.path.dirname(python))
    inv = inventory.take(python, prefix)
    plan = planner.build(report, facts, inv, opts.plan)
    if plan.steps:
        opts.say("Asking the installer what each step would change (dry run)…")
        preview.preview(plan, inv.versions())
    plan.inventory = inv
    return plan, {f.id: f.level for f in report.findings()[0]}


def treat(opts: FixOptions) -> Outcome:
    plan, levels = diagnose(opts)
    out = Outcome(plan, source_levels=levels)
    if not plan.steps:
        out.state = "planned"
        return out
    why_not = _not_confirmed(opts, out)
    if why_not:
        out.state, out.why_not_applied = "not-applied", why_not
        return out
    rec = _record(plan, out, opts)
    if rec is None:
        return out
    _apply_and_verify(
        plan, rec, out, opts, failing_before={i for i, lv in levels.items() if lv == "error"}
    )
    return out


def _not_confirmed(opts: FixOptions, out: Outcome) -> str:
    if opts.dry_run:
        return "--dry-run"
    if opts.yes:
        return ""
    if opts.confirm is None:
        return "no terminal to confirm on and no --yes"
    return "" if opts.confirm(out) else "declined"


def _record(plan: Plan, out: Outcome, opts: FixOptions) -> dict | None:
    """The undo record, on disk before anything runs; None (and a refusal) when impossible."""
    inv = plan.inventory
    assert inv is not None
    touched = sorted(
        {c.name for s in plan.steps for c in s.changes}
        | {n for s in plan.steps for c in s.commands for n in c.names}
    )
    rec = record.build(
        inv, [list(c.argv) for s in plan.steps for c in s.commands], opts.plan.mirror
    )
    rec["touched"] = touched
    tops: dict[str, list[str]] = {}
    for name in touched:
        dist = inv.dists.get(name)
        if dist and dist.location:
            tops.setdefault(dist.location, []).extend(snapshot.top_levels(dist.metadata_location))
    rec["snapshot"] = snapshot.take(inv.site_packages, tops)
    rec["targets"] = plan.targets
    blocked = record.unrestorable(rec, touched)
    if blocked:
        plan.refused = f"a restore could not put back {blocked[0]}, so fix will not change it"
    else:
        try:
            out.record_path = record.save(rec)
            return rec
        except (OSError, OutputError) as exc:
            plan.refused = f"the undo record cannot be written, so nothing is changed: {exc}"
    out.state = "not-applied"
    plan.advice += [s.as_advice(plan.refused) for s in plan.steps]
    plan.steps = []
    return None


def _apply_and_verify(
    plan: Plan, rec: dict, out: Outcome, opts: FixOptions, failing_before: set[str]
) -> None:
    out.applied = Applied()
    try:
        with stop_on_signals():
            record.mark(rec, "applying")
            opts.say("Applying the plan…")
            apply(plan, opts.install_timeout_s, out.applied)
            if out.applied.failed is None:
                opts.say("Verifying with a fresh probe…")
                out.verified = verify(opts.check, plan.python, plan.targets, failing_before)
    except Stopped as stop:
        out.stopped_by = stop.signum
    if out.stopped_by is None and out.applied.failed is None and out.verified and out.verified.ok:
        out.state = "verified"
        record.mark(rec, "verified")
        return
    out.state = "interrupted" if out.stopped_by is not None else "failed"
    opts.say("Restoring the environment as recorded (Ctrl-C is ignored until it is done)…")
    with signals_ignored():
        out.restored = restore.restore(rec, opts.install_timeout_s)
    record.mark(rec, "restored" if out.restored.exact else "restore-incomplete")


def undo(opts: FixOptions, prefix: str) -> Outcome:
    """Restore the last recorded state of the environment at ``prefix``."""
    rec = record.load(prefix)  # RecordError: one line, exit 2
    now = inventory.take(rec["python"], prefix)
    out = Outcome(None, state="undo")
    todo = restore.commands(rec, now) if not now.error else []
    diff = inventory.freeze_diff(rec["freeze"], now.freeze) if not now.error else []
    if not now.error and not diff:
        out.state = "undone"
        out.restored = restore.Restored()
        return out
    out.undo_commands = todo
    why_not = "--dry-run" if opts.dry_run else ("" if opts.yes else "no --yes")
    if why_not and opts.confirm is not None and not opts.dry_run:
        why_not = "" if opts.confirm(out) else "declined"
    if why_not:
        out.state, out.why_not_applied = "not-applied", why_not
        return out
    with signals_ignored():
        out.restored = restore.restore(rec, opts.install_timeout_s)
    out.state = "undone"
    record.mark(rec, "restored" if out.restored.exact else "restore-incomplete")
    return out
