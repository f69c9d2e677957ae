"""Which files a scan reads (engine.iter_files): each file once however it is reached, test
files skipped by where they are relative to the folder scanned, and a warm run over an
unchanged tree that leaves its cache file as it was."""

from __future__ import annotations

import os

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import iter_files


def _walk(root, include_tests=False):
    return [
        (os.path.relpath(p, root), skipped) for p, skipped in iter_files([str(root)], include_tests)
    ]


def test_a_file_linked_beside_itself_is_read_once(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    assert _walk(tmp_path) == [("a.py", False)]


def test_a_folder_reached_through_a_linked_root_is_read_once(tmp_path):
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "alias").symlink_to(real)
    found = list(iter_files([str(real), str(tmp_path / "alias")], False))
    assert [os.path.relpath(p, tmp_path) for p, _ in found] == [os.path.join("real", "pkg", "m.py")]


def test_test_files_are_skipped_by_their_place_under_the_scanned_folder(tmp_path):
    root = tmp_path / "tests"  # the folder scanned is named tests: its files are not skipped
    (root / "pkg" / "testing").mkdir(parents=True)
    (root / "model.py").write_text("x = 1\n")
    (root / "test_model.py").write_text("x = 1\n")
    (root / "pkg" / "testing" / "helpers.py").write_text("x = 1\n")
    assert _walk(root) == [
        ("model.py", False),
        ("test_model.py", True),
        (os.path.join("pkg", "testing", "helpers.py"), True),
    ]
    assert {skipped for _, skipped in _walk(root, include_tests=True)} == {False}


def test_a_warm_run_over_an_unchanged_tree_does_not_rewrite_its_cache(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("import torch\nm = Net().cuda()\n")
    opts = ScanOptions(cache=True, cache_dir=str(tmp_path / "c"))
    scan_paths([str(src)], opts, jobs=1)
    (stored,) = (tmp_path / "c").glob("scan-*.json")
    before = stored.stat()
    assert scan_paths([str(src)], opts, jobs=1).cache_hits == 1
    after = stored.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    (src / "train.py").write_text("import torch\nm = Net().cpu()\n")
    scan_paths([str(src)], opts, jobs=1)
    assert stored.stat().st_ino != before.st_ino  # an edit is stored (atomic_write: a new file)


def test_the_nodes_the_walk_skips_have_no_visitor_of_their_own():
    """Context skips names, constants and operators without visiting them: a `visit_Name`
    added later would never run, so none may exist (ast.NodeVisitor's own `visit_Constant`
    only forwards to the deprecated `visit_Num` and the like, which Context does not have)."""
    import ast

    from torchdoctor.scan.context import LEAVES, Context

    def own(name: str) -> bool:
        return getattr(Context, name, None) not in (None, getattr(ast.NodeVisitor, name, None))

    assert ast.Name in LEAVES and ast.Constant in LEAVES
    assert not [k for k in LEAVES if own("visit_" + k.__name__)]
    assert not [
        m for m in ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant") if own(m)
    ]
