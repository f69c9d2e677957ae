"""A torch.py or torch/ that hides the installed torch: found, named, and never fooling the probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.check.checks import shadowing
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import load_facts as typed
from torchdoctor.probes.child.locate import (
    TORCH_STDLIB,
    companion_shadows,
    find_torch,
    stdlib_shadows,
)
from torchdoctor.report.result import Status

from .conftest import needs_torch

ONLY = "torch.install,torch.shadowing"


def installed_torch(site: Path) -> Path:
    """What pip leaves: the package and its metadata beside it."""
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("__version__ = '2.13.0'\n")
    (site / "torch-2.13.0.dist-info").mkdir()
    return site / "torch" / "__init__.py"


def test_torch_py_in_the_script_directory_shadows_the_installed_torch(tmp_path):
    real = installed_torch(tmp_path / "site")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "torch.py").write_text("x = 1\n")
    found = find_torch([str(tmp_path / "site")], str(tmp_path / "proj"))
    assert found["torch"]["origin"] == str(real)
    assert found["shadows"] == [
        {"path": str(tmp_path / "proj" / "torch.py"), "kind": "module", "via": "cwd"}
    ]


def test_torch_package_on_pythonpath_ahead_of_site_packages_is_a_shadow(tmp_path):
    installed_torch(tmp_path / "site")
    (tmp_path / "src" / "torch").mkdir(parents=True)
    (tmp_path / "src" / "torch" / "__init__.py").write_text("")
    found = find_torch([str(tmp_path / "src"), str(tmp_path / "site")])
    assert found["shadows"] == [
        {"path": str(tmp_path / "src" / "torch"), "kind": "package", "via": "sys.path"}
    ]


def test_folder_named_torch_hides_nothing_when_torch_is_installed(tmp_path):
    # PEP 420: a folder without __init__.py loses to a regular package later on the path.
    installed_torch(tmp_path / "site")
    (tmp_path / "proj" / "torch").mkdir(parents=True)
    assert find_torch([str(tmp_path / "site")], str(tmp_path / "proj"))["shadows"] == []
    alone = find_torch([], str(tmp_path / "proj"))
    assert alone["torch"] is None
    assert alone["shadows"][0]["kind"] == "namespace"


def test_pytorch_source_checkout_built_in_place_is_torch_not_a_shadow(tmp_path):
    (tmp_path / "pytorch" / "torch").mkdir(parents=True)
    (tmp_path / "pytorch" / "torch" / "__init__.py").write_text("")
    (tmp_path / "pytorch" / "torch" / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    found = find_torch([], str(tmp_path / "pytorch"))
    assert found["torch"]["entry"] == str(tmp_path / "pytorch")
    assert found["shadows"] == []


def test_shadowing_check_names_the_file_and_the_rename():
    facts = {
        "torch": {"status": "ok"},
        "platform": {
            "python_version": "3.12.1",
            "torch_shadows": [{"path": "/home/u/proj/torch.py", "kind": "module", "via": "cwd"}],
        },
    }
    v = shadowing.check(typed(facts), Context())
    assert v.status == Status.FAIL
    assert "/home/u/proj/torch.py in the current directory hides torch" in v.summary
    assert v.remedies[0].commands == ("mv /home/u/proj/torch.py /home/u/proj/torch_local.py",)
    assert (
        shadowing.check(
            typed({"platform": {"python_version": "3.12.1", "torch_shadows": []}}), Context()
        ).status
        == Status.PASS
    )
    assert (
        shadowing.check(typed({"platform": {"python_version": "3.12.1"}}), Context()).status
        == Status.SKIP
    )


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a POSIX path list")
def test_torch_py_in_cwd_on_pythonpath_is_reported_and_does_not_fool_the_probe(tmp_path):
    """Reported: with a torch.py in the project and PYTHONPATH=., the probe imported the
    project's file and torchdoctor said `import torch` failed."""
    (tmp_path / "torch.py").write_text("raise SystemExit('the project torch.py was imported')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-smoke", "--json", "--only", ONLY],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": "."},
    )
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["torch.install"]["status"] == "pass", checks["torch.install"]
    shadow = checks["torch.shadowing"]
    assert shadow["status"] == "fail"
    assert str(tmp_path / "torch.py") in shadow["summary"]
    assert shadow["remedies"][0]["commands"][0] == (
        f"mv {tmp_path / 'torch.py'} {tmp_path / 'torch_local.py'}"
    )
    # The fix ends with the command that verifies it.
    assert shadow["remedies"][0]["commands"][-1].endswith("--only torch.shadowing")


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a POSIX path list")
def test_inspect_with_torch_py_on_pythonpath_loads_with_the_installed_torch(tmp_path):
    import torch

    torch.save({"w": torch.zeros(2)}, tmp_path / "model.pt")
    (tmp_path / "torch.py").write_text("raise SystemExit('the project torch.py was imported')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "inspect", "model.pt", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": "."},
    )
    assert "the project torch.py was imported" not in proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_pytorch_14014_script_named_dis_py_hides_the_stdlib_module_torch_imports(tmp_path):
    """pytorch/pytorch#14014: "module 'dis' has no attribute 'COMPILER_FLAG_NAMES'" during
    `import torch`, from a script named dis.py; a package named like one counts too, and a file
    named like a module torch does not import (test.py) is nobody's business."""
    (tmp_path / "dis.py").write_text("print('mine')\n")
    (tmp_path / "logging").mkdir()
    (tmp_path / "logging" / "__init__.py").write_text("")
    (tmp_path / "test.py").write_text("")
    (tmp_path / "random").mkdir()  # no __init__.py: a namespace folder loses to the stdlib's
    found = stdlib_shadows(str(tmp_path))
    assert found == [
        {"path": str(tmp_path / "dis.py"), "kind": "stdlib", "via": "cwd"},
        {"path": str(tmp_path / "logging"), "kind": "stdlib", "via": "cwd"},
    ]


