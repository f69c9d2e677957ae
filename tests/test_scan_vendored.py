"""Vendored code (third_party/, vendor/, extern/): its device findings are `low`, --portable or
not, because its maintainers are upstream. Blind labels behind it: pyslam's `thirdparty/`,
LLaMA-Factory's `third_party/`, threestudio's `extern/`, Qwen3-TTS-Demo's `vendor/` (1 crash
pitfall against 271 lookalikes over sets 3-224)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import PurePath

import pytest

from torchdoctor.scan import ScanOptions, scan_paths, vendored
from torchdoctor.scan.vendored import vendored_folder

from .conftest import run_cli
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


def _td001(paths: list[str]) -> dict[str, str]:
    result = scan_paths(paths, PORTABLE, jobs=1)
    return {os.path.relpath(f.path): f.confidence for f in result.findings if f.rule == "TD001"}


def test_files_pre_commit_names_one_by_one_are_judged_below_the_repository_root(
    tmp_path, monkeypatch
):
    # pre-commit runs `torchdoctor scan third_party/sim/net.py src/net.py` at the root.
    scan_tree(tmp_path, {"third_party/sim/net.py": MODEL, "src/net.py": MODEL}, PORTABLE)
    monkeypatch.chdir(tmp_path)
    named = _td001([os.path.join("third_party", "sim", "net.py"), os.path.join("src", "net.py")])
    assert named == _td001(["."])
    assert named == {
        os.path.join("src", "net.py"): "high",
        os.path.join("third_party", "sim", "net.py"): "low",
    }


def test_a_vendored_folder_named_on_the_command_line_is_judged_as_any_other(tmp_path, monkeypatch):
    scan_tree(tmp_path, {"third_party/sim/net.py": MODEL}, PORTABLE)
    monkeypatch.chdir(tmp_path)
    net = os.path.join("third_party", "sim", "net.py")
    assert _td001([os.path.join("third_party", "sim")]) == {net: "high"}
    # whichever comes first: the folder the user named decides, not the order of the walk
    assert _td001([os.path.join("third_party", "sim"), "."]) == {net: "high"}
    assert _td001([".", os.path.join("third_party", "sim")]) == {net: "high"}


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_a_link_in_3rdparty_to_the_projects_own_file_does_not_hide_its_finding(
    tmp_path, monkeypatch
):
    scan_tree(tmp_path, {"src/own.py": MODEL}, PORTABLE)
    (tmp_path / "3rdparty").mkdir()
    os.symlink(os.path.join("..", "src", "own.py"), tmp_path / "3rdparty" / "own.py")
    monkeypatch.chdir(tmp_path)
    assert list(_td001(["."]).values()) == ["high"]  # one file, whichever path reached it


def test_a_vendored_load_of_a_committed_gpu_checkpoint_keeps_its_proof(tmp_path, ckpts):
    # torch.load raises "Attempting to deserialize object on a CUDA device" there, vendored or not
    script = (
        "import os\nimport torch\nDIR = os.path.dirname(os.path.abspath(__file__))\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        'data = torch.load(os.path.join(DIR, "expert-data.pt"), weights_only=True)\n'
    )
    folder = tmp_path / "third_party" / "expert"
    folder.mkdir(parents=True)
    (folder / "bc.py").write_text(script)
    shutil.copy(ckpts / "cuda_state_dict.pt", folder / "expert-data.pt")
    result = scan_paths([str(tmp_path)], ScanOptions(), jobs=1)
    (f,) = [f for f in result.findings if f.rule == "TD101"]
    assert f.confidence == "high" and f.grounds.endswith(
        "expert-data.pt holds tensors saved on cuda:0"
    )


def test_fix_at_confidence_low_leaves_vendored_code_as_its_authors_wrote_it(tmp_path):
    fixable = (
        'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'
        "def f(x):\n    return x.cuda()\n"
    )
    for folder in ("src", "vendor"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "f.py").write_text(fixable)
    ran = run_cli("scan", ".", "--fix", "--confidence", "low", "--json", "--no-cache", cwd=tmp_path)
    assert "x.to(device)" in (tmp_path / "src" / "f.py").read_text()  # the project's own: fixed
    assert (tmp_path / "vendor" / "f.py").read_text() == fixable
    notes = {
        f["details"]["path"]: f["details"]["fix_note"] for f in json.loads(ran.stdout)["findings"]
    }
    assert (
        notes[os.path.join(".", "vendor", "f.py")]
        == "vendored code (vendor/): not edited, its fix belongs upstream"
    )


@pytest.mark.parametrize(
    ("relative", "folder"),
    [
        ("third_party/a/b.py", "third_party"),
        ("src/ThirdParty/b.py", "src/ThirdParty"),
        ("extern/nvdiffrast/ops.py", "extern"),
        ("external/ours.py", None),  # as often the project's own code in the corpora
        ("third_party.py", None),  # a file, not a folder
        ("models/vendor_utils.py", None),
        ("legacy/archive/ex.py", "legacy"),
        ("BACKUP/DataGenerationBACKUP.py", "BACKUP"),
        ("src/old_version/solver.py", "src/old_version"),
        ("archived_methods/train.py", "archived_methods"),
        ("archive_original_inference.py", None),  # a file, not a folder
        ("models/holdout/threshold.py", None),
        ("legacy_api/client.py", None),  # names what its code does
        ("backup_and_restore/run.py", None),
        ("text_generation/old_python_files/train.py", "text_generation/old_python_files"),
        ("legacy/third_party/lib/x.py", "legacy/third_party"),  # still another project's
        ("golden/model.py", None),
    ],
)
def test_vendored_folders(relative, folder):
    assert vendored_folder(PurePath(relative)) == folder


def test_every_vendored_name_passes_the_first_look():
    assert all(vendored._HINT.search(name) for name in vendored.VENDORED_DIRS)
    archived = ["legacy", "archive", "archives", "archived", "old", "_old", "deprecated"]
    archived += ["backup", "backups", "bak", "unused", "obsolete", "trash"]
    assert all(vendored._HINT.search(name) and vendored.archived(name) for name in archived)


def test_cuda_in_an_archived_legacy_folder_is_low_child_speech_emotion_recognition(tmp_path):
    """Xuzc317/child-speech-emotion-recognition's legacy/…/ex.py (blind set 350): `.cuda()`
    beside the file's own CPU fallback, seven lookalikes ("historical code (not maintained)",
    its README says); the load without weights_only there was labelled real and stays."""
    found = scan_tree(tmp_path, {"legacy/archive/ex.py": MODEL, "app/net.py": MODEL}, PORTABLE)
    by = {(path, rule): conf for path, _, rule, conf in found}
    assert by[("legacy/archive/ex.py", "TD001")] == "low"
    assert by[("app/net.py", "TD001")] == "high"
    assert by[("legacy/archive/ex.py", "TD102")] == "high"
    result = scan_paths([str(tmp_path)], PORTABLE, jobs=1)
    (f,) = [f for f in result.findings if f.rule == "TD001" and "legacy" in f.path]
    assert f.grounds.startswith("archived code (legacy/)")
    assert vendored.not_edited(f, "legacy") is None  # the project's own code: --fix may edit it


# DIPPI's trainer (blind set 344), as a copy would carry it: TD003 `high` in the project's own
# code, by the file's reasoning alone
SEVERAL_GPUS = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model):
    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
    else:
        print(torch.cuda.get_device_name(0))
    return model.to(device)
"""


def test_what_one_files_reasoning_proves_is_lowered_in_vendored_code(tmp_path):
    found = scan_tree(
        tmp_path, {"third_party/t/train.py": SEVERAL_GPUS, "src/train.py": SEVERAL_GPUS}
    )
    td003 = {path: conf for path, _, rule, conf in found if rule == "TD003"}
    assert td003 == {"src/train.py": "high", "third_party/t/train.py": "low"}


def test_a_trash_folder_is_archived_code_nmt_continual_learning(tmp_path):
    """salvacarrion/nmt-continual-learning's trash/train_inter.py 187 (set 411): a GPU-saved
    checkpoint loaded without map_location, labelled a lookalike ("code the project no longer
    runs"); its load without weights_only was labelled real and stays."""
    found = scan_tree(tmp_path, {"trash/ex.py": MODEL, "app/net.py": MODEL}, PORTABLE)
    by = {(path, rule): conf for path, _, rule, conf in found}
    assert by[("trash/ex.py", "TD001")] == "low" and by[("app/net.py", "TD001")] == "high"
    assert by[("trash/ex.py", "TD102")] == "high"
