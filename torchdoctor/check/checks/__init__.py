"""Check modules, found by discovery: every module in this package that declares ``ID``.

A check is one module: ``ID``, ``TITLE``, ``ORDER`` (its place in the report: basic facts first,
the smoke test last), optional ``ACCELERATOR`` (severity follows ``--expect``) and ``NEEDS``
(the fact paths it judges), and a pure ``check(facts, ctx) -> Verdict``. Adding a check is that
module, its test and its page under docs/checks/; nothing else lists it.

``NEEDS`` (optional) names the fact paths a check judges. Facts from a pasted report (a
collect_env text) list what they carry; a check needing more, or declaring nothing, is skipped
there as "not in the report" (engine.run_check), so no check judges facts a report lacks.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def _discover() -> list[ModuleType]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "ID") and hasattr(module, "check"):
            found.append(module)
    ids = [m.ID for m in found]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:  # a programming error, caught by the test suite
        raise RuntimeError(f"check ids declared twice: {duplicated}")
    return sorted(found, key=lambda m: (m.ORDER, m.ID))


ALL: list[ModuleType] = _discover()


def by_id() -> dict[str, ModuleType]:
    return {m.ID: m for m in ALL}
