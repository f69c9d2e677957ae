"""False findings of the blind sets 153-160 (nineteenth session): each test reproduces the
public code the labellers judged, reduced to what decides the finding."""

from __future__ import annotations

from torchdoctor.scan import ScanOptions, scan_paths

from .scan_tree import scan_tree as scan

# --portable: the rules' own confidence, before the calibration lowers whole classes
OWN = ScanOptions(confidence="low", portable=True)

DDS_SLAM_ENCODINGS = """
import torch
import tinycudann as tcnn


def get_encoder(encoding, input_dim=3):
    return tcnn.Encoding(n_input_dims=input_dim, encoding_config={"otype": encoding})
"""
DDS_SLAM_SCENE_REP = """
import torch
from .encodings import get_encoder


class JointEncoding(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_fn = get_encoder(config["encoding"])
"""
DDS_SLAM_MAIN = """
import torch
from model.scene_rep import JointEncoding


class CoSLAM:
    def __init__(self, config):
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        self.model = JointEncoding(config).to(self.device)

    def save_state_dict(self, save_path):
        torch.save(self.model.state_dict(), save_path)

    def load(self, load_path):
        self.model.load_state_dict(torch.load(load_path, weights_only=True))
"""


def test_slam_built_on_tiny_cuda_nn_runs_on_cuda_only_dds_slam(tmp_path):
    """DDS-SLAM's model imports tiny-cuda-nn's hash grids (NVIDIA GPUs only), and ddsslam.py
    imports the model: its `torch.load` of a checkpoint it saved itself cannot reach a machine
    without CUDA, so the missing `map_location` is not a pitfall there (set 154, two false
    TD101 findings)."""
    files = {
        "model/__init__.py": "",
        "model/encodings.py": DDS_SLAM_ENCODINGS,
        "model/scene_rep.py": DDS_SLAM_SCENE_REP,
        "ddsslam.py": DDS_SLAM_MAIN,
    }
    found = [f for f in scan(tmp_path, files, OWN) if f[2] == "TD101"]
    assert found == [("ddsslam.py", 15, "TD101", "low")]
    # with the hash grid imported optionally, the same load is reported as before
    files["model/encodings.py"] = DDS_SLAM_ENCODINGS.replace(
        "import tinycudann as tcnn",
        "try:\n    import tinycudann as tcnn\nexcept ImportError:\n    tcnn = None",
    )
    assert [f[3] for f in scan(tmp_path, files, OWN) if f[2] == "TD101"] != ["low"]


def test_the_reason_names_the_kernel_package_gsplat_renderer(tmp_path):
    """gaussian-splatting-lightning's renderers import gsplat, which has no CPU or MPS kernels
    (nerfstudio-project/gsplat#635, #163): the low finding says which package makes it so."""
    from torchdoctor.scan.cuda_only import cuda_only_reason

    assert cuda_only_reason("from gsplat import rasterization\n") == (
        "the file imports gsplat: it runs on CUDA only"
    )
    assert cuda_only_reason("import cupy as cp\n") == "the file imports CuPy: it runs on CUDA only"
    # an optional import, indented under `try`, leaves a way around it
    assert cuda_only_reason("try:\n    import cupy\nexcept ImportError:\n    pass\n") is None
    # nor is another package whose name begins the same way
    assert cuda_only_reason("import cupy_stub\n") is None


THREE_D_VLA_TRAINER = """
import torch


class BaseTrainMeta:
    def log_env(self):
        gpu_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""
        print(gpu_name)

    def prepare_batch(self, sample, instr):
        return self.tokenizer(instr).cuda(non_blocking=True)
"""


def test_a_gpu_name_for_the_log_is_no_cpu_fallback_3d_vla_trainer(tmp_path):
    """3d-vla's trainer logs `torch.cuda.get_device_name(0) if torch.cuda.is_available() else
    ""`: that picks a string for a log line, not the CPU to run on, so the file's `.cuda()` is
    not read as contradicting the file's own fallback (set 156, three false findings): its
    class is the one of files without a CPU fallback."""

    def judged(folder, text: str) -> tuple[str, str]:
        (folder / "lib").mkdir(parents=True)
        (folder / "lib" / "meta.py").write_text(text)
        found = scan_paths([str(folder)], ScanOptions(confidence="low"), jobs=1).findings
        (f,) = [f for f in found if f.rule == "TD001"]
        return f.confidence, f.grounds or ""

    confidence, grounds = judged(tmp_path / "a", THREE_D_VLA_TRAINER)
    assert confidence == "low" and "TD001 findings in files without a CPU fallback" in grounds
    # with a real fallback the `.cuda()` contradicts the file: its class is shown (sets 3-379)
    falls_back = THREE_D_VLA_TRAINER.replace('else ""', 'else "cpu"')
    assert judged(tmp_path / "b", falls_back)[0] == "high"


def test_a_class_in_a_trainers_folder_is_training_code_3d_vla(tmp_path):
    """3d-vla's utils/trainers/base.py: a trainer class, named by its folder rather than its
    file, is written for the GPUs it trains on like a train.py (set 156)."""
    model = THREE_D_VLA_TRAINER
    in_models = scan(tmp_path / "a", {"utils/models/base.py": model}, OWN)
    in_trainers = scan(tmp_path / "b", {"utils/trainers/base.py": model}, OWN)
    assert ("utils/models/base.py", 11, "TD001", "low") not in in_models
    assert ("utils/trainers/base.py", 11, "TD001", "low") in in_trainers
    # a folder above the project says nothing of it: only the file's own folder counts
    assert ("training/utils/models/base.py", 11, "TD001", "low") not in scan(
        tmp_path / "c", {"training/utils/models/base.py": model}, OWN
    )
