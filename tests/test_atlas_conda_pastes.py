"""What the atlas cases alone do not pin: how a pasted report with conda's feature column and
a loader error line is read (ai4d-iasc/trixie#73, Pointcept/Pointcept#230)."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.check import collect_env

ATLAS = Path(__file__).parent / "atlas"


def test_conda_line_with_cpuonly_feature_keeps_its_channel_trixie_73():
    facts = collect_env.parse((ATLAS / "ai4d-iasc_trixie_73.txt").read_text())
    conda = facts["packages"]["conda"]
    assert conda["pytorch"] == {"version": "1.8.1", "build": "py3.8_cpu_0", "channel": "pytorch"}
    assert conda["cpuonly"]["channel"] == "pytorch"


def test_undefined_symbol_iJIT_NotifyEvent_line_is_the_import_error_pointcept_230():
    facts = collect_env.parse((ATLAS / "Pointcept_Pointcept_230.txt").read_text())
    error = facts["torch"]["error"]
    assert facts["torch"]["status"] == "import_error"
    assert error["type"] == "ImportError"
    assert error["message"].endswith("libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent")


def test_GLIBCXX_not_found_line_is_the_import_error_pytorch_157709():
    facts = collect_env.parse((ATLAS / "pytorch_pytorch_157709.txt").read_text())
    assert "`GLIBCXX_3.4.30' not found" in facts["torch"]["error"]["message"]
    kinds = [e["kind"] for e in facts["report"]["evidence"]]
    assert "symbol-version-missing" in kinds
