"""A Windows XPU wheel whose c10_xpu.dll cannot load: pytorch/pytorch#138986, "OSError: [WinError
126] ... Error loading ...\\torch\\lib\\c10_xpu.dll or one of its dependencies" on an early XPU
nightly that did not bring the oneAPI (SYCL) runtime DLLs."""

from __future__ import annotations

import json

from .conftest import REPO, judge_facts

SITE = "C:\\Users\\u\\venv\\Lib\\site-packages"
MESSAGE = (
    f'[WinError 126] The specified module could not be found. Error loading "{SITE}\\torch\\lib'
    '\\c10_xpu.dll" or one of its dependencies.'
)


def _import_error(tmp_path, version: str, message: str = MESSAGE) -> dict:
    facts = json.loads((REPO / "tests" / "facts" / "cpu_linux.json").read_text())
    facts["platform"].update(system="Windows", machine="AMD64", python_version="3.11.9")
    facts["torch"] = {"status": "import_error", "error": {"type": "OSError", "message": message}}
    facts["packages"]["distributions"]["torch"]["version"] = version
    facts["packages"]["torch_distributions"][0]["version"] = version
    [found] = [f for f in judge_facts(tmp_path, facts) if f["id"] == "torch.install"]
    return found


def test_pytorch_138986_windows_xpu_nightly_c10_xpu_dll_gets_the_release_and_setvars(tmp_path):
    found = _import_error(tmp_path, "2.6.0.dev20241022+xpu")
    first, second = found["remedies"][:2]
    assert "--index-url https://download.pytorch.org/whl/xpu" in first["commands"][0]
    assert "torch==2.6" in first["commands"][0]
    assert second["commands"][0].startswith(
        'call "C:\\Program Files (x86)\\Intel\\oneAPI\\setvars.bat"'
    )
    assert "VCRedist" not in " ".join(c for r in found["remedies"] for c in r["commands"])


def test_another_windows_dll_failure_still_gets_the_vc_runtime(tmp_path):
    message = MESSAGE.replace("c10_xpu.dll", "torch_cpu.dll")
    found = _import_error(tmp_path, "2.5.1+cpu", message)
    commands = " ".join(c for r in found["remedies"] for c in r["commands"])
    assert "VCRedist" in commands and "setvars" not in commands
