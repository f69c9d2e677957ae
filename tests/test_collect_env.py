"""Pasted `python -m torch.utils.collect_env` reports, diagnosed like a probe's facts.

Fixtures in tests/collect_env/: `*_real.txt` were produced by collect_env on this machine; the
others were written for this suite from collect_env's source of each era (labels, placeholders,
Yes/No vs True/False, the CPU block, [pip3]/[conda] lines), none copied from a public report.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from torchdoctor.check import collect_env, engine
from torchdoctor.check.checks.common import Context
from torchdoctor.check.facts import load
from torchdoctor.check.record import read_facts
from torchdoctor.report.result import Status

from .conftest import REPO, run_cli

DIR = Path(__file__).parent / "collect_env"
FIXTURES = sorted(p.name for p in DIR.iterdir() if p.suffix in (".txt", ".md"))


def judge(name: str, expect: str = "auto") -> dict:
    report = engine.diagnose(load(str(DIR / name)), Context(expect=expect), engine.select())
    return {c.id: c for c in report.checks}


def commands(result) -> list[str]:
    """The fix commands, without the `torchdoctor check --only ...` that ends each fix."""
    out = [cmd for r in result.remedies for cmd in r.commands]
    verify = [c for c in out if c.startswith("torchdoctor check")]
    assert all(
        r.commands[-1].startswith("torchdoctor check") for r in result.remedies if r.commands
    )
    return [c for c in out if c not in verify]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_is_read_as_a_report_and_never_errors(name):
    text = (DIR / name).read_text(encoding="utf-8")
    facts = load(str(DIR / name)).raw
    assert facts["collected"]["source"] == "collect_env"
    stated = (collect_env.split_fields(text) or {}).get("torch")
    if stated and collect_env.value({"torch": stated}, "torch"):
        assert facts["torch"]["version"] == stated.split()[0]
    checks = judge(name)
    assert not [c.id for c in checks.values() if c.status == Status.ERROR]
    # Nothing the report cannot carry is judged: the smoke test never runs, host facts are absent.
    for cid in ("smoke.compute", "host", "container", "env", "torch.libs", "extensions"):
        assert checks[cid].status == Status.SKIP
        assert checks[cid].summary.startswith("not in the report")


def test_real_collect_env_of_torch_2_13_cpu_on_this_machine():
    facts = load(str(DIR / "linux_torch2.13_cpu_real.txt")).raw
    assert facts["torch"]["build"] == {"variant": "cpu", "cuda": None, "hip": None, "debug": False}
    assert facts["platform"]["libc"] == "glibc 2.36"
    assert facts["platform"]["system"] == "Linux" and facts["platform"]["machine"] == "x86_64"
    assert "avx2" in facts["host"]["cpu"]["flags"]
    # A CPU build's collect_env never asks nvidia-smi ("No CUDA"): the GPUs are not in the report.
    assert "nvml" not in facts and "nvml" not in facts["collected"]["carries"]
    checks = judge("linux_torch2.13_cpu_real.txt")
    assert checks["torch.build"].status == Status.PASS
    assert checks["cuda.available"].status == Status.SKIP


def test_cu128_wheel_on_driver_470_fails_cuda_driver_with_the_smallest_fixes():
    checks = judge("linux_torch2.7_cu128_driver470.txt")
    driver = checks["cuda.driver"]
    assert driver.status == Status.FAIL
    assert "470.256.02 is too old for the wheel's CUDA 12.8 (needs ≥ 570.26)" in driver.summary
    cmds = commands(driver)
    # Keep the driver: the same torch release from an index whose CUDA the driver runs.
    assert any(
        c.startswith("python -m pip install --force-reinstall torch==2.7.1 torchvision==0.22.1")
        and c.endswith("--index-url https://download.pytorch.org/whl/cu118")
        for c in cmds
    ), cmds
    assert checks["cuda.available"].details["reason"] == "driver_too_old"


def test_torch_not_compiled_with_cuda_enabled_cpu_wheel_on_a_windows_gpu():
    checks = judge("windows_torch2.5_cpu_wheel_rtx4070.txt")
    result = checks["cuda.available"]
    assert result.status == Status.FAIL
    assert "cpu-only build" in result.summary and "RTX 4070 Laptop GPU" in result.summary
    (cmd,) = commands(result)
    # Windows: the py launcher, and double quotes (cmd.exe passes single quotes on literally).
    assert cmd.startswith("py -m pip install --force-reinstall torch==2.5.1 ")
    assert "torchvision==0.20.1" in cmd and "torchaudio==2.5.1" in cmd and "'" not in cmd
    assert cmd.endswith("--index-url https://download.pytorch.org/whl/cu124")
    assert checks["platform"].summary.startswith("Windows AMD64, Python 3.12.7 (64-bit)")


def test_mps_of_torch_2_5_needs_macos_13_on_a_macos_12_2_report():
    # torch 2.5's own warning still said 12.3; a maintainer settled 13.0 (pytorch/pytorch#139425).
    checks = judge("macos_torch2.5_arm64_macos12.2.txt")
    assert checks["mps"].status == Status.WARN
    assert "macOS 12.2 is too old for MPS with torch 2.5.1 (needs 13.0+)" in checks["mps"].summary
    assert not [c for c in commands(checks["mps"]) if "torch==" in c]  # no MPS torch for 12.2
    assert judge("macos_torch2.5_arm64_macos12.2.txt", "mps")["mps"].status == Status.FAIL
    assert checks["cuda.available"].status == Status.SKIP  # no CUDA wheels on macOS: not a fault


def test_macos_12_7_6_with_torch_2_5_1_keeps_macos_with_torch_2_4_pytorch_139425():
    text = (DIR / "macos_torch2.5_arm64_macos12.2.txt").read_text()
    facts = collect_env.parse(text.replace("12.2", "12.7.6"))
    result = engine.run_check(engine.select(["mps"])[0], read_facts(facts), Context())
    assert "(needs 13.0+)" in result.summary
    assert "python3 -m pip install 'torch==2.4.*'" in commands(result)


def test_mps_backend_is_supported_on_macos_14_for_new_torch_offers_torch_2_5_on_macos_13():
    text = (DIR / "macos_torch2.5_arm64_macos12.2.txt").read_text()
    facts = collect_env.parse(text.replace("12.2", "13.6").replace("2.5.1", "2.7.0"))
    result = engine.run_check(engine.select(["mps"])[0], read_facts(facts), Context())
    assert "macOS 13.6 is too old for MPS with torch 2.7.0 (needs 14.0+)" in result.summary
    assert "python3 -m pip install 'torch==2.5.*'" in commands(result)
    # On a macOS that meets the floor, MPS availability is simply not in a collect_env report.
    facts = collect_env.parse(text.replace("12.2", "14.5"))
    result = engine.run_check(engine.select(["mps"])[0], read_facts(facts), Context())
    assert result.status == Status.SKIP and result.summary.startswith("not in the report")


def test_rosetta_x86_64_python_on_an_apple_m2_report():
    checks = judge("macos_torch2.2_rosetta.txt")
    assert checks["platform"].status == Status.FAIL and "Rosetta" in checks["platform"].summary
    assert "Rosetta" in checks["mps"].summary
    assert load(str(DIR / "macos_torch2.2_rosetta.txt")).raw["packages"]["conda"]["pytorch"] == {
        "version": "2.2.2",
        "build": "py3.10_0",
        "channel": "pytorch",
    }


def test_legacy_1_4_report_with_yes_no_flags_cpu_build_beside_a_gtx_1080_ti():
    facts = load(str(DIR / "linux_torch1.4_legacy_cpu_build_gpu.txt")).raw
    assert facts["torch"]["build"]["debug"] is False
    assert facts["torch"]["cuda"] == {"available": False}
    assert facts["platform"]["python_version"] == "3.7"
    assert facts["nvml"]["devices"] == [
        {
            "index": 0,
            "name": "GeForce GTX 1080 Ti",
            "capability": [6, 1],
            "capability_source": "product name",
        }
    ]
    assert facts["nvml"]["driver_version"] == "440.64"
    result = judge("linux_torch1.4_legacy_cpu_build_gpu.txt")["cuda.available"]
    assert result.status == Status.FAIL and "GeForce GTX 1080 Ti" in result.summary


def test_numpy_2_beside_torch_1_12_compiled_using_numpy_1x():
    checks = judge("linux_torch1.12_cu113_numpy2.txt")
    assert checks["torch.install"].status == Status.FAIL
    assert "numpy 2.0.1 with torch 1.12.1+cu113" in checks["torch.install"].summary
    assert 'python -m pip install "numpy<2"' in commands(checks["torch.install"])
    assert checks["cuda.available"].summary == "CUDA available: 4 device(s)"


def test_rocm_report_names_the_gfx_target_and_skips_what_needs_the_arch_list():
    facts = load(str(DIR / "linux_torch2.3_rocm6.0_rx6700xt.txt")).raw
    assert facts["torch"]["build"]["variant"] == "rocm"
    assert facts["torch"]["build"]["hip"] == "6.0.32830-d62f6a171"
    assert facts["torch"]["cuda"]["devices"][0]["gcn_arch_name"] == "gfx1031"
    checks = judge("linux_torch2.3_rocm6.0_rx6700xt.txt")
    assert checks["cuda.available"].status == Status.PASS
    assert checks["rocm"].summary.startswith("not in the report")


def test_report_fenced_inside_an_issue_body_with_text_around_it():
    facts = load(str(DIR / "issue_body_fenced_two_gpus.md")).raw
    assert [d["name"] for d in facts["nvml"]["devices"]] == ["NVIDIA L40S", "NVIDIA L40S"]
    assert facts["packages"]["distributions"]["torchaudio"] == {"version": "2.1.2+cu121"}
    assert facts["platform"]["libc"] == "glibc 2.28"
    checks = judge("issue_body_fenced_two_gpus.md")
    assert checks["cuda.driver"].status == Status.PASS
    assert checks["cuda.available"].summary == "CUDA available: 2 device(s)"


@pytest.mark.parametrize(
    "wrap",
    [
        lambda t: "\n".join("> " + ln for ln in t.splitlines()),  # quoted in a reply
        lambda t: t.replace("\n", "\r\n"),  # saved on Windows
        lambda t: "Here is my env:\n\n```text\n" + t + "```\n\nThanks!",  # fenced with prose
        lambda t: "\n".join(">> " + ln for ln in t.splitlines()),  # a quote of a quote
    ],
)
def test_quoted_fenced_and_crlf_pastes_read_the_same(wrap):
    text = (DIR / "linux_torch2.7_cu128_driver470.txt").read_text()
    assert collect_env.parse(wrap(text)) == collect_env.parse(text)


def test_prose_that_mentions_pytorch_version_is_not_a_report():
    assert collect_env.parse("I use PyTorch version: 2.1 on Ubuntu.\nIt crashes.") is None
    assert collect_env.parse("") is None


def test_report_where_import_torch_failed_is_an_import_error_not_a_guess():
    text = (DIR / "linux_torch2.7_cu128_driver470.txt").read_text()
    facts = collect_env.parse(text.replace("PyTorch version: 2.7.1+cu128", "PyTorch version: N/A"))
    assert facts["torch"]["status"] == "import_error"
    report = engine.diagnose(read_facts(facts), Context(), engine.select())
    checks = {c.id: c for c in report.checks}
    assert checks["torch.install"].status == Status.FAIL
    assert checks["torch.build"].summary.startswith("not in the report")


def test_cli_reads_a_report_from_stdin_and_says_where_the_facts_came_from():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    proc = run_cli("check", "--facts", "-", "--format", "markdown", input=text)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(
        "### torchdoctor 0.1.0 — from a collect_env report: torch 2.5.1+cpu, Python 3.12.7, "
        "Microsoft Windows 11 Home"
    )
    doc = json.loads(
        run_cli("check", "--facts", str(DIR / "macos_torch2.2_rosetta.txt"), "--json").stdout
    )
    jsonschema.validate(
        doc, json.loads((REPO / "torchdoctor/schema/report.schema.json").read_text())
    )
    assert doc["facts"]["collected"]["source"] == "collect_env"
    assert doc["facts"]["collected"]["report"]["torch"] == "2.2.2"
    assert doc["facts"]["collected"]["report"]["os"] == "macOS 14.4.1"


def test_cli_text_that_is_neither_facts_nor_a_report_exits_2_in_one_line(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\n")
    proc = run_cli("check", "--facts", str(p))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"Error: --facts: {str(p)!r} is not a facts/report JSON or a collect_env report"
    ]


def test_windows_1_8_report_with_cudnn_dll_path_and_short_python_version():
    facts = load(str(DIR / "windows_torch1.8_cu111_rtx3060.txt")).raw
    assert facts["platform"]["system"] == "Windows"
    assert facts["platform"]["python_version"] == "3.8" and facts["platform"]["python_bits"] == 64
    assert facts["torch"]["build"]["cuda"] == "11.1"
    # CUDA is available, so nvidia-smi's GPU is torch's device; its name fixes sm_86.
    assert facts["torch"]["cuda"] == {
        "available": True,
        "device_count": 1,
        "devices": [{"index": 0, "name": "GeForce RTX 3060", "capability": [8, 6]}],
    }
    checks = judge("windows_torch1.8_cu111_rtx3060.txt")
    assert checks["cuda.available"].status == Status.PASS
    assert checks["mps"].summary == "MPS exists only on macOS (this is Windows)"


def test_mac_osx_10_15_report_of_torch_1_7_debug_build_predates_mps():
    facts = load(str(DIR / "macos_torch1.7_intel_mac_osx.txt")).raw
    assert facts["platform"]["mac_ver"] == "10.15.7"
    # pip's legacy "name (version)" list format
    assert facts["packages"]["distributions"]["numpy"] == {"version": "1.19.5"}
    checks = judge("macos_torch1.7_intel_mac_osx.txt")
    # An x86_64 Python on Mac OS X 10.15: no Apple Silicon, so no "upgrade torch for MPS" note.
    assert checks["mps"].status == Status.SKIP
    assert (
        checks["mps"].summary == "MPS needs an arm64 Python on Apple Silicon; this Python is x86_64"
    )
    assert (
        checks["torch.build"].status == Status.WARN
        and "debug build" in checks["torch.build"].summary
    )


def test_xpu_report_with_intel_driver_and_device_blocks():
    facts = load(str(DIR / "linux_torch2.8_xpu_arc.txt")).raw
    assert facts["torch"]["build"]["variant"] == "xpu"
    # Reading goes on past the multi-line Intel blocks to the CPU block and package list.
    assert facts["collected"]["report"]["labels"][-2:] == ["CPU", "Versions of relevant libraries"]
    result = judge("linux_torch2.8_xpu_arc.txt")["xpu"]
    assert result.summary == "XPU available: 1 device(s): Intel(R) Arc(TM) A770 Graphics"


def test_wsl2_report_driver_too_old_points_at_the_windows_driver():
    text = (DIR / "linux_torch2.7_cu128_driver470.txt").read_text()
    wsl = text.replace(
        "Linux-5.15.0-139-generic-x86_64", "Linux-5.15.167.4-microsoft-standard-WSL2-x86_64"
    )
    facts = collect_env.parse(wsl)
    assert facts["platform"]["wsl"] is True
    result = engine.run_check(engine.select(["cuda.driver"])[0], read_facts(facts), Context())
    assert "never a Linux driver inside WSL2" in result.remedies[0].text


def test_windows_report_cuda_build_unavailable_gets_no_dev_nvidia_uvm_advice():
    text = (DIR / "windows_torch1.8_cu111_rtx3060.txt").read_text()
    facts = collect_env.parse(text.replace("Is CUDA available: True", "Is CUDA available: False"))
    result = engine.run_check(engine.select(["cuda.available"])[0], read_facts(facts), Context())
    assert result.status == Status.FAIL
    assert "/dev/" not in " ".join(r.text + " ".join(r.commands) for r in result.remedies)
    assert commands(result) == ["nvidia-smi"]


@pytest.mark.parametrize("name", FIXTURES)
def test_a_report_cut_short_or_missing_a_line_never_breaks_a_check(name):
    lines = (DIR / name).read_text(encoding="utf-8").splitlines()
    variants = [lines[:end] for end in range(len(lines))]
    variants += [lines[:i] + lines[i + 1 :] for i in range(len(lines))]
    for variant in variants:
        facts = collect_env.parse("\n".join(variant))
        if facts is None:
            continue
        report = engine.diagnose(read_facts(facts), Context(), engine.select())
        assert not [c.summary for c in report.checks if c.status == Status.ERROR], variant


def test_real_collect_env_of_the_torch_2_14_cuda_wheel_on_this_gpu_less_machine():
    facts = load(str(DIR / "linux_torch2.14_cu130_no_gpu_real.txt")).raw
    # PyPI's CUDA wheel: torch.__version__ has the local tag, pip's metadata does not.
    assert facts["torch"]["version"] == "2.14.1+cu130"
    assert facts["packages"]["distributions"]["torch"] == {"version": "2.14.1"}
    assert facts["packages"]["nvidia_wheels"]["nvidia-cudnn-cu13"] == "9.24.0.43"
    checks = judge("linux_torch2.14_cu130_no_gpu_real.txt")
    result = checks["cuda.available"]
    assert result.status == Status.WARN
    assert "CUDA build of torch on a machine without an NVIDIA GPU" in result.summary
    assert (
        "python -m pip install --force-reinstall torch==2.14.1 "
        "--index-url https://download.pytorch.org/whl/cpu"
    ) in commands(result)
    # The pip list was collected and has no numpy: that absence is a fact of the report.
    assert "numpy not installed" in checks["torch.install"].summary


def test_numpy_absence_is_not_claimed_when_the_pip_list_was_not_collected():
    text = (DIR / "linux_torch2.14_cu130_no_gpu_real.txt").read_text()
    head, _, _ = text.partition("Versions of relevant libraries:")
    facts = collect_env.parse(head + "Versions of relevant libraries:\n[pip3] Could not collect\n")
    assert "packages.distributions" not in facts["collected"]["carries"]
    result = engine.run_check(engine.select(["torch.install"])[0], read_facts(facts), Context())
    assert result.status == Status.PASS and "numpy" not in result.summary


def test_torch_not_compiled_with_cuda_enabled_on_a_mac_points_at_mps_not_a_driver():
    checks = judge("macos_torch2.5_arm64_macos12.2.txt", expect="cuda")
    for cid in ("cuda.driver", "cuda.available"):
        assert checks[cid].status == Status.FAIL
        assert "macOS has no CUDA" in checks[cid].remedies[0].text, cid


def test_report_without_torch_gets_the_install_command_for_the_reporters_os_and_gpu():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    text = text.replace("PyTorch version: 2.5.1+cpu", "PyTorch version: N/A")
    facts = collect_env.parse(text.replace("[pip3] torch==2.5.1+cpu", ""))
    assert facts["torch"]["status"] == "missing"
    assert facts["collected"]["report"]["torch"] == "not installed"
    result = engine.run_check(engine.select(["torch.install"])[0], read_facts(facts), Context())
    assert result.status == Status.FAIL
    (cmd,) = commands(result)
    assert cmd.startswith('py -m pip install "torch==2.')  # double quotes: cmd.exe
    assert " --index-url https://download.pytorch.org/whl/cu" in cmd


def test_report_saved_by_windows_powershell_as_utf16_is_read(tmp_path):
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    saved = tmp_path / "env.txt"
    saved.write_bytes(text.encode("utf-16"))  # with a BOM, as PowerShell 5's `>` writes it
    assert load(str(saved)).raw == collect_env.parse(text)


def test_windows_cpu_block_from_wmic_with_cr_cr_lf_and_blank_lines():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_bytes().decode()
    wmic = text.replace("\r\n", "\r\r\n")
    assert collect_env.parse(wmic) == collect_env.parse(text)
    spaced = text.replace("Architecture=9\r\n", "\r\n\r\nArchitecture=9\r\n\r\n")
    facts = collect_env.parse(spaced)
    assert facts["host"]["cpu"]["model"] == "13th Gen Intel(R) Core(TM) i7-13700H"
    assert facts["platform"]["machine"] == "AMD64"


def test_imported_torch_differs_from_pips_and_condas_two_copies():
    text = (DIR / "macos_torch2.2_rosetta.txt").read_text()
    facts = collect_env.parse(text.replace("[pip3] torch==2.2.2", "[pip3] torch==2.3.0"))
    result = engine.run_check(engine.select(["torch.install"])[0], read_facts(facts), Context())
    assert result.status == Status.FAIL
    assert result.summary == (
        "3 copies of torch are visible (2.2.2 in the imported module, 2.3.0 in pip's list, "
        "2.2.2 in conda's list)"
    )
    # The PyPI CUDA wheel's local tag (2.14.1+cu130 imported, 2.14.1 listed) is one copy.
    assert (
        "torch_distributions"
        not in load(str(DIR / "linux_torch2.14_cu130_no_gpu_real.txt")).raw["packages"]
    )


def test_two_torch_copies_on_windows_get_cmd_exe_commands():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    facts = collect_env.parse(text.replace("[pip3] torch==2.5.1+cpu", "[pip3] torch==2.4.0+cpu"))
    result = engine.run_check(engine.select(["torch.install"])[0], read_facts(facts), Context())
    assert "2 copies of torch are visible" in result.summary
    assert commands(result) == ["py -m pip uninstall -y torch", "set PYTHONNOUSERSITE=1"]


@pytest.mark.parametrize(
    ("name", "cap"),
    [
        ("NVIDIA GeForce RTX 5090", (12, 0)),
        ("NVIDIA GeForce RTX 5060 Ti", (12, 0)),
        ("NVIDIA RTX 5000 Ada Generation", (8, 9)),  # not a GeForce RTX 50xx
        ("Quadro RTX 5000", (7, 5)),
        ("NVIDIA RTX A6000", (8, 6)),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", (8, 9)),
        ("Tesla V100-SXM2-32GB", (7, 0)),
        ("NVIDIA H100 80GB HBM3", (9, 0)),
        ("NVIDIA H200", (9, 0)),
        ("Tesla K80", (3, 7)),
        ("NVIDIA GeForce GTX TITAN X", None),  # Maxwell or Pascal: the name does not say
        ("NVIDIA Graphics Device", None),
    ],
)
def test_gpu_capability_from_the_product_name_only_where_it_is_certain(name, cap):
    from torchdoctor.data.gpu_names import capability

    assert capability(name) == cap


def test_no_kernel_image_blackwell_report_never_gets_a_wheel_without_sm_120():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    text = text.replace("RTX 4070 Laptop GPU", "RTX 5090").replace("560.94", "572.83")
    facts = collect_env.parse(text)
    result = engine.run_check(engine.select(["cuda.available"])[0], read_facts(facts), Context())
    assert result.status == Status.FAIL
    # torch 2.5's cu124 wheel has no sm_120 kernels: recommending it would fail the same way.
    assert not [c for c in commands(result) if "whl/cu124" in c or "whl/cu121" in c]


def test_redacting_a_report_on_a_host_named_vm_keeps_the_nvml_section_name():
    from torchdoctor.report.redact import redact

    facts = load(str(DIR / "issue_body_fenced_two_gpus.md")).raw
    out = redact(facts, [("vm", "<host>")])
    assert out["collected"]["carries"] == facts["collected"]["carries"]
    assert redact({"a": "ssh vm; vm:22"}, [("vm", "<host>")]) == {"a": "ssh <host>; <host>:22"}


def test_torch_1_0_conda_only_report_is_one_copy_and_claims_nothing_about_numpy():
    facts = load(str(DIR / "linux_torch1.0_cu90_conda_legacy.txt")).raw
    assert facts["packages"]["distributions"]["torch"] == {"version": "1.0.1"}  # from conda
    assert "torch_distributions" not in facts["packages"]  # 1.0.1.post2 is conda's 1.0.1
    assert "packages.distributions" not in facts["collected"]["carries"]  # pip: Could not collect
    assert [d["capability"] for d in facts["nvml"]["devices"]] == [[7, 0], [7, 0]]
    checks = judge("linux_torch1.0_cu90_conda_legacy.txt")
    assert checks["torch.install"].summary == "torch 1.0.1.post2 imported where the report was made"
    assert checks["cuda.available"].summary == "CUDA available: 2 device(s)"


def test_windows_report_where_import_torch_failed_asks_for_the_error_first():
    text = (DIR / "windows_torch2.5_cpu_wheel_rtx4070.txt").read_text()
    facts = collect_env.parse(text.replace("PyTorch version: 2.5.1+cpu", "PyTorch version: N/A"))
    result = engine.run_check(engine.select(["torch.install"])[0], read_facts(facts), Context())
    assert result.status == Status.FAIL
    assert commands(result)[0] == 'py -c "import torch"'
    assert "WinError 126" in result.remedies[0].text


@pytest.mark.parametrize(
    "fixture,options",
    [
        ("windows_torch2.5_cpu_wheel_rtx4070.txt", ""),
        ("linux_torch2.6_cu126_rtx5090d_sm120_pytorch_pytorch_150733.txt", " --format markdown"),
    ],
)
def test_triage_page_examples_are_what_the_command_prints(fixture, options):
    command = f"$ torchdoctor check --facts -{options} < tests/collect_env/{fixture}\n"
    # The README's section, or the docs/ page it may move to.
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    page = next(p.read_text() for p in pages if command in p.read_text())
    shown = page.split(command, 1)[1].split("\n```", 1)[0]
    text = (DIR / fixture).read_text()
    printed = run_cli("check", "--facts", "-", *options.split(), input=text).stdout
    assert shown + "\n" == printed.rstrip("\n") + "\n", "refresh the triage example"


def test_a_hostile_paste_is_read_fast():
    import time

    head = (
        "PyTorch version: 2.1.0\nROCM used to build PyTorch: 6.0\nOS: x\nIs CUDA available: True\n"
    )
    hostile = head + "GPU models and configuration: " + "a (" * 2_000_000 + "\n" + "x" * 5_000_000
    t0 = time.perf_counter()
    assert collect_env.parse(hostile) is not None
    assert time.perf_counter() - t0 < 5.0  # linear: about 0.6 s here; quadratic would hang


def test_intel_mac_report_where_torch_did_not_import_reinstalls_2_2_not_a_newer_wheel_149260():
    # pytorch/pytorch#149260: macOS 15 on x86_64; no torch after 2.2 has an Intel macOS wheel.
    checks = judge("macos15_x86_64_torch_import_failed_pytorch_pytorch_149260.txt")
    installs = [c for c in commands(checks["torch.install"]) if " install " in c]
    assert installs and all("torch==2.2." in c for c in installs), installs
