"""Vendored code (third_party/, vendor/, extern/): its device findings are `low`, --portable or
not, because its maintainers are upstream. Blind labels behind it: pyslam's `thirdparty/`,
LLaMA-Factory's `third_party/`, threestudio's `extern/`, Qwen3-TTS-Demo's `vendor/` (1 crash
pitfall against 271 lookalikes over sets 3-224)."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.vendored import vendored_folder

from .scan_tree import scan_tree

# A library class whose forward hard-codes CUDA, in a file that falls back to the CPU: `high` by
# the rule's own reasoning, the case --portable shows.
MODEL = """\
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Net(torch.nn.Module):
    def forward(self, x):
        return x.cuda()


def load(path):
    return torch.load(path, map_location=DEVICE)
"""
PORTABLE = ScanOptions(confidence="low", portable=True)


def test_cuda_in_pyslams_thirdparty_is_low_even_with_portable(tmp_path):
    found = scan_tree(
        tmp_path, {"thirdparty/orbslam/net.py": MODEL, "pyslam/net.py": MODEL}, PORTABLE
    )
    cuda = {path: conf for path, _, rule, conf in found if rule == "TD001"}
    assert cuda == {"pyslam/net.py": "high", "thirdparty/orbslam/net.py": "low"}


def test_the_grounds_name_the_vendored_folder(tmp_path):
    (tmp_path / "src" / "third_party" / "sim").mkdir(parents=True)
    (tmp_path / "src" / "third_party" / "sim" / "net.py").write_text(MODEL)
    result = scan_paths([str(tmp_path)], PORTABLE, jobs=1)
    (f,) = [f for f in result.findings if f.rule == "TD001"]
    assert f.confidence == "low" and "vendored code (src/third_party/)" in f.grounds


def test_an_unsafe_torch_load_in_vendored_code_keeps_its_confidence(tmp_path):
    # The file it loads is as untrusted as anywhere: the security finding stays.
    found = scan_tree(tmp_path, {"vendor/lib/net.py": MODEL})
    assert ("vendor/lib/net.py", 12, "TD102", "high") in found


def test_a_project_kept_in_a_folder_named_vendor_is_not_vendored_code(tmp_path):
    # Only the folders below the scanned one count: ~/vendor/myproj is the user's own project.
    root = tmp_path / "vendor" / "myproj"
    found = scan_tree(root, {"net.py": MODEL}, PORTABLE)
    assert ("net.py", 8, "TD001", "high") in found


def test_a_vendored_file_named_on_the_command_line_is_judged_as_any_other(tmp_path):
    path = tmp_path / "third_party" / "net.py"
    path.parent.mkdir()
    path.write_text(MODEL)
    result = scan_paths([str(path)], PORTABLE, jobs=1)
    assert [f.confidence for f in result.findings if f.rule == "TD001"] == ["high"]


@pytest.mark.parametrize(
    ("relative", "folder"),
    [
        ("third_party/a/b.py", "third_party"),
        ("src/ThirdParty/b.py", "src/ThirdParty"),
        ("extern/nvdiffrast/ops.py", "extern"),
        ("external/ours.py", None),  # as often the project's own code in the corpora
        ("third_party.py", None),  # a file, not a folder
        ("models/vendor_utils.py", None),
    ],
)
def test_vendored_folders(relative, folder):
    assert vendored_folder(PurePath(relative)) == folder
