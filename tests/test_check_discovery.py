"""Adding a check is one module (plus its test and doc page): discovery finds it, ORDER places it."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import torchdoctor.check.checks as checks_pkg
from torchdoctor.check.checks import ALL


def test_every_module_that_declares_a_check_is_discovered():
    declared = []
    for info in pkgutil.iter_modules(checks_pkg.__path__):
        text = (Path(checks_pkg.__path__[0]) / f"{info.name}.py").read_text(encoding="utf-8")
        if "\nID = " in text and "\ndef check(" in text:
            declared.append(f"{checks_pkg.__name__}.{info.name}")
    assert sorted(m.__name__ for m in ALL) == sorted(declared)


def test_checks_are_self_describing_and_ordered():
    for m in ALL:
        assert isinstance(m.ID, str) and isinstance(m.TITLE, str) and isinstance(m.ORDER, int), m
        assert getattr(m, "ACCELERATOR", None) in (None, "cuda", "mps", "xpu"), m.ID
    orders = [m.ORDER for m in ALL]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert ALL[0].ID == "platform" and ALL[-1].ID.startswith("smoke.")
