"""Suppressions a linter user expects: `# noqa` comments, `[tool.torchdoctor.scan]` in
pyproject.toml (ignore, per-file-ignores), the project's torch requirement; and the
pre-commit hook definition."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.config import config_for_dir, torch_lower_bound
from torchdoctor.scan.engine import scan_source

from .conftest import REPO

# `.cuda()` in a library class's method of a file that picks the CPU elsewhere: TD001, shown
# when the project says it must run without CUDA (`portable = true`, scan/calibration.py)
PORTABLE = "[tool.torchdoctor.scan]\nportable = true\n"
CUDA_IN_CLASS = (
    'DEVICE = "cuda" if torch.cuda.is_available() else "cpu"\n'
    "class Net:\n    def load(self):\n        self.m.cuda()\n"
)


def _rules(src: str) -> tuple[list[str], int]:
    found, suppressed = scan_source("m.py", "import torch\n" + src, ScanOptions())
    return [f.rule for f in found], suppressed


def test_bare_noqa_silences_every_rule_and_is_counted():
    assert _rules("m.cuda()  # noqa\n") == ([], 1)


def test_noqa_with_our_id_silences_only_that_rule():
    found, suppressed = _rules("sd = torch.load(f)  # noqa: TD101\n")
    assert found == ["TD102"] and suppressed == 1


def test_noqa_for_another_tools_code_silences_nothing():
    assert _rules("m.cuda()  # noqa: E501\n") == (["TD001"], 0)


def test_noqa_list_with_several_codes():
    assert _rules("sd = torch.load(f)  # noqa: E501, TD101,TD102\n") == ([], 2)


@pytest.fixture
def project(tmp_path):
    def make(pyproject: str, files: dict[str, str]) -> Path:
        root = tmp_path / "proj"
        root.mkdir()
        (root / "pyproject.toml").write_text(pyproject)
        for name, text in files.items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        config_for_dir.cache_clear()
        return root

    yield make
    config_for_dir.cache_clear()


def test_per_file_ignores_and_ignore_from_pyproject(project):
    root = project(
        '[tool.torchdoctor.scan]\nportable = true\nignore = ["TD201"]\n'
        '[tool.torchdoctor.scan.per-file-ignores]\n"tests/*" = ["TD001"]\n"gpu_*.py" = ["*"]\n',
        {
            "src/a.py": CUDA_IN_CLASS + "m = nn.DataParallel(m)\n",
            "tests/test_a.py": CUDA_IN_CLASS,
            "tools/gpu_bench.py": CUDA_IN_CLASS,
        },
    )
    result = scan_paths([str(root)], ScanOptions(include_tests=True), jobs=1)
    where = sorted((Path(f.path).relative_to(root).as_posix(), f.rule) for f in result.findings)
    assert where == [("src/a.py", "TD001")]
    assert result.suppressed == 3  # ignore and per-file-ignores are counted, as on `check`


def test_shared_ignore_list_with_a_code_prefix_and_other_commands_ids(project):
    root = project(
        '[tool.torchdoctor]\nignore = ["TD1", "container"]\n' + PORTABLE,
        {"a.py": "import torch\nsd = torch.load(p)\n" + CUDA_IN_CLASS},
    )
    result = scan_paths([str(root)], ScanOptions(), jobs=1)
    assert [f.rule for f in result.findings] == ["TD001"]
    assert result.suppressed == 2 and not result.errors


def test_invalid_config_is_a_file_error_and_the_scan_goes_on(project):
    root = project("[tool.torchdoctor.scan\n", {"a.py": "import torch\nsd = torch.load(p)\n"})
    result = scan_paths([str(root)], ScanOptions(), jobs=1)
    assert [f.rule for f in result.findings] == ["TD102"]
    assert any("not valid TOML" in e.message for e in result.errors)


def test_unknown_rule_in_config_is_reported(project):
    root = project('[tool.torchdoctor.scan]\nignore = ["TD999"]\n', {"a.py": "m.cuda()\n"})
    result = scan_paths([str(root)], ScanOptions(), jobs=1)
    assert any("unknown rule 'TD999'" in e.message for e in result.errors)


def test_project_requiring_torch_2_6_gets_no_weights_only_note(project):
    src = {"a.py": "import torch\nsd = torch.load(p, map_location='cpu')\n"}
    root = project('[project]\nname = "x"\ndependencies = ["torch>=2.6,<3"]\n', src)
    assert scan_paths([str(root)], ScanOptions(), jobs=1).findings == []


def test_requirements_file_declares_the_torch_floor(tmp_path):
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "requirements.txt").write_text("numpy\ntorch>=2.7.1\n")
    config_for_dir.cache_clear()
    assert config_for_dir(str(tmp_path)).torch_min == (2, 7)
    config_for_dir.cache_clear()


def test_weights_only_default_from_requirements_txt_in_a_tree_without_git_mario_diffusion(tmp_path):
    """schrum2/MarioDiffusion (set 158) pins torch==2.6.0 in requirements.txt and has no
    pyproject.toml or setup.py: downloaded as a zip (no .git), its `torch.load` of embeddings
    already defaults to weights_only=True, and TD102 has nothing to say."""
    (tmp_path / "requirements.txt").write_text("--index-url https://x/whl/cu126\ntorch==2.6.0\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "pipe.py").write_text(
        "import torch\nemb = torch.load(path, map_location='cpu')\n"
    )
    _floor_silences_td102(tmp_path, tmp_path / "requirements.txt")


def _floor_silences_td102(tree: Path, requirements: Path) -> None:
    """The tree's loads draw no TD102 while `requirements` pins torch >= 2.6, and do once it
    names torch without a floor."""
    config_for_dir.cache_clear()
    try:
        found = scan_paths([str(tree)], ScanOptions(confidence="low"), jobs=1).findings
        assert [f.rule for f in found] == []
        requirements.write_text("torch\n")  # no floor: the note is back
        config_for_dir.cache_clear()
        found = scan_paths([str(tree)], ScanOptions(confidence="low"), jobs=1).findings
        assert [f.rule for f in found] == ["TD102"]
    finally:
        config_for_dir.cache_clear()


def test_requirements_named_for_a_part_of_the_project_declare_its_floor_agentic_rag(tmp_path):
    """gardan4/AgenticRAG (blind set 205): no pyproject.toml, setup.py or requirements.txt at
    its root, but AGENT_requirements.txt pins torch==2.6.0+cu128, where `torch.load` defaults to
    weights_only=True: TD102 has nothing to say about AGENT/'s loads."""
    pinned = tmp_path / "AGENT_requirements.txt"
    pinned.write_text("torch==2.6.0+cu128 --index-url https://download.pytorch.org/whl/cu128\n")
    (tmp_path / "RAG_requirements.txt").write_text("fastapi\n")
    code = tmp_path / "AGENT" / "train.py"
    code.parent.mkdir()
    code.write_text("import torch\nckpt = torch.load(path, map_location=device)\n")
    config_for_dir.cache_clear()
    assert config_for_dir(str(code.parent)).torch_min == (2, 6)
    _floor_silences_td102(tmp_path, pinned)


