"""Windows extension builds need MSVC's cl.exe on PATH: NVlabs/nvdiffrast#81, "Could not locate
a supported Microsoft Visual C++ installation" with Visual Studio 2022 installed under Program
Files but cl.exe off PATH. The probe looked for `c++` and a `nvcc` without `.exe` there, found no
toolkit, and the extensions check skipped the build it should have judged."""

from __future__ import annotations

import json

from torchdoctor.probes import toolchain

from .conftest import REPO, judge_facts

VCVARS = "Microsoft Visual Studio/2022/Community/VC/Auxiliary/Build/vcvars64.bat"


def test_probe_on_windows_looks_for_cl_and_visual_studio_under_both_program_files(tmp_path):
    pf, pf86 = tmp_path / "Program Files", tmp_path / "Program Files (x86)"
    (pf / VCVARS).parent.mkdir(parents=True)
    (pf / VCVARS).write_text("@echo off\n")
    pf86.mkdir()
    cuda = tmp_path / "CUDA" / "v12.1"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "nvcc.exe").write_text("")
    env = {"ProgramFiles": str(pf), "ProgramFiles(x86)": str(pf86), "CUDA_PATH": str(cuda)}
    facts = toolchain.gather(env, which=lambda name: None, system="Windows")
    assert facts["cxx"] == {"name": "cl", "path": None, "ok": False, "vcvars": str(pf / VCVARS)}
    assert facts["nvcc"]["exists"] is True and facts["nvcc"]["path"].endswith("nvcc.exe")


def _extensions(tmp_path, vcvars: str | None) -> list[dict]:
    facts = json.loads((REPO / "tests" / "facts" / "nvcc_mismatch.json").read_text())
    facts["platform"]["system"] = "Windows"
    facts["toolchain"]["cxx"] = {"name": "cl", "path": None, "ok": False, "vcvars": vcvars}
    return [f for f in judge_facts(tmp_path, facts) if f["id"] == "extensions.no-compiler"]


def test_nvdiffrast_81_vs_2022_installed_cl_off_path_gets_its_vcvars64(tmp_path):
    bat = "C:\\Program Files\\" + VCVARS.replace("/", "\\")
    [found] = _extensions(tmp_path, bat)
    assert "cl.exe" in found["message"]
    assert found["remedies"][0]["commands"][0] == f'call "{bat}"'


def test_no_visual_studio_at_all_gets_the_build_tools(tmp_path):
    [found] = _extensions(tmp_path, None)
    assert "Microsoft.VisualStudio.2022.BuildTools" in found["remedies"][0]["commands"][0]
    assert "Workload.VCTools" in found["remedies"][0]["commands"][0]
