"""The one `[tool.torchdoctor]` reader every command uses (torchdoctor/config.py): what each
command makes of the same pyproject.toml, and the one line a malformed one gets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchdoctor import config
from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.config import config_for_dir

from .conftest import FACTS_DIR, run_cli

CUDA_AND_LOAD = "import torch\nm.cuda()\nsd = torch.load(p, map_location='cpu')\n"
COMMANDS = {
    "check": ("check", "--facts", str(FACTS_DIR / "driver_too_old.json")),
    "scan": ("scan", "a.py"),
}


@pytest.fixture(autouse=True)
def _fresh_scan_configs():
    config_for_dir.cache_clear()
    yield
    config_for_dir.cache_clear()


def _project(root: Path, pyproject: str, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("pyproject", "problem"),
    [
        (
            '[tool.torchdoctor.scan]\nignore = "TD201"\n',
            "[tool.torchdoctor.scan] ignore: must be a list of id strings, not 'TD201'",
        ),
        (
            '[tool.torchdoctor.scan.per-file-ignores]\n"tests/*" = "TD001"\n',
            '[tool.torchdoctor.scan] per-file-ignores "tests/*": must be a list of id strings,'
            " not 'TD001'",
        ),
        ("[tool.torchdoctor]\ncheck = 3\n", "[tool.torchdoctor.check]: must be a table, not 3"),
        (
            '[tool.torchdoctor]\nignroe = ["host"]\n',
            "[tool.torchdoctor] ignroe: unknown key (known: select, ignore, confidence, check, scan,"
            " inspect, audit, dist)",
        ),
    ],
)
def test_key_of_the_wrong_type_is_one_line_naming_file_and_key_and_exit_2(
    tmp_path, command, pyproject, problem
):
    """`check` used to skip the scan's table (and any misspelt key) and `scan` to report it
    as a file it could not scan (exit 1); now every command refuses the same file with the
    same line."""
    _project(tmp_path, pyproject, {"a.py": "m.cuda()\n"})
    r = run_cli(*COMMANDS[command], cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == f"Error: {tmp_path / 'pyproject.toml'}: {problem}\n"


def test_invalid_toml_where_scan_runs_is_exit_2_like_check(tmp_path):
    _project(tmp_path, "[tool.torchdoctor.scan\n", {"a.py": "m.cuda()\n"})
    r = run_cli("scan", "a.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"Error: {tmp_path / 'pyproject.toml'}: not valid TOML (")
    assert r.stderr.count("\n") == 1


def test_shared_select_reports_only_those_scan_rules_as_it_does_check_ids(tmp_path):
    """`[tool.torchdoctor] select` used to be read by check and not by scan."""
    root = _project(tmp_path, '[tool.torchdoctor]\nselect = ["TD1"]\n', {"a.py": CUDA_AND_LOAD})
    result = scan_paths([str(root)], ScanOptions(), jobs=1)
    assert [f.rule for f in result.findings] == ["TD102"]
    assert result.suppressed == 1 and not result.errors


def test_setup_py_project_inside_a_configured_repository_takes_its_configuration(tmp_path):
    """The scan's reader stopped at the nearest setup.py or .git, check's at the nearest
    pyproject.toml; now both take the nearest pyproject.toml, and the torch floor still comes
    from the inner project's own requirements."""
    root = _project(tmp_path, '[tool.torchdoctor.scan]\nignore = ["TD001"]\n', {})
    (root / "pkg").mkdir()
    (root / "pkg" / "setup.py").write_text("")
    (root / "pkg" / "requirements.txt").write_text("torch>=2.6\n")
    (root / "pkg" / "a.py").write_text(CUDA_AND_LOAD)
    result = scan_paths([str(root / "pkg")], ScanOptions(), jobs=1)
    assert result.findings == [] and result.suppressed == 1  # TD102: torch 2.6 loads safely
    assert config_for_dir(str(root / "pkg")).torch_min == (2, 6)


def test_shared_and_command_lists_merge_and_per_file_ignores_keep_file_order(tmp_path):
    path = _project(
        tmp_path,
        '[tool.torchdoctor]\nignore = ["host"]\nselect = ["cuda"]\n'
        '[tool.torchdoctor.check]\nignore = ["container"]\n'
        '[tool.torchdoctor.scan.per-file-ignores]\n"b/*" = ["TD2"]\n"a/*" = ["*"]\n',
        {},
    )
    cfg = config.load(path / "pyproject.toml")
    sel = cfg.selection("check")
    assert (sel.select, sel.ignore) == (("cuda",), ("host", "container"))
    assert cfg.selection("scan").ignore == ("host",)
    assert cfg.per_file_ignores("scan") == (("b/*", ("TD2",)), ("a/*", ("*",)))
    assert cfg.root == str(path)


def test_an_edited_pyproject_is_read_again(tmp_path):
    """The parsed file is cached per version: a long-lived caller sees an edit."""
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.torchdoctor]\nignore = ["a"]\n')
    assert config.read(str(path)).ids("ignore") == ("a",)
    path.write_text('[tool.torchdoctor]\nignore = ["a", "b"]\n')
    os.utime(path, ns=(0, 0))
    assert config.read(str(path)).ids("ignore") == ("a", "b")