def test_conda_environment_file_declares_the_floor_nerf_pytorch(tmp_path):
    """adrigia2/NeRF_Pytorch (blind set 222) has no requirements.txt or pyproject.toml: its
    environment.yml pins torch==2.9.0+cu130 in its pip section, where `torch.load` defaults to
    weights_only=True, and its two resume loads drew TD102 at `high`."""
    env = tmp_path / "environment.yml"
    env.write_text(
        "name: nerf\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
        "  - pip\n  - pip:\n      - --extra-index-url https://download.pytorch.org/whl/cu130\n"
        "      - torch==2.9.0+cu130\n      - torchvision==0.24.0+cu130\n"
    )
    code = tmp_path / "nerf" / "checkpoint.py"
    code.parent.mkdir()
    code.write_text("import torch\nckpt = torch.load(path, map_location=device)\n")
    _floor_silences_td102(tmp_path, env)


@pytest.mark.parametrize(
    ("environment", "floor"),
    [
        # lllyasviel/ControlNet's environment.yaml (blind labels cite it): under 2.6, TD102 stays
        ("  - pytorch=1.12.1\n  - pytorch-cuda=11.8\n  - torchvision=0.13.1\n", (1, 12)),
        ("  - pytorch::pytorch>=2.1\n", (2, 1)),
        ("  - pytorch 2.0.1 py3.9_cuda11.7_cudnn8.5.0_0\n", (2, 0)),
        ("  - pytorch\n  - numpy>=1.26\n", None),  # no version: any release
    ],
)
def test_conda_environment_file_floor(tmp_path, environment, floor):
    (tmp_path / ".git").mkdir()
    (tmp_path / "environment.yaml").write_text("dependencies:\n" + environment)
    config_for_dir.cache_clear()
    try:
        assert config_for_dir(str(tmp_path)).torch_min == floor
    finally:
        config_for_dir.cache_clear()