def test_stdlib_names_torch_imports_are_standard_library_modules():
    assert set(TORCH_STDLIB) <= set(sys.stdlib_module_names)


def _stdlib_facts(status: str = "ok", error: str | None = None) -> dict:
    facts = json.loads((Path(__file__).parent / "facts" / "cpu_linux.json").read_text())
    facts["platform"]["torch_shadows"] = [
        {"path": "/home/u/proj/dis.py", "kind": "stdlib", "via": "cwd"}
    ]
    if error:
        facts["torch"] = {"status": status, "error": {"type": "AttributeError", "message": error}}
    return facts


def test_stdlib_shadow_is_a_warning_and_an_error_once_import_torch_failed_on_it():
    warn = shadowing.check(typed(_stdlib_facts()), Context())
    assert warn.status == Status.WARN and "dis" in warn.summary
    message = "module 'dis' has no attribute 'COMPILER_FLAG_NAMES'"
    fail = shadowing.check(typed(_stdlib_facts("import_error", message)), Context())
    assert fail.status == Status.FAIL
    [problem] = fail.problems
    assert problem.code == "stdlib"
    assert problem.remedies[0].commands == ("mv /home/u/proj/dis.py /home/u/proj/dis_local.py",)


def test_python_m_torchdoctor_beside_a_dis_py_runs_instead_of_a_traceback(tmp_path):
    """The same failure would hit torchdoctor itself: `python -m` puts the working directory
    first on sys.path, and click imports inspect, which imports dis."""
    (tmp_path / "dis.py").write_text("raise SystemExit('the user dis.py was imported')\n")
    out = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-smoke", "--json", "--only", ONLY],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "Traceback" not in out.stderr and "user dis.py" not in out.stderr, out.stderr
    ids = [f["id"] for f in json.loads(out.stdout)["findings"]]
    assert "torch.shadowing.stdlib" in ids


def test_pytorch_vision_2228_torchvision_checkout_in_cwd_hides_the_installed_torchvision(tmp_path):
    """Run from a torchvision source checkout: `import torchvision` takes the checkout, whose
    ops were never built ("object has no attribute nms" from /private/tmp/vision)."""
    site = tmp_path / "site"
    (site / "torchvision").mkdir(parents=True)
    (site / "torchvision" / "__init__.py").write_text("")
    (site / "torchvision-0.5.0.dist-info").mkdir()
    checkout = tmp_path / "vision"
    (checkout / "torchvision").mkdir(parents=True)
    (checkout / "torchvision" / "__init__.py").write_text("")
    found = companion_shadows([str(site)], str(checkout))
    assert found == [
        {
            "path": str(checkout / "torchvision"),
            "kind": "package",
            "via": "cwd",
            "module": "torchvision",
        }
    ]
    # Alone (nothing installed elsewhere), the checkout is the install: nothing hidden.
    assert companion_shadows([], str(checkout)) == []


def test_companion_checkout_finding_sends_the_user_out_of_the_checkout():
    facts = json.loads((Path(__file__).parent / "facts" / "cpu_linux.json").read_text())
    facts["platform"]["torch_shadows"] = [
        {
            "path": "/tmp/vision/torchvision",
            "kind": "package",
            "via": "cwd",
            "module": "torchvision",
        }
    ]
    result = shadowing.check(typed(facts), Context())
    [problem] = result.problems
    assert problem.code == "companion" and result.status == Status.WARN
    assert "outside /tmp/vision" in problem.remedies[0].text
    assert problem.remedies[0].commands == ()
