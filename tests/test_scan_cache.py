"""The scan's cache (scan/cache.py): a second run over an unchanged tree analyses nothing, an
edit is seen at once — also by findings in other files that depend on it — and a cache that
cannot be used never fails a scan."""

from __future__ import annotations

import json
import os
import sys

import pytest

from torchdoctor.scan import ScanOptions, cache, engine, scan_paths

from .conftest import run_cli

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")

LIB = 'def load_model(path, device="cuda"):\n    return path\n'
CALLER_WITHOUT = "from lib import load_model\nm = load_model('w.pt')\n"
CALLER_WITH = "from lib import load_model\nm = load_model('w.pt', device='cpu')\n"


@pytest.fixture
def tree(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "lib.py").write_text(LIB)
    (src / "app.py").write_text(CALLER_WITHOUT)
    (src / "train.py").write_text("import torch\nm = Net().cuda()\n")
    return src


def _scan(src, cache_dir, **kw):
    opts = ScanOptions(cache=True, cache_dir=str(cache_dir), confidence="low", **kw)
    return scan_paths([str(src)], opts, jobs=1)


def _found(result):
    return sorted((os.path.basename(f.path), f.rule, f.confidence) for f in result.findings)


def test_second_run_analyses_no_file_and_finds_the_same(tree, tmp_path, monkeypatch):
    first = _scan(tree, tmp_path / "c")
    assert first.cache_hits == 0
    calls = []
    real = engine.analyze_source
    monkeypatch.setattr(engine, "analyze_source", lambda *a: calls.append(a[0]) or real(*a))
    second = _scan(tree, tmp_path / "c")
    assert calls == [] and second.cache_hits == 3
    assert _found(second) == _found(first)
    assert ("lib.py", "TD005", "high") in _found(second)


def test_an_edit_to_a_caller_changes_the_finding_in_the_unchanged_callee(tree, tmp_path):
    """Cross-file verdicts are never cached: lib.py's TD005 depends on app.py's call."""
    assert ("lib.py", "TD005", "high") in _found(_scan(tree, tmp_path / "c"))
    (tree / "app.py").write_text(CALLER_WITH)
    again = _scan(tree, tmp_path / "c")
    assert again.cache_hits == 2  # lib.py itself came from the cache...
    assert not [f for f in again.findings if f.rule == "TD005"]  # ...its verdict did not


def test_an_edit_of_the_same_size_and_time_is_seen(tree, tmp_path):
    """Keyed by content, not by mtime and size."""
    _scan(tree, tmp_path / "c")
    p = tree / "train.py"
    st = p.stat()
    p.write_text("import torch\nm = Net().cpu()\n"[: len(p.read_text())].ljust(len(p.read_text())))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "TD001" not in {f.rule for f in _scan(tree, tmp_path / "c").findings}


def test_other_options_do_not_reuse_the_records(tree, tmp_path):
    _scan(tree, tmp_path / "c")
    only = _scan(tree, tmp_path / "c", select=frozenset({"TD001"}))
    assert only.cache_hits == 0 and {f.rule for f in only.findings} == {"TD001"}


def test_a_changed_pyproject_is_a_different_configuration(tree, tmp_path):
    _scan(tree, tmp_path / "c")
    (tree / "pyproject.toml").write_text('[tool.torchdoctor.scan]\nignore = ["TD001"]\n')
    from torchdoctor.scan.config import config_for_dir

    config_for_dir.cache_clear()
    again = _scan(tree, tmp_path / "c")
    config_for_dir.cache_clear()
    assert "TD001" not in {f.rule for f in again.findings} and again.suppressed == 1


def test_cache_folder_is_tagged_and_ignored_by_git(tree, tmp_path):
    _scan(tree, tmp_path / "c")
    tag = (tmp_path / "c" / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (tmp_path / "c" / ".gitignore").read_text() == "*\n"
    (stored,) = (tmp_path / "c").glob("scan-*.json")
    assert json.loads(stored.read_text())["format"] == 1  # JSON, never a pickle


def test_a_corrupt_or_foreign_cache_is_ignored(tree, tmp_path):
    _scan(tree, tmp_path / "c")
    (stored,) = (tmp_path / "c").glob("scan-*.json")
    doc = json.loads(stored.read_text())
    for entry in doc["files"].values():
        entry["record"]["findings"] = [{"rule": "TD999"}]  # not what we wrote
    stored.write_text(json.dumps(doc))
    again = _scan(tree, tmp_path / "c")
    assert again.cache_hits == 0 and "TD001" in {f.rule for f in again.findings}
    stored.write_text("{not json")
    assert "TD001" in {f.rule for f in _scan(tree, tmp_path / "c").findings}


def test_an_unwritable_cache_folder_does_not_fail_the_scan(tree, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    result = _scan(tree, blocker / "c")
    assert "TD001" in {f.rule for f in result.findings} and not result.errors


def test_no_cache_neither_reads_nor_writes(tree, tmp_path):
    cache = tmp_path / "c"
    env = {"TORCHDOCTOR_CACHE_DIR": str(cache)}
    r = run_cli("scan", str(tree), "--no-cache", "--json", "--portable", env=env)
    assert r.returncode == 1 and not cache.exists()
    r = run_cli("scan", str(tree), "--json", "--portable", env=env)
    assert list(cache.glob("scan-*.json")) and json.loads(r.stdout)["findings"]


def test_runs_over_other_files_share_one_cache_file(tree, tmp_path):
    """A pre-commit hook names different files on every commit: one cache file, not one per
    set of paths, and each run keeps the entries of the others."""
    cache = tmp_path / "c"
    opts = ScanOptions(cache=True, cache_dir=str(cache))
    scan_paths([str(tree / "lib.py")], opts, jobs=1)
    scan_paths([str(tree / "train.py")], opts, jobs=1)
    assert len(list(cache.glob("scan-*.json"))) == 1
    again = scan_paths([str(tree / "lib.py"), str(tree / "train.py")], opts, jobs=1)
    assert again.cache_hits == 2
    (tree / "lib.py").unlink()
    scan_paths([str(tree / "train.py")], opts, jobs=1)
    (stored,) = cache.glob("scan-*.json")
    assert sorted(os.path.basename(p) for p in json.loads(stored.read_text())["files"]) == [
        "train.py"
    ]


def test_another_python_does_not_reuse_the_records(tree, tmp_path, monkeypatch):
    """A file that is `syntax error: expected '('` for Python 3.11 (`def f[T](…)`, PEP 695)
    parses on 3.12: a cache written by one interpreter is not read by another."""
    _scan(tree, tmp_path / "c")
    assert _scan(tree, tmp_path / "c").cache_hits == 3
    newer = (sys.version_info[0], sys.version_info[1] + 1, 0, "final", 0)
    monkeypatch.setattr(cache.sys, "version_info", newer)
    assert _scan(tree, tmp_path / "c").cache_hits == 0
