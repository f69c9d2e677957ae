"""End to end, as a user runs it: a real subprocess, real exit codes, real JSON."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from .conftest import FACTS_DIR, NO_GPU, needs_torch, on_a_cpu_machine, run_cli

SCHEMA = json.loads(
    resources.files("torchdoctor").joinpath("schema/report.schema.json").read_text()
)


def valid_report(stdout: str) -> dict:
    doc = json.loads(stdout)  # stdout holds exactly one JSON document
    jsonschema.validate(doc, SCHEMA)
    return doc


def no_traceback(proc) -> None:
    """No Python traceback on the terminal (a JSON report may quote one as evidence)."""
    assert "Traceback (most recent call last)" not in proc.stderr
    if not proc.stdout.lstrip().startswith("{"):
        assert "Traceback (most recent call last)" not in proc.stdout


@needs_torch
@on_a_cpu_machine
def test_check_passes_on_this_cpu_machine():
    proc = run_cli("check", "--json", "--no-smoke")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stdout
    doc = valid_report(proc.stdout)
    assert doc["status"] in ("pass", "warn")
    ids = {c["id"]: c for c in doc["checks"]}
    assert ids["torch.install"]["status"] == "pass"
    assert ids["cuda.available"]["status"] == "skip"


@needs_torch
def test_expect_cuda_fails_clearly_on_this_cpu_machine():
    proc = run_cli("check", "--expect", "cuda", "--no-smoke", env=NO_GPU)
    no_traceback(proc)
    assert proc.returncode == 1
    assert "✗ cuda.available" in proc.stdout
    assert "fix:" in proc.stdout


@pytest.mark.parametrize("name", sorted(p.stem for p in FACTS_DIR.glob("*.json")))
@pytest.mark.parametrize("fmt", ["json", "text", "markdown", "junit"])
def test_every_fixture_renders_in_every_format(name, fmt):
    proc = run_cli("check", "--facts", str(FACTS_DIR / f"{name}.json"), "--format", fmt)
    no_traceback(proc)
    assert proc.returncode in (0, 1)
    if fmt == "json":
        doc = valid_report(proc.stdout)
        assert proc.returncode == (1 if doc["status"] == "fail" else 0)
    elif fmt == "junit":
        root = ET.fromstring(proc.stdout.split("?>", 1)[1])
        assert len(root.find("testsuite").findall("testcase")) >= 8
    elif fmt == "markdown":
        assert "| check" in proc.stdout.replace("|    | check", "| check") or "check" in proc.stdout


def test_json_shape_does_not_change_with_verbose():
    f = str(FACTS_DIR / "driver_too_old.json")
    plain = json.loads(run_cli("check", "--facts", f, "--json").stdout)
    verbose = json.loads(run_cli("check", "--facts", f, "--json", "-v").stdout)
    for doc in (plain, verbose):
        for c in doc["checks"]:
            c.pop("duration_s")  # timing differs run to run; everything else must not
    assert plain == verbose


def test_fail_on_warn_lowers_the_threshold(tmp_path):
    facts = json.loads((FACTS_DIR / "h100_healthy.json").read_text())
    facts["host"]["cgroup"]["cpu_quota"] = 1.0
    facts["torch"]["build"]["num_threads"] = 8
    p = tmp_path / "f.json"
    p.write_text(json.dumps(facts))
    assert run_cli("check", "--facts", str(p)).returncode == 0
    assert run_cli("check", "--facts", str(p), "--fail-on", "warn").returncode == 1


def test_only_and_skip_select_checks():
    f = str(FACTS_DIR / "cpu_linux.json")
    doc = json.loads(run_cli("check", "--facts", f, "--json", "--only", "host,platform").stdout)
    assert [c["id"] for c in doc["checks"]] == ["platform", "host"]
    doc = json.loads(run_cli("check", "--facts", f, "--json", "--skip", "host").stdout)
    assert "host" not in [c["id"] for c in doc["checks"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--only", "nope"], "valid ids: platform"),
        (["check", "--expect", "tpu"], "'tpu' is not one of"),
        (["check", "--facts", "/nonexistent.json"], "cannot read"),
        (["check", "--output", "/nonexistent/dir/r.txt"], "does not exist"),
        (["check", "--python", "/nonexistent/python"], "does not exist"),
        (["check", "--timeout", "0"], "--timeout"),
        (["check", "--json", "--format", "junit"], "conflicts"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_usage_exits_2_with_a_message(args, message):
    proc = run_cli(*args)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_garbage_facts_file_is_usage_error(tmp_path):
    for content in ("not json", "[1, 2]", '{"facts_version": 99}'):
        p = tmp_path / "f.json"
        p.write_text(content)
        proc = run_cli("check", "--facts", str(p))
        no_traceback(proc)
        assert proc.returncode == 2


def test_output_file_and_dump_facts_round_trip(tmp_path):
    out, dump = tmp_path / "r.md", tmp_path / "facts.json"
    src = str(FACTS_DIR / "gpu_too_old.json")
    proc = run_cli(
        "check", "--facts", src, "--format", "markdown", "-o", str(out), "--dump-facts", str(dump)
    )
    assert proc.returncode == 1
    assert out.read_text() == proc.stdout
    again = run_cli("check", "--facts", str(dump), "--json")
    assert json.loads(again.stdout)["status"] == "fail"


def test_redact_removes_uuids_serials_and_home(tmp_path):
    facts = json.loads((FACTS_DIR / "h100_healthy.json").read_text())
    home = str(Path.home())
    facts["platform"]["executable"] = f"{home}/venv/bin/python"
    p = tmp_path / "f.json"
    p.write_text(json.dumps(facts))
    plain = run_cli("check", "--facts", str(p), "--json").stdout
    assert "GPU-1a2b3c4d" in plain and "1653220100000" in plain
    red = run_cli("check", "--facts", str(p), "--json", "--redact").stdout
    for secret in ("GPU-1a2b3c4d", "1653220100000", "1a2b3c4d-0000", f"{home}/venv"):
        assert secret not in red
    valid_report(red)


def test_list_checks_and_version_do_not_import_torch():
    code = (
        "import sys; from torchdoctor.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('NO_TORCH_OK')"
    )
    import subprocess

    for args in (["--version"], ["list-checks"], ["list-checks", "--json"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert "NO_TORCH_OK" in proc.stdout, proc.stderr
    ids = json.loads(run_cli("list-checks", "--json").stdout)
    assert {"platform", "torch.install", "cuda.driver", "host"} <= {r["id"] for r in ids}


def _fake_python(tmp_path: Path, body: str) -> str:
    p = tmp_path / "python"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


@pytest.mark.skipif(os.name != "posix", reason="stand-in interpreters are shell scripts")
def test_hanging_probe_is_killed_within_the_deadline(tmp_path):
    fake = _fake_python(tmp_path, 'echo \'{"event": "begin", "stage": "import"}\'; exec sleep 300')
    t0 = time.monotonic()
    proc = run_cli("check", "--python", fake, "--timeout", "2", "--json")
    assert time.monotonic() - t0 < 30
    no_traceback(proc)
    assert proc.returncode == 1
    doc = valid_report(proc.stdout)
    install = next(c for c in doc["checks"] if c["id"] == "torch.install")
    assert install["status"] == "error"
    assert "import" in install["summary"]


@pytest.mark.skipif(os.name != "posix", reason="stand-in interpreters are shell scripts")
def test_crashing_probe_is_an_error_finding(tmp_path):
    fake = _fake_python(tmp_path, 'echo \'{"event": "begin", "stage": "import"}\'; kill -SEGV $$')
    proc = run_cli("check", "--python", fake, "--json")
    no_traceback(proc)
    doc = valid_report(proc.stdout)
    install = next(c for c in doc["checks"] if c["id"] == "torch.install")
    assert install["status"] == "error" and "SIGSEGV" in install["summary"]


def test_interpreter_without_torch(tmp_path):
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    py = tmp_path / "v" / "bin" / "python"
    proc = run_cli("check", "--python", str(py), "--json", "--no-smoke")
    no_traceback(proc)
    assert proc.returncode == 1
    doc = valid_report(proc.stdout)
    install = next(c for c in doc["checks"] if c["id"] == "torch.install")
    assert install["status"] == "fail"
    assert "not installed" in install["summary"]
    assert install["remedies"][0]["commands"][0].startswith(str(py))


def test_internal_error_is_one_line_exit_3(tmp_path):
    code = (
        "import sys, torchdoctor.check.engine as e\n"
        "def boom(*a, **k): raise RuntimeError('simulated bug')\n"
        "e.diagnose = boom\n"
        "from torchdoctor.cli import main\nmain(sys.argv[1:])"
    )
    import subprocess

    args = ["check", "--facts", str(FACTS_DIR / "cpu_linux.json")]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert proc.returncode == 3
    no_traceback(proc)
    assert "internal error" in proc.stderr and "-v" in proc.stderr


@pytest.mark.skipif(os.name != "posix", reason="signals and stand-in shell scripts")
def test_sigterm_on_torchdoctor_kills_its_probe(tmp_path):
    import signal
    import subprocess

    pidfile = tmp_path / "pid"
    fake = _fake_python(
        tmp_path,
        f'echo $$ > {pidfile}; echo \'{{"event": "begin", "stage": "import"}}\'; exec sleep 300',
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--python", fake, "--timeout", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    probe_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert b"Traceback" not in err
    state = Path(f"/proc/{probe_pid}/stat")

    def running() -> bool:
        try:
            return state.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 10  # SIGKILL is sent at exit; reaping can lag on a busy machine
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running()
