"""How probe children are started, and what keeps gathering apart from judging.

The probe child is the user's interpreter: its environment may carry PYTHONSAFEPATH=1 (which
keeps a script's own folder off sys.path) and a PYTHONPATH with modules named like ours.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchdoctor.probes import runner
from torchdoctor.probes.runner import child_argv, run_probe

PACKAGE = Path(runner.__file__).resolve().parents[1]
CHILD = PACKAGE / "probes" / "child"


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    return {**env, **extra}


@pytest.mark.parametrize("flags", [(), ("-I",)], ids=["plain", "isolated"])
def test_ckpt_probe_runs_with_PYTHONSAFEPATH_no_module_named_locate(tmp_path, flags):
    """Run by path, ckpt_probe.py died at once with "ModuleNotFoundError: No module named
    'locate'" when the user's environment had PYTHONSAFEPATH=1 (or the interpreter ran -I)."""
    f = tmp_path / "notes.txt"
    f.write_text("not a checkpoint")
    python, *rest = child_argv(sys.executable, "ckpt_probe", str(f))
    run = run_probe([python, *flags, *rest], 30, env=_child_env(PYTHONSAFEPATH="1"))
    assert "ModuleNotFoundError" not in run.stderr_tail
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert run.stages["file"]["format"] == "unknown"


def test_user_modules_named_like_probe_modules_do_not_replace_them(tmp_path):
    """A PYTHONPATH entry holding locate.py, pickle_scan.py and torch_probe.py of the user's own:
    the probe still imports its siblings, and the user's files are never executed."""
    users = tmp_path / "users"
    users.mkdir()
    for name in ("locate", "pickle_scan", "torch_probe", "dist_sizes"):
        (users / f"{name}.py").write_text(f"raise SystemExit('user {name}.py was imported')\n")
    f = tmp_path / "notes.txt"
    f.write_text("not a checkpoint")
    for env in (
        _child_env(PYTHONPATH=str(users)),
        _child_env(PYTHONPATH=str(users), PYTHONSAFEPATH="1"),
    ):
        run = run_probe(child_argv(sys.executable, "ckpt_probe", str(f)), 30, env=env)
        assert "was imported" not in run.stderr_tail
        assert run.status == "ok", (run.message, run.stderr_tail)


@pytest.fixture
def fake_child(tmp_path, monkeypatch):
    """A stand-in probes/child/ package whose module reports what the child sees."""
    pkg = tmp_path / "child"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sibling.py").write_text("NAME = 'sibling'\n")
    (pkg / "show.py").write_text(
        textwrap.dedent(
            """
            import json, sys
            from . import sibling
            print(json.dumps({"path": sys.path, "argv": sys.argv[1:], "sibling": sibling.NAME,
                              "main": __name__}))
            """
        )
    )
    monkeypatch.setattr(runner, "CHILD_DIR", pkg)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return pkg, cwd


@pytest.mark.parametrize(
    "flags, env",
    [((), {}), ((), {"PYTHONSAFEPATH": "1"}), (("-I",), {})],
    ids=["plain", "PYTHONSAFEPATH", "isolated"],
)
def test_child_bootstrap_puts_neither_its_folder_nor_the_cwd_on_sys_path(fake_child, flags, env):
    pkg, cwd = fake_child
    python, *rest = child_argv(sys.executable, "show", "a b", "--x")
    out = subprocess.run(
        [python, *flags, *rest], capture_output=True, text=True, env=_child_env(**env), timeout=30
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["sibling"] == "sibling" and seen["main"] == "__main__"
    assert seen["argv"] == ["a b", "--x"]
    resolved = {os.path.abspath(p or os.curdir) for p in seen["path"]}
    assert str(pkg) not in resolved and str(cwd) not in resolved


def test_import_facts_loads_no_probe_module():
    """Reading and judging facts (facts.py, the engine and its checks) never loads a probe."""
    code = (
        "import sys, torchdoctor.check.facts, torchdoctor.check.engine\n"
        "print([m for m in sys.modules if m.startswith('torchdoctor.probes') "
        "or m == 'torchdoctor.check.gather'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def _is_sys_path_edit(node: ast.AST) -> bool:
    """sys.path.insert/append/extend(...) or sys.path[...] = ..."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        target = node.func.value
        return (
            node.func.attr in ("insert", "append", "extend") and ast.unparse(target) == "sys.path"
        )
    if isinstance(node, ast.Assign):
        return any(ast.unparse(t).startswith("sys.path") for t in node.targets)
    return False


def test_no_module_puts_its_own_folder_on_sys_path():
    """A module that adds the folder it lives in (anything built from __file__) to sys.path."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _is_sys_path_edit(node) and "__file__" in ast.unparse(node):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert offenders == []


def test_the_check_above_catches_an_insert_of_the_scripts_folder():
    src = "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
    assert any(_is_sys_path_edit(n) for n in ast.walk(ast.parse(src)))


# The torch-side audit API that export_probe loads by file location, in the child, beside torch.
CHILD_MAY_IMPORT = {"torchdoctor.export.audit", "torchdoctor.export.checklist"}


def test_child_modules_import_only_the_stdlib_and_each_other_at_load_time():
    """The child runs under any --python, often without torchdoctor or its dependencies: at load
    time its modules import the standard library and their siblings only; torch and the user's
    code are imported inside functions."""
    problems = []
    for path in sorted(CHILD.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                if node.level > 1:  # out of probes/child/: parent-side code
                    problems.append(f"{path.name}:{node.lineno} imports from outside child/")
                continue
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "torchdoctor" and name not in CHILD_MAY_IMPORT:
                    problems.append(f"{path.name}:{node.lineno} imports {name}")
                at_load = node in tree.body
                if at_load and top != "__future__" and top not in sys.stdlib_module_names:
                    problems.append(f"{path.name}:{node.lineno} imports {name} at load time")
    assert problems == []
