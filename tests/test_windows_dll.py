"""`import torch` failing on Windows because a DLL will not load: torch 2.4.0's fbgemm.dll without
libomp140 (pytorch/pytorch#131662) and the Visual C++ runtime missing or too old
(pytorch/pytorch#39734, #32916, nagadomi/nunif#701). Tests are named after those threads."""

from __future__ import annotations

import json

from .conftest import REPO, run_cli

BASE = REPO / "tests" / "facts" / "torch_import_error.json"
FBGEMM = (
    "[WinError 126] The specified module could not be found. Error loading "
    '"C:\\Users\\u\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.'
)


def remedies(torch_version: str, message: str, system: str = "Windows") -> list[dict]:
    facts = json.loads(BASE.read_text())
    facts["platform"].update(system=system, machine="AMD64")
    facts["packages"]["distributions"]["torch"] = {"version": torch_version}
    facts["torch"]["error"] = {"type": "OSError", "message": message, "traceback": ""}
    doc = json.loads(run_cli("check", "--facts", "-", "--json", input=json.dumps(facts)).stdout)
    (found,) = [f for f in doc["findings"] if f["id"] == "torch.install"]
    return found["remedies"]


def test_fbgemm_dll_of_torch_2_4_0_upgrades_to_2_4_1_pytorch_131662():
    (fix,) = remedies("2.4.0+cpu", FBGEMM)
    assert "libomp140" in fix["text"]
    assert "torch==2.4.1 --index-url https://download.pytorch.org/whl/cpu" in fix["commands"][0]
    assert "torch.error.message" in fix["evidence"]


def test_fbgemm_dll_of_another_release_is_the_visual_cpp_runtime():
    (fix,) = remedies("2.5.1", FBGEMM)
    assert "Visual C++ Redistributable" in fix["text"] and "torch==" not in fix["commands"][0]


def test_c10_dll_winerror_126_installs_the_vc_redist_pytorch_39734():
    message = FBGEMM.replace("fbgemm.dll", "c10.dll")
    (fix,) = remedies("2.3.1", message)
    assert fix["commands"][0] == "winget install --id Microsoft.VCRedist.2015+.x64 -e"


def test_winerror_1114_initialising_c10_dll_nunif_701():
    message = (
        "[WinError 1114] A dynamic link library (DLL) initialization routine failed. Error "
        'loading "C:\\nunif\\python\\lib\\site-packages\\torch\\lib\\c10.dll" or one of its '
        "dependencies."
    )
    (fix,) = remedies("2.6.0", message)
    assert "Visual C++ Redistributable" in fix["text"]


def test_the_same_words_on_linux_are_not_a_windows_runtime():
    fixes = remedies("2.4.0", FBGEMM, system="Linux")
    assert not any("VCRedist" in " ".join(f["commands"]) for f in fixes)
