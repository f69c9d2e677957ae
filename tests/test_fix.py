"""`torchdoctor fix` end to end, against a local mirror of PyTorch's wheel indexes.

Only PyPI is reachable here, so the tests build the mirror (tests/fake_wheels.py: small wheels
named torch and torchvision with +cpu/+cu128 local versions) and throwaway virtual environments
cloned from one made per session. pip runs with no configuration file (this machine's pip.conf
adds indexes that hold PyPI's own torchvision), except in the test about exactly that.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from . import fake_wheels
from .conftest import REPO, REPORT_SCHEMA, on_a_cpu_machine, run_cli

PIP_ENV = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "NO_COLOR": "1"}
BEFORE = {"torch": "2.13.0+cpu", "torchvision": "0.28.0+cu128"}


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    return {**env, **PIP_ENV, **extra}


def fix(*args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "fix", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or clean_env(),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def freeze(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "freeze", "--all"],
        capture_output=True, text=True, env=clean_env(), check=True,
    )  # fmt: skip
    return out.stdout


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (bytecode caches aside) and the hash of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="session")
def mirrors(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mirrors")
    return {
        "good": fake_wheels.build_mirror(root / "good"),
        # its cpu torchvision fails at import, as a build for another torch does
        "broken": fake_wheels.build_mirror(root / "broken", broken_cpu_vision=True),
        # its cpu torchvision has thousands of files: installing it takes long enough to interrupt
        "slow": fake_wheels.build_mirror(root / "slow", padding=6000),
    }


@pytest.fixture(scope="session")
def template(tmp_path_factory, mirrors) -> Path:
    """torch 2.13.0+cpu with torchvision 0.28.0+cu128: a companion of the wrong variant."""
    venv = tmp_path_factory.mktemp("template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", "--index-url"]
    good = mirrors["good"].as_uri()
    subprocess.run([*pip, f"{good}/cpu", "torch==2.13.0"], check=True, env=clean_env())
    subprocess.run([*pip, f"{good}/cu128", "torchvision==0.28.0"], check=True, env=clean_env())
    return venv


@pytest.fixture
def venv(template, tmp_path) -> Path:
    """A copy of the template (a venv run as ``bin/python -m pip`` does not mind its new place)."""
    clone = tmp_path / "venv"
    shutil.copytree(template, clone, symlinks=True)
    return clone


def report(ran: subprocess.CompletedProcess) -> dict:
    assert ran.stdout.startswith("{"), ran.stdout + ran.stderr
    doc = json.loads(ran.stdout)
    jsonschema.validate(doc, REPORT_SCHEMA)  # the one envelope every command reports in
    return doc


def ids(doc: dict) -> list[str]:
    return [f["id"] for f in doc["findings"]]


# On a GPU machine the venv's CPU torch is a finding too (cuda.available.cpu-build-on-gpu), left
# for a second run, so the fix ends with exit 1 (seen on an H100)
@on_a_cpu_machine
def test_torchvision_built_for_cuda_beside_a_cpu_torch_is_reinstalled_from_the_cpu_index_and_verified(
    venv, mirrors
):
    before = freeze(venv)
    assert "torchvision==0.28.0+cu128" in before
    ran = fix("--python", str(venv), "--yes", "--json", "--index-mirror", mirrors["good"].as_uri())
    doc = report(ran)
    assert ran.returncode == 0, ran.stdout
    assert doc["state"] == "verified" and "fix.verified" in ids(doc)
    (step,) = doc["plan"]["steps"]
    assert step["findings"] == ["torch.install.companion-variant"]
    assert step["changes"][0] | {"source": None} == {
        "name": "torchvision", "before": "0.28.0+cu128", "after": "0.28.0+cpu", "source": None,
    }  # fmt: skip
    assert step["commands"][0][:4] == [str(venv / "bin/python"), "-m", "pip", "install"]
    assert "torchvision==0.28.0+cpu" in freeze(venv)
    # The record beside the environment says where the replaced build came from.
    record = json.loads((venv / ".torchdoctor/fix-undo.json").read_text())
    assert record["distributions"]["torchvision"]["source"]["index_url"].endswith("/cu128")
    undo = fix("--python", str(venv), "--undo", "--yes", "--json")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "fix.restored" in ids(report(undo))
    assert freeze(venv) == before


def test_a_fix_whose_verification_fails_is_rolled_back_byte_for_byte(venv, mirrors):
    before, files = freeze(venv), tree_digest(site_packages(venv))
    ran = fix(
        "--python", str(venv), "--yes", "--json", "--index-mirror", mirrors["broken"].as_uri()
    )
    doc = report(ran)
    assert ran.returncode == 4, ran.stdout
    failed = next(f for f in doc["findings"] if f["id"] == "fix.verify-failed")
    # The mirror's cpu torchvision fails at import: a new failure the fix brought.
    assert "operator torchvision::nms does not exist" in failed["message"]
    assert "fix.restored" in ids(doc)
    assert freeze(venv) == before
    assert tree_digest(site_packages(venv)) == files


def test_ctrl_c_in_the_middle_of_the_install_restores_the_environment(venv, mirrors):
    before, files = freeze(venv), tree_digest(site_packages(venv))
    old_meta = site_packages(venv) / "torchvision-0.28.0+cu128.dist-info"
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "fix", "--python", str(venv), "--yes", "--json",
         "--index-mirror", mirrors["slow"].as_uri()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=clean_env(), cwd=REPO,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while old_meta.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # pip has uninstalled the old build: it is installing the new one now
    new_files = len(list((site_packages(venv) / "torchvision").rglob("*.bin")))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert new_files < 6000, "the install ended before the interrupt: the test proves nothing"
    assert proc.returncode == 130, out + err
    doc = json.loads(out)
    assert {"fix.interrupted", "fix.restored"} <= set(ids(doc))
    assert freeze(venv) == before
    # pip's stash folders (~orchvision, pypa/pip#11849) and the new build's files are gone too.
    assert tree_digest(site_packages(venv)) == files


def test_without_yes_and_without_a_terminal_the_plan_is_shown_and_nothing_changes(venv, mirrors):
    before = freeze(venv)
    ran = fix("--python", str(venv), "--index-mirror", mirrors["good"].as_uri())
    assert ran.returncode == 1
    assert "Plan:" in ran.stdout and "torchvision 0.28.0+cu128 → 0.28.0+cpu" in ran.stdout
    assert "plan only: no terminal to confirm on and no --yes" in ran.stdout
    assert freeze(venv) == before and not (venv / ".torchdoctor").exists()


def test_on_a_terminal_the_plan_is_shown_then_asked_and_no_changes_nothing(venv, mirrors):
    import pty

    before = freeze(venv)
    master, slave = pty.openpty()
    os.write(master, b"n\n")
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "torchdoctor", "fix", "--python", str(venv),
             "--index-mirror", mirrors["good"].as_uri()],
            stdin=slave, capture_output=True, text=True, env=clean_env(), cwd=REPO, timeout=180,
        )  # fmt: skip
    finally:
        os.close(slave)
        os.close(master)
    assert "Apply this plan? [y/N]" in ran.stderr
    assert ran.stdout.index("Plan:") < ran.stdout.index("plan only: declined")
    assert ran.returncode == 1 and freeze(venv) == before


def test_only_an_id_that_names_no_check_is_bad_usage():
    ran = run_cli("fix", "--only", "torch.instal", "--dry-run")
    assert ran.returncode == 2 and "'torch.instal' names no check or finding" in ran.stderr


def test_a_pip_config_extra_index_that_would_bring_another_variant_is_not_applied(
    venv, mirrors, tmp_path
):
    """pip merges a configured extra-index-url with the command's --index-url and takes the
    highest version: here 0.28.0+cu128 again, from the extra index."""
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nextra-index-url = {mirrors['good'].as_uri()}/cu128\n")
    env = clean_env(PIP_CONFIG_FILE=str(conf))
    ran = fix(
        "--python",
        str(venv),
        "--yes",
        "--json",
        "--index-mirror",
        mirrors["good"].as_uri(),
        env=env,
    )
    doc = report(ran)
    assert ran.returncode == 1 and doc["plan"]["steps"] == []
    advice = next(a for a in doc["plan"]["advice"] if a["finding"].endswith("companion-variant"))
    assert "not from" in advice["why"] and "/cu128/" in advice["why"]
    assert "torchvision==0.28.0+cu128" in freeze(venv)


PEP668 = Path("/usr/bin/python3")


def _marked(python: Path) -> bool:
    if not python.exists():
        return False
    out = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig,os;print(os.path.isfile(os.path.join("
         "sysconfig.get_path('stdlib'),'EXTERNALLY-MANAGED')))"],
        capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip() == "True"


@pytest.mark.skipif(not _marked(PEP668), reason="no externally managed (PEP 668) Python here")
def test_externally_managed_python_is_refused_with_the_venv_advice():
    ran = fix("--python", str(PEP668), "--yes", "--json")
    doc = report(ran)
    assert ran.returncode == 1
    refused = next(f for f in doc["findings"] if f["id"] == "fix.refused")
    assert "externally managed (PEP 668" in refused["message"]
    commands = [c for a in doc["plan"]["advice"] for c in a["commands"]]
    assert any(c.endswith("-m venv .venv") for c in commands), commands
    assert doc["applied"] is None and doc["record"] is None


def _read_only_unavailable() -> str | None:
    if os.geteuid() != 0:
        return None  # a non-root user cannot write a folder without write permission
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"no private mount namespace: {probe.stderr[:200]}"


@pytest.mark.skipif(_read_only_unavailable() is not None, reason=str(_read_only_unavailable()))
def test_read_only_site_packages_is_refused_and_left_alone(venv, mirrors):
    before, site = freeze(venv), site_packages(venv)
    args = ["--python", str(venv), "--yes", "--json", "--index-mirror", mirrors["good"].as_uri()]
    if os.geteuid() == 0:  # root writes anywhere a mode allows; a read-only mount stops it
        script = (
            f'mount --bind "{site}" "{site}" && mount -o remount,ro,bind "{site}" && '
            f'exec "{sys.executable}" -m torchdoctor fix "$@"'
        )
        argv = ["unshare", "-m", "sh", "-c", script, "sh", *args]
    else:
        site.chmod(0o555)
        argv = [sys.executable, "-m", "torchdoctor", "fix", *args]
    try:
        ran = subprocess.run(
            argv, capture_output=True, text=True, env=clean_env(), cwd=REPO, timeout=180
        )
    finally:
        site.chmod(0o755)
    doc = report(ran)
    assert ran.returncode == 1
    refused = next(f for f in doc["findings"] if f["id"] == "fix.refused")
    assert str(site) in refused["message"] and "cannot be written" in refused["message"]
    assert freeze(venv) == before and not (venv / ".torchdoctor").exists()
