"""Which Python is examined: --python in every form, and discovery when torchdoctor's own has no
torch (installed with pipx, or in a venv of its own). Real venvs, real children."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from torchdoctor.check import interpreter
from torchdoctor.check.record import Facts, read_facts
from torchdoctor.report.render import RENDERERS
from torchdoctor.report.render.common import examined

from .conftest import REPO, needs_torch, run_cli

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX venv layout (bin/python)")


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(path)
    return path / "bin" / "python"


def tool_env(tmp_path: Path) -> Path:
    """torchdoctor in an environment of its own without torch, as pipx installs it: a venv whose
    .pth holds the source tree and torchdoctor's dependencies (not torch)."""
    py = make_venv(tmp_path / "tool")
    deps = tmp_path / "deps"
    deps.mkdir()
    for name in ("click", "tabulate", "psutil", "pynvml"):
        src = Path(importlib.import_module(name).__file__)
        src = src.parent if src.name == "__init__.py" else src
        (deps / src.name).symlink_to(src)
    site = next((tmp_path / "tool" / "lib").glob("python3*/site-packages"))
    (site / "torchdoctor-src.pth").write_text(f"{REPO}\n{deps}\n")
    (tmp_path / "tool" / "pipx_metadata.json").write_text("{}")
    return py


def run_tool(py: Path, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    return subprocess.run(
        [str(py), "-m", "torchdoctor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "NO_COLOR": "1", **env},
        cwd=cwd,
    )


@posix_only
def test_python_option_takes_an_interpreter_a_venv_dir_a_conda_dir_or_a_command(
    tmp_path, monkeypatch
):
    py = make_venv(tmp_path / "v")
    assert interpreter.resolve(str(py)) == str(py)
    assert interpreter.resolve(str(tmp_path / "v")) == str(py)  # not the base it links to
    conda = tmp_path / "conda"
    (conda / "conda-meta").mkdir(parents=True)
    (conda / "bin").mkdir()
    (conda / "bin" / "python").symlink_to(sys.executable)
    assert interpreter.resolve(str(conda)) == str(conda / "bin" / "python")
    windows = tmp_path / "winvenv" / "Scripts"
    windows.mkdir(parents=True)
    (windows / "python.exe").write_bytes(b"MZ\x90\x00")
    (windows / "python.exe").chmod(0o755)
    assert interpreter.resolve(str(tmp_path / "winvenv")) == str(windows / "python.exe")
    monkeypatch.setenv("PATH", str(py.parent))
    assert interpreter.resolve("python") == str(py)


def test_python_option_resolves_a_conda_dir_end_to_end(tmp_path):
    conda = tmp_path / "conda"
    (conda / "bin").mkdir(parents=True)
    (conda / "bin" / "python").symlink_to(sys.executable)
    proc = run_cli("check", "--python", str(conda), "--only", "platform", "--json", "--no-smoke")
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)["facts"]
    assert facts["interpreter"] == {
        "python": str(conda / "bin" / "python"),
        "source": "--python",
        "reason": "named with --python",
        "own": sys.executable,
        "candidates": [],
        "note": "",
    }


def _not_python_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    script = tmp_path / "run-me"
    script.write_text("echo hello\n")
    script.chmod(0o755)
    (tmp_path / "empty-env").mkdir()
    return {
        "text file": (str(text), "not an executable program"),
        "executable text without #!": (str(script), "not a Python interpreter"),
        "directory with no python": (str(tmp_path / "empty-env"), "without a Python interpreter"),
        "command not on PATH": ("python-does-not-exist-9", "no such file, directory or command"),
        "a program that is not Python": (shutil.which("true") or "/bin/true", "is it a Python"),
    }


@posix_only
@pytest.mark.parametrize(
    "case",
    [
        "text file",
        "executable text without #!",
        "directory with no python",
        "command not on PATH",
        "a program that is not Python",
    ],
)
def test_python_option_that_is_not_an_interpreter_is_exit_2_in_one_line(tmp_path, case):
    value, message = _not_python_cases(tmp_path)[case]
    proc = run_cli("check", "--python", value, "--no-smoke", "--only", "platform")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--python" in errors[0] and message in errors[0], proc.stderr


@posix_only
@needs_torch
@pytest.mark.slow
def test_pipx_installed_torchdoctor_examines_the_activated_venv_that_has_torch(tmp_path):
    """Reported: run from a project's activated venv, a pipx torchdoctor said "torch is not
    installed" about its own interpreter and never mentioned --python."""
    tool = tool_env(tmp_path)
    project = Path(sys.prefix)  # this test's environment has torch
    env = {"VIRTUAL_ENV": str(project), "PATH": f"{project / 'bin'}:{os.environ['PATH']}"}
    proc = run_tool(tool, "check", "--no-smoke", "--json", env=env, cwd=tmp_path)
    doc = json.loads(proc.stdout)
    chosen = doc["facts"]["interpreter"]
    assert chosen["source"] == "VIRTUAL_ENV"
    assert chosen["python"] == str(project / "bin" / "python")
    assert chosen["own"] == str(tool)
    assert chosen["candidates"][0]["torch"].endswith("__init__.py")
    install = next(c for c in doc["checks"] if c["id"] == "torch.install")
    assert install["status"] == "pass", install
    for fmt in ("text", "markdown"):
        header = RENDERERS[fmt](doc, False, False).split("\n\n")[:2]
        assert f"Python examined: {project / 'bin' / 'python'} (VIRTUAL_ENV)" in "\n".join(header)


@posix_only
@pytest.mark.parametrize("source", ["VIRTUAL_ENV", "python3 on PATH"])
def test_no_python_with_torch_names_the_candidates_and_the_python_option(tmp_path, source):
    """Nothing has torch: examine where it would be installed (the activated venv, else PATH's
    python3: never the pipx environment), list where torchdoctor looked, and say --python."""
    tool = tool_env(tmp_path)
    project_py = make_venv(tmp_path / "project")  # without torch
    env = {"PATH": str(project_py.parent)}
    if source == "VIRTUAL_ENV":
        env["VIRTUAL_ENV"] = str(tmp_path / "project")
    else:
        project_py = project_py.parent / "python3"
    proc = run_tool(tool, "check", "--no-smoke", "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["facts"]["interpreter"]["python"] == str(project_py)  # where torch would go
    assert [c["source"] for c in doc["facts"]["interpreter"]["candidates"]] == [source]
    install = next(c for c in doc["checks"] if c["id"] == "torch.install")
    assert install["summary"] == f"torch is not installed for {project_py}"
    assert install["remedies"][0]["commands"][0].startswith(f"{project_py} -m pip install")
    elsewhere = install["remedies"][1]
    assert str(tool) in elsewhere["text"] and str(project_py) in elsewhere["text"]
    assert elsewhere["commands"] == ["torchdoctor check --python /path/to/env"]
    text = run_tool(tool, "check", "--no-smoke", env=env, cwd=tmp_path).stdout
    assert text.splitlines()[1].startswith(f"Python examined: {project_py} ({source})")


@posix_only
def test_own_python_with_torch_is_examined_and_an_activated_other_venv_is_named(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(interpreter, "ask", lambda *a, **k: pytest.fail("asked a candidate"))
    monkeypatch.setattr(interpreter.locate, "find_torch", lambda *a: {"torch": {"origin": "x"}})
    choice = interpreter.choose(None, {"PATH": ""})
    assert (choice.python, choice.source, choice.note) == (sys.executable, "self", "")
    make_venv(tmp_path / "project")
    choice = interpreter.choose(None, {"VIRTUAL_ENV": str(tmp_path / "project"), "PATH": ""})
    assert (choice.python, choice.source) == (sys.executable, "self")
    assert f"--python {tmp_path / 'project'}" in choice.note
    doc = {"facts": {"interpreter": choice.to_facts()}}
    assert examined(doc) == f"Python examined: {sys.executable}: {choice.note}"


def test_only_a_program_that_never_spoke_the_probe_protocol_is_refused():
    def facts(torch: dict, probe: dict) -> Facts:
        return read_facts({"platform": {}, "torch": torch, "probe": {"torch": probe}})

    ls = facts({}, {"status": "failed", "returncode": 2, "stderr_tail": "ls: invalid option"})
    assert "exit code 2: ls: invalid option" in interpreter.not_a_python(ls)
    # Stand-ins that report a missing torch, hang or crash are findings, not bad usage.
    assert interpreter.not_a_python(facts({"status": "missing"}, {"status": "ok"})) is None
    assert interpreter.not_a_python(facts({}, {"status": "timeout"})) is None
    assert interpreter.not_a_python(facts({}, {"status": "crashed", "signal": "SIGSEGV"})) is None
    began = {"status": "failed", "unfinished_stage": "import"}
    assert interpreter.not_a_python(facts({}, began)) is None


def test_choosing_a_python_never_imports_torch_here(tmp_path):
    code = (
        "import sys\nfrom torchdoctor.check import interpreter\n"
        f"c = interpreter.choose(None, {{'VIRTUAL_ENV': {str(tmp_path)!r}, 'PATH': ''}})\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\nprint(c.source)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "self"
