"""The layout is the architecture (issue 21): wings on floors, no cycles, a small top.

scripts/import_graph.py is the measuring tool (docs/how-it-works.md shows its output); these
tests run its logic on the package, and on a small made-up package, to show it catches both
kinds of mistake.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "torchdoctor"


def _import_graph():
    spec = importlib.util.spec_from_file_location(
        "import_graph", REPO / "scripts" / "import_graph.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


graph_tool = _import_graph()


def test_torchdoctor_has_no_import_cycle():
    assert graph_tool.cycles(graph_tool.graph(PACKAGE)) == []


def test_no_wing_imports_a_higher_or_sibling_wing():
    assert graph_tool.violations(graph_tool.graph(PACKAGE)) == []


def test_every_wing_is_on_a_floor():
    """A new package must be placed on a floor, or the layering test would not see it."""
    wings = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    wings |= {p.stem for p in PACKAGE.glob("*.py")}
    placed = {w for floor in graph_tool.FLOORS for w in floor}
    assert wings - placed == set()


def test_the_top_of_the_package_holds_at_most_eight_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "torchdoctor" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "torchdoctor"


def test_the_tool_reports_a_cycle_through_a_lazy_import(tmp_path):
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "check/__init__.py": "",
            "check/facts.py": "def load():\n    from . import gather\n",
            "check/gather.py": "from .facts import load\n",
        },
    )
    assert graph_tool.cycles(graph_tool.graph(package)) == [
        ["torchdoctor.check.facts", "torchdoctor.check.gather"]
    ]


def test_the_tool_reports_a_lower_wing_importing_a_higher_one(tmp_path):
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "report/__init__.py": "",
            "report/result.py": "from ..check.engine import run\n",
            "check/__init__.py": "",
            "check/engine.py": "from ..report.result import Status\n",
            "inspect/__init__.py": "",
            "inspect/checkpoint.py": "from torchdoctor.export import audit\n",
            "export/__init__.py": "",
            "export/audit.py": "",
        },
    )
    assert graph_tool.violations(graph_tool.graph(package)) == [
        "torchdoctor.inspect.checkpoint -> torchdoctor.export.audit",
        "torchdoctor.report.result -> torchdoctor.check.engine",
    ]
