"""Which torchdoctor modules import which, and where the imports go round in a circle.

Usage: ``python scripts/import_graph.py [PACKAGE_DIR]`` (default: ``torchdoctor`` beside this
script's parent). Prints one line per module (``module: imported, ...``), then the cycles (strongly
connected groups of modules) and the layering violations. Every import counts, also one inside a
function: a lazy import is still a dependency. Exit status 1 where there is a cycle or a violation.

The layering is the package's architecture (docs/how-it-works.md): a wing may import only wings on
a lower floor or its own floor's shared top modules, never a higher one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# Floors, lowest first. A module's wing is its first package under torchdoctor; a module at the top
# of the package is its own wing (`torchdoctor.safeio` -> "safeio"). Wings on one floor (above the
# first) do not import each other: `inspect` cannot reach into `export`.
FLOORS: tuple[tuple[str, ...], ...] = (
    # the shared top: imports nothing of torchdoctor's
    ("interrupts", "safeio", "typed_json", "version"),
    ("data",),  # tables with sources and dates
    ("report",),  # the result model, findings, renderers
    ("config", "probes"),  # [tool.torchdoctor]; the child-process machinery
    ("check",),  # facts, their record, gathering and judging
    ("scan", "inspect", "export", "cluster", "fix"),  # the other commands' wings
    ("cli",),  # the click layer
    ("__init__", "__main__"),
)
# The export probe runs in a child process, loads torchdoctor from its files there and calls the
# export wing: an upward edge by design (the child is the export wing's hands), and the only one.
CHILD_CALLS_WING = {
    ("torchdoctor.probes.child.export_probe", "torchdoctor.export.audit"),
    ("torchdoctor.probes.child.export_probe", "torchdoctor.export.checklist"),
}
ROOT = "torchdoctor"


def module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, current: str, known: set[str]) -> set[str]:
    """The torchdoctor modules one file imports (a package's submodule where one is named)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, current, is_package)
            if target.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return {m for m in found if m in known and m != current}


def graph(package_dir: Path) -> dict[str, set[str]]:
    files = sorted(package_dir.rglob("*.py"))
    names = {module_name(f, package_dir): f for f in files}
    known = set(names)
    return {name: imports_of(path, name, known) for name, path in names.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int | None:
    name = wing(module)
    for level, members in enumerate(FLOORS):
        if name in members:
            return level
    return None


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a higher floor, or of a sibling wing on the same floor, as one line."""
    found = []
    for module, targets in sorted(edges.items()):
        mine = floor(module)
        for target in sorted(targets):
            theirs = floor(target)
            if mine is None or theirs is None or wing(module) == wing(target):
                continue
            if (module, target) in CHILD_CALLS_WING:
                continue
            if theirs > mine or (theirs == mine and mine >= 1):
                found.append(f"{module} -> {target}")
    return found


def main(argv: list[str]) -> int:
    package_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent.parent / ROOT
    edges = graph(package_dir)
    for module, targets in sorted(edges.items()):
        print(f"{module}: {', '.join(sorted(targets)) or '-'}")
    top = sorted(p.stem for p in package_dir.glob("*.py"))
    loops = cycles(edges)
    wrong = violations(edges)
    print(f"\nmodules: {len(edges)}; top-level modules: {len(top)} ({', '.join(top)})")
    print(f"import edges: {sum(len(t) for t in edges.values())}")
    print(f"cycles: {len(loops)}")
    for group in loops:
        print("  cycle: " + " <-> ".join(group))
    print(f"layering violations: {len(wrong)}")
    for line in wrong:
        print("  " + line)
    return 1 if loops or wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
