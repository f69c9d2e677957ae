"""PEP 668: on Debian/Ubuntu's system Python, pip fails with "error: externally-managed-environment";
a fix must install into a venv instead. Recorded facts, and a real interpreter layout."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts

from .conftest import run_cli

SYSTEM_PY = "/usr/bin/python3"
MARKER = "/usr/lib/python3.11/EXTERNALLY-MANAGED"


def debian_system(facts: dict, ensurepip: bool = True) -> dict:
    facts["platform"].update(
        executable=SYSTEM_PY,
        prefix="/usr",
        base_prefix="/usr",
        in_venv=False,
        externally_managed=MARKER,
        ensurepip=ensurepip,
    )
    return facts


def remedies(facts: dict, check_id: str = "torch.install"):
    return engine.run_check(by_id()[check_id], read_facts(facts), Context()).remedies


def test_error_externally_managed_environment_torch_missing_installs_into_a_venv(facts):
    fix = remedies(debian_system(facts("torch_missing")))[0]
    assert fix.commands == (
        f"{SYSTEM_PY} -m venv .venv",
        ".venv/bin/python -m pip install 'torch==2.15.*' --index-url "
        "https://download.pytorch.org/whl/cpu",
        "torchdoctor check --python .venv/bin/python --only torch.install",
    )
    assert "externally-managed-environment" in fix.text and "pipx" in fix.text


def test_error_externally_managed_environment_without_python3_venv_installs_it_first(facts):
    fix = remedies(debian_system(facts("torch_missing"), ensurepip=False))[0]
    assert fix.commands[:2] == ("sudo apt install python3.11-venv", f"{SYSTEM_PY} -m venv .venv")


def test_error_externally_managed_environment_never_runs_pip_on_the_system_python(facts):
    # The import-error fix uninstalls, then reinstalls: in a fresh venv only the install is left.
    fixes = remedies(debian_system(facts("torch_import_error")))
    commands = [c for r in fixes for c in r.commands]
    assert not [c for c in commands if c.startswith(f"{SYSTEM_PY} -m pip")], commands
    assert any(c.startswith(".venv/bin/python -m pip install") for c in commands)


def test_pip_fixes_are_unchanged_in_a_venv(facts):
    fix = remedies(facts("torch_missing"))[0]
    assert fix.commands[0].startswith("/work/main/.venv/bin/python3 -m pip install 'torch==")


def externally_managed_layout(tmp_path: Path) -> tuple[Path, Path]:
    """A Python whose stdlib directory holds an EXTERNALLY-MANAGED marker, as Debian ships it:
    this interpreter's stdlib linked into a new home (no site-packages), run with PYTHONHOME."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    home = tmp_path / "system"
    lib = home / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        # Never link the base's own marker: writing ours through the link would change it.
        if entry.name not in ("site-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    marker = lib / "EXTERNALLY-MANAGED"
    marker.write_text("[externally-managed]\nError=use apt or a venv\n")
    real = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    wrapper = home / "python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONHOME={home} exec {real} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, marker


@pytest.mark.skipif(os.name != "posix" or sys.platform == "darwin", reason="Linux stdlib layout")
def test_error_externally_managed_environment_is_detected_on_a_real_interpreter(tmp_path):
    python, marker = externally_managed_layout(tmp_path)
    proc = run_cli("check", "--python", str(python), "--only", "torch.install", "--json")
    doc = json.loads(proc.stdout)
    assert doc["facts"]["platform"]["externally_managed"] == str(marker)
    fix = doc["checks"][0]["remedies"][0]
    assert fix["commands"][-3].endswith(" -m venv .venv")
    assert fix["commands"][-2].startswith(".venv/bin/python -m pip install 'torch==")
    assert fix["commands"][-1] == "torchdoctor check --python .venv/bin/python --only torch.install"


def test_verify_step_checks_the_venv_the_fix_installed_into(facts):
    commands = remedies(debian_system(facts("torch_missing")))[0].commands
    assert commands[-1] == "torchdoctor check --python .venv/bin/python --only torch.install"