def test_the_pytorch_channel_is_not_a_torch_requirement(tmp_path):
    """pytorch.org's conda setup lists `- pytorch` under `channels:`. Read as a dependency
    without a version, it hid the floor of the requirements.txt its pip section installs
    (review of the environment.yml change: TD102 at high under torch==2.6.0)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==2.6.0\nnumpy\n")
    (tmp_path / "environment.yml").write_text(
        "name: demo\nchannels:\n  - pytorch\n  - nvidia\n  - conda-forge\ndependencies:\n"
        "  - python=3.10\n  - pip\n  - pip:\n    - -r requirements.txt\n"
    )
    config_for_dir.cache_clear()
    try:
        assert config_for_dir(str(tmp_path)).torch_min == (2, 6)
        (tmp_path / "environment.yml").write_text(
            "channels:\r\n  - pytorch\r\ndependencies:\r\n  - pytorch=2.6.0\r\n"
        )
        (tmp_path / "requirements.txt").write_text("numpy\n")
        config_for_dir.cache_clear()
        assert config_for_dir(str(tmp_path)).torch_min == (2, 6)
    finally:
        config_for_dir.cache_clear()


def test_nested_requirements_without_torch_defer_to_the_project_cp_swiss_german_asr(tmp_path):
    """Till1983/cp-swiss-german-asr (set 160) pins torch==2.6.0 at its root and keeps a web
    front end's own requirements.txt under src/frontend: code there still has the root's floor."""
    (tmp_path / "requirements.txt").write_text("torch==2.6.0\ntorchaudio==2.6.0\n")
    front = tmp_path / "src" / "frontend"
    front.mkdir(parents=True)
    (front / "requirements.txt").write_text("streamlit\n")
    config_for_dir.cache_clear()
    assert config_for_dir(str(front)).torch_min == (2, 6)
    (front / "requirements.txt").write_text("torch>=1.13\n")  # a floor of its own
    config_for_dir.cache_clear()
    assert config_for_dir(str(front)).torch_min == (1, 13)
    config_for_dir.cache_clear()


def test_torch_floor_from_a_dependency_group_slm_lab(tmp_path):
    """kengz/SLM-Lab (set 99) requires torch>=2.8.0 in its `ml` dependency group only: its
    loads default to weights_only=True there, TD102 has nothing to say."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["pyyaml>=6"]\n'
        '[project.optional-dependencies]\nviz = ["plotly"]\n'
        '[dependency-groups]\nml = ["gymnasium==1.2.0", "torch>=2.8.0"]\n'
        'dev = [{include-group = "ml"}, "pytest"]\n'
    )
    config_for_dir.cache_clear()
    assert config_for_dir(str(tmp_path)).torch_min == (2, 8)
    config_for_dir.cache_clear()
    (tmp_path / "m.py").write_text("import torch\nsd = torch.load(p)\n")
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1)
    assert "TD102" not in [f.rule for f in result.findings]
    config_for_dir.cache_clear()


