"""Would another feature tell the real crash findings from their lookalikes? Measured on blind sets.

    python benchmarks/scan_features.py [--sets 153-200] [--commit HEAD] [--rules TD001,TD002,TD101]
        [--corpus-root /work/research]

The calibration (torchdoctor/scan/calibration.py) splits each rule's findings into classes by
what the file shows (it falls back to the CPU; it calls torch.save) and lowers a class its
repositories measured real less than three times in five. This script asks whether other facts
a project view could compute would split the crash classes better. It scans each set's trees
with `--commit`'s rules, the calibration table emptied (as scan_calibration.py does), at
`--confidence low`, keeps every finding on a labelled line with its blind verdict (true: its
label is a must-flag the rule points at), and prints, per rule and feature, the real share
counted by repository (each repository where the rule fired weighs one, split by the share of
its findings there that were real) and by finding. Then an oracle: the classes of the rules' own
reasoning (rule, own confidence, file falls back, file saves), taken best first, each one that
keeps the pooled precision at 90 % or more (one that would not is skipped): an upper bound, in
sample, of what choosing classes alone can find. Saves are `torch.save` calls by that name
(an aliased `th.save` is not seen).

The verdicts were read after these sets were scored: this measures features, it is not a blind
figure.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import scan_blind as sb  # noqa: E402
import scan_calibration as sc  # noqa: E402

from torchdoctor.scan.astutil import assigned_values, dotted  # noqa: E402
from torchdoctor.scan.calibration import below_bar  # noqa: E402
from torchdoctor.scan.context import falls_back  # noqa: E402
from torchdoctor.scan.cuda_only import cuda_only_reason  # noqa: E402
from torchdoctor.scan.saved_files import cpu_only, path_argument, path_keys  # noqa: E402

MPS = re.compile(r"""["']mps["']|backends\.mps""")
README_CPU = re.compile(r"\b(cpu|mac ?os|apple|m1|m2|mps|osx)\b", re.I)
DEVICE_VARIABLE = re.compile(
    r"\.to\(\s*(?:(?:self|args|opt|cfg|config)\.)?(?:_?device|dev)\b"
    r"|(?:self|args|opt|cfg|config)\.device\b"
)


def python_files(tree: Path) -> dict[str, str]:
    out = {}
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                path = Path(folder, name)
                out[path.relative_to(tree).as_posix()] = path.read_text(errors="replace")
    return out


# What else a project names its classes and functions in: configs (hydra's `_target_`),
# notebooks, docs (a README's usage example), shell scripts.
OTHER_TEXT = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh", ".md", ".rst", ".ipynb")


def other_texts(tree: Path, limit: int = 1 << 20) -> str:
    out = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(folder, name)
            if name.lower().endswith(OTHER_TEXT) and path.is_file() and path.stat().st_size < limit:
                out.append(path.read_text(errors="replace"))
    return "\n".join(out)


def outer_definition(text: str, line: int) -> str | None:
    """The top-level class or function whose body holds `line` (None: module-level code)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if isinstance(node, defs) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return node.name
    return None


def named_elsewhere(name: str, rel: str, files: dict[str, str], others: str) -> bool:
    """Does anything in the project name `name` besides its own definition?"""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for path, text in files.items():
        if len(word.findall(text)) > (1 if path == rel else 0):
            return True
    return bool(word.search(others))


def _enclosing(tree: ast.Module) -> dict[int, ast.AST]:
    """Each node's enclosing function (or the module)."""
    out: dict[int, ast.AST] = {}

    def walk(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            out[id(child)] = scope
            is_func = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            walk(child, child if is_func else scope)

    walk(tree, tree)
    return out


def _keys(rel: str, scope: ast.AST, expr: ast.expr | None) -> set[str]:
    if expr is None:
        return set()
    values = [expr] + (assigned_values(scope, expr.id) if isinstance(expr, ast.Name) else [])
    return {k for v in values for k in path_keys(rel, v)}


def device_saves(files: dict[str, str]) -> set[str]:
    """Keys (saved_files.py) of the files the project torch.saves from data not CPU-only."""
    keys: set[str] = set()
    for rel, text in files.items():
        if "torch.save(" not in text:
            continue
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue
        scopes = _enclosing(module)
        for node in ast.walk(module):
            if (
                isinstance(node, ast.Call)
                and dotted(node.func).endswith("torch.save")
                and node.args
            ):
                scope = scopes.get(id(node), module)
                if not cpu_only(node.args[0], scope):
                    keys |= _keys(rel, scope, path_argument(node, 1, "f"))
    return keys


def load_keys(rel: str, text: str, line: int) -> set[str]:
    module = ast.parse(text)
    scopes = _enclosing(module)
    loads = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and node.lineno == line and dotted(node.func).endswith("load")
    ]
    # the torch.load of the finding, not an outer json.load / np.load on the same line
    loads.sort(key=lambda n: not dotted(n.func).endswith("torch.load"))
    if not loads:
        return set()
    return _keys(rel, scopes.get(id(loads[0]), module), path_argument(loads[0], 0, "f"))


def uses_device_variable(text: str, line: int) -> bool | None:
    """Does the innermost function around `line` use a device variable on another line?"""
    funcs = [
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.lineno <= line <= n.end_lineno
    ]
    if not funcs:
        return None
    inner = min(funcs, key=lambda f: f.end_lineno - f.lineno)
    lines = text.splitlines()[inner.lineno - 1 : inner.end_lineno]
    return bool(
        DEVICE_VARIABLE.search("\n".join(x for i, x in enumerate(lines, inner.lineno) if i != line))
    )


def findings_of_set(n: int, code: Path, corpus_root: Path) -> list[dict]:
    here = sc.set_dir(n)
    corpus = json.loads((here / "corpus.json").read_text())
    labels = sb.read_labels(here / "labels.csv")
    out = []
    with sc.code_first(code):
        for entry in corpus["repos"]:
            tree = sb.tree_of(corpus_root / f"scan_corpus{n}", entry, corpus)
            keep = set(entry["files_in_scope"])
            found = [f for f in sb.scan_repo(tree, entry["repo"], "low", 1) if f.file in keep]
            found = [(f, sb.verdict(f, labels)) for f in found]
            found = [(f, v) for f, v in found if v != "unlabelled"]
            if not found:
                continue
            files = python_files(tree)
            readme = next(
                (p for p in tree.iterdir() if p.is_file() and p.name.lower().startswith("readme")),
                None,
            )
            repo = {
                "falls_back": any(falls_back(t) for t in files.values()),
                "cuda_only": any(cuda_only_reason(t) for t in files.values()),
                "names_mps": any(MPS.search(t) for t in files.values()),
                # ComfyUI loads a custom node pack through this name, on every device it runs on
                "comfy_nodes": any("NODE_CLASS_MAPPINGS" in t for t in files.values()),
                "readme_cpu": bool(
                    readme and README_CPU.search(readme.read_text(errors="replace"))
                ),
            }
            saved = device_saves(files) if any(f.rule == "TD101" for f, _ in found) else set()
            others = other_texts(tree)
            for f, v in found:
                text = files.get(f.file) or (tree / f.file).read_text(errors="replace")
                row = {
                    "repo": f.repo,
                    "rule": f.rule,
                    "confidence": f.confidence,
                    "real": v == "tp",
                }
                row |= repo | {
                    "file_falls_back": falls_back(text),
                    "file_saves": "torch.save(" in text,
                }
                outer = outer_definition(text, f.line)
                row["named_elsewhere"] = (
                    "module level"
                    if outer is None
                    else named_elsewhere(outer, f.file, files, others)
                )
                # is the definition around the line named by another file that falls back?
                fallbacks = {p: t for p, t in files.items() if p != f.file and falls_back(t)}
                row["named_in_fallback"] = (
                    "module level" if outer is None else named_elsewhere(outer, "", fallbacks, "")
                )
                if f.rule == "TD101":
                    row["load_saved_by_project"] = bool(load_keys(f.file, text, f.line) & saved)
                if f.rule in ("TD001", "TD002"):
                    row["function_uses_device"] = uses_device_variable(text, f.line)
                out.append(row)
    return out


def shares(
    rows: list[dict], key: Callable[[dict], object]
) -> dict[object, tuple[float, int, int, int]]:
    """value -> (real repositories, repositories, real findings, findings)."""
    per: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        per[(key(r), r["repo"])][0 if r["real"] else 1] += 1
    out: dict[object, list[float]] = defaultdict(lambda: [0.0, 0, 0, 0])
    for (value, _repo), (real, false) in per.items():
        acc = out[value]
        acc[0] += real / (real + false)
        acc[1] += 1
        acc[2] += real
        acc[3] += real + false
    return {k: (v[0], int(v[1]), int(v[2]), int(v[3])) for k, v in out.items()}


FEATURES = {
    "every finding": lambda r: "all",
    "own confidence": lambda r: r["confidence"],
    "file falls back, saves": lambda r: (r["file_falls_back"], r["file_saves"]),
    "a project file falls back": lambda r: r["falls_back"],
    "a project file runs on CUDA only": lambda r: r["cuda_only"],
    "a project file names MPS": lambda r: r["names_mps"],
    "README names the CPU or a Mac": lambda r: r["readme_cpu"],
    "a ComfyUI custom node pack": lambda r: r["comfy_nodes"],
    "load reads a file the project saves": lambda r: r.get("load_saved_by_project"),
    "... and the file falls back": lambda r: (
        None
        if "load_saved_by_project" not in r
        else (r["load_saved_by_project"], r["file_falls_back"])
    ),
    "function uses a device variable": lambda r: r.get("function_uses_device"),
    "its top-level definition is named in another file that falls back": lambda r: r[
        "named_in_fallback"
    ],
    "... or its own file falls back": lambda r: (
        r["named_in_fallback"] is True or r["file_falls_back"]
    ),
    "its top-level class or function is named elsewhere": lambda r: r["named_elsewhere"],
}


def oracle(rows: list[dict], floor: float = 0.9) -> tuple[int, int]:
    classes: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        saves = r["file_saves"] and r["rule"] == "TD101"
        classes[(r["rule"], r["confidence"], r["file_falls_back"], saves)][
            0 if r["real"] else 1
        ] += 1
    real = false = 0
    for t, f in sorted(classes.values(), key=lambda c: -c[0] / sum(c)):
        if (real + t) / (real + t + false + f) >= floor:
            real, false = real + t, false + f
    return real, false


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="153-200")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--rules", default="TD001,TD002,TD101")
    ap.add_argument("--corpus-root", type=Path, default=Path("/work/research"))
    args = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        code = sc.export(args.commit, Path(tmp))
        for n in sc.span(args.sets):
            rows += findings_of_set(n, code, args.corpus_root)
    print(f"{len(rows)} findings on labelled lines, {len({r['repo'] for r in rows})} repositories")
    for rule in args.rules.split(","):
        mine = [r for r in rows if r["rule"] == rule]
        print(f"\n## {rule}: real share by repository (by finding)")
        for name, key in FEATURES.items():
            cells = [
                f"{value}: {100 * a / b:.0f} % of {b} ({c}/{d})"
                for value, (a, b, c, d) in sorted(shares(mine, key).items(), key=str)
                if value is not None
            ]
            if cells:
                print(f"- {name}: " + "; ".join(cells))
    labels = sum(
        1
        for n in sc.span(args.sets)
        for row in csv.DictReader((sc.set_dir(n) / "labels.csv").read_text("utf-8").splitlines())
        if row["must_flag"] == "yes" and row["severity"] in ("crash", "security")
    )
    real, false = oracle(rows)
    own = [r for r in rows if r["confidence"] != "low"]
    table = [
        r for r in own if not below_bar(r["rule"], r["file_falls_back"], False, r["file_saves"])
    ]
    print(
        f"\noracle over classes at 90 %: {real} true of {real + false} shown; the rules' own "
        f"default output: {sum(r['real'] for r in own)} of {len(own)}; with this checkout's "
        f"table: {sum(r['real'] for r in table)} of {len(table)}; {labels} crash and security labels"
    )


if __name__ == "__main__":
    main()