def test_an_extra_cannot_lower_the_floor_the_dependencies_set_silero_vad(tmp_path):
    """snakers4/silero-vad (set 10): torch>=1.12 in its dependencies and a bare `torch` in an
    extra; every install has torch>=1.12."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["torch>=1.12.0"]\n'
        '[project.optional-dependencies]\nonnx = ["onnxruntime", "torch"]\n'
    )
    config_for_dir.cache_clear()
    assert config_for_dir(str(tmp_path)).torch_min == (1, 12)
    config_for_dir.cache_clear()


@pytest.mark.parametrize(
    ("reqs", "floor"),
    [
        (["torch>=2.6"], (2, 6)),
        (["torch[opt] >= 2.6.0, <3"], (2, 6)),
        (["torch==2.7.1"], (2, 7)),
        (["torch"], None),
        (["torchvision>=0.99"], None),  # not read as torch 0.99; no such companion release
        (["torchvision>=0.20"], None),  # torch not named: nothing said of it here
        (["torch\ntorchvision>=0.20"], (2, 5)),  # torchvision 0.20 is built for torch 2.5 only
        (["torch\ntorchvision", "torch==2.12.0\ntorchvision==0.27.0"], None),  # set 231's
        (["torch\ntorchaudio>=2.11.0"], (2, 11)),  # set 282's low_vol_with_lstm_har_bl
        (["torch>=2.7\ntorchvision>=0.16"], (2, 7)),  # the higher floor decides
        (["torch>=2.6", "torch>=1.13"], (1, 13)),
        (["torch>=2.6; python_version >= '3.9'"], (2, 6)),
        # lenML/Speech-AI-Forge's requirements.dev_gpu.txt (set 103): a direct wheel pins 2.6,
        # where torch.load defaults to weights_only=True
        (
            [
                "torch @ https://mirror.sjtu.edu.cn/pytorch-wheels/cu126/torch-2.6.0%2Bcu126-cp310-cp310-linux_x86_64.whl"
            ],
            (2, 6),
        ),
        (["torch @ git+https://github.com/pytorch/pytorch"], None),
        # acids-ircam/RAVE's requirements.txt (set 100): a bare `torch` line allows any
        # release; the next line's bound is tqdm's, not torch's
        (["scipy==1.10.0\ntorch\ntqdm>=4.64.1\n"], None),
        (["torch\n"], None),
    ],
)
def test_torch_lower_bound(reqs, floor):
    assert torch_lower_bound(reqs) == floor


def test_pre_commit_hook_runs_the_scan_on_the_files_it_is_given(tmp_path):
    """What pre-commit does with the hook: run `entry` with the staged Python file names."""
    import yaml

    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "torchdoctor-scan" and hook["types"] == ["python"]
    exe, *args = hook["entry"].split()
    assert exe == "torchdoctor"  # the console script the package installs
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("import torch\n" + CUDA_IN_CLASS)
    (tmp_path / "pyproject.toml").write_text(PORTABLE)
    good.write_text("import torch\nm.to(device)\n")
    cmd = [sys.executable, "-m", "torchdoctor", *args]
    assert subprocess.run([*cmd, str(good)], capture_output=True).returncode == 0
    failed = subprocess.run([*cmd, str(bad), str(good)], capture_output=True, text=True)
    assert failed.returncode == 1 and "TD001" in failed.stdout


@pytest.mark.slow
def test_pre_commit_try_repo_on_a_sample_project(tmp_path):
    """`pre-commit try-repo` installs this repository's hook in its own virtualenv (from
    PyPI) and runs it on a sample git project."""
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    if not Path(pre_commit).exists() or shutil.which("git") is None:
        pytest.skip("pre-commit or git is not installed")
    if subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True
    ).returncode:
        pytest.skip("not a git checkout")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "models.py").write_text("import torch\n" + CUDA_IN_CLASS)
    (proj / "pyproject.toml").write_text(PORTABLE)
    git = ["git", "-C", str(proj), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "models.py", "pyproject.toml"], check=True)
    env = {"PRE_COMMIT_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [pre_commit, "try-repo", str(REPO), "torchdoctor-scan", "--all-files"],
        cwd=proj,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if "Could not find a version" in run.stdout + run.stderr or "Network" in run.stderr:
        pytest.skip("no package index reachable for pre-commit's virtualenv")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "TD001" in run.stdout and "torchdoctor scan" in run.stdout


def test_a_parts_requirements_file_does_not_hide_the_projects_floor(tmp_path):
    """A demo's own demo_requirements.txt naming torch without a version is not a project
    root: the pyproject.toml above it, torch>=2.6, still decides."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n'
    )
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "demo_requirements.txt").write_text("torch\n")
    config_for_dir.cache_clear()
    try:
        assert config_for_dir(str(demo)).torch_min == (2, 6)
    finally:
        config_for_dir.cache_clear()


def test_requires_python_3_14_means_torch_2_9_flux2_lora_toolkit(tmp_path):
    """anongecko/flux2-lora-toolkit (blind set 234) names torch without a version, but its
    `requires-python = ">=3.14"` rules out every torch before 2.9 (the first with a CPython 3.14
    wheel), where weights_only=True is the default: four loads drew TD102 at `high`."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "flux2-lora"\nrequires-python = ">=3.14"\ndependencies = ["torch"]\n'
    )
    (tmp_path / "ckpt.py").write_text("import torch\nsd = torch.load(path, map_location='cpu')\n")
    config_for_dir.cache_clear()
    try:
        assert config_for_dir(str(tmp_path)).torch_min == (2, 9)
        assert scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings == []
    finally:
        config_for_dir.cache_clear()


@pytest.mark.parametrize(
    ("requires_python", "floor"),
    [
        (">=3.13", (2, 5)),  # below 2.6: the load is still flagged
        ("~=3.14.0", (2, 9)),
        (">=3.10,<3.15", (1, 11)),
        (">3.13", (2, 5)),  # 3.13.1 is allowed: only the minor counts, and `>` does not raise it
        (">=3.16", None),  # newer than every release in the table: no floor can be told
        (">=3.14", (2, 9)),
    ],
)
def test_requires_python_floor(tmp_path, requires_python, floor):
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "p"\nrequires-python = "{requires_python}"\n'
    )
    config_for_dir.cache_clear()
    try:
        assert config_for_dir(str(tmp_path)).torch_min == floor
    finally:
        config_for_dir.cache_clear()
