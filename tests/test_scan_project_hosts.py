"""Who runs a file decides whether its CUDA assumptions are pitfalls (scan/project.py,
cuda_only.py): a main.py that falls back to the CPU runs the agents it imports there; a Cog
predictor and an NCCL trainer run on the GPU their deployment asks for, so a CUDA default they
leave out is the machine, not a bug. Named after the eighteen blind corpora's cases."""

from __future__ import annotations

import pytest

from .scan_tree import scan_tree as scan

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")

BUILDER = """
def load_pretrained_model(model_path, model_base, device="cuda"):
    return model_path
"""

COG_PREDICTOR = """
from cog import BasePredictor
from builder import load_pretrained_model

class Predictor(BasePredictor):
    def setup(self):
        self.model = load_pretrained_model("liuhaotian/llava-v1.5-13b", None)
"""


def test_a_cog_predictor_that_leaves_device_out_runs_on_its_gpu_llava_predict(tmp_path):
    """haotian-liu/LLaVA's predict.py (Replicate) calls `load_pretrained_model` without
    `device=`: its cog.yaml asks for a GPU, so the default is the machine. The CLI that passes
    `device=args.device` leaves no call that could reach CUDA by mistake: nothing reported."""
    cli = "from builder import load_pretrained_model\nm = load_pretrained_model(p, b, device=d)\n"
    found = scan(tmp_path, {"builder.py": BUILDER, "predict.py": COG_PREDICTOR, "cli.py": cli})
    assert [f for f in found if f[2] == "TD005"] == []


def test_a_plain_script_that_leaves_device_out_still_makes_it_high(tmp_path):
    """The same builder called without `device=` from a demo a Mac user runs: 'Torch not
    compiled with CUDA enabled'. Only the predictor's call is discounted."""
    demo = "from builder import load_pretrained_model\nm = load_pretrained_model(p, b)\n"
    found = scan(tmp_path, {"builder.py": BUILDER, "predict.py": COG_PREDICTOR, "demo.py": demo})
    assert ("builder.py", 2, "TD005", "high") in found


def test_a_cog_predictors_own_cuda_default_is_low_voicecraft_predict(tmp_path):
    """jasonppy/VoiceCraft's predict.py defines `__init__(…, device="cuda")` and calls it
    without: a Cog predictor, built into the GPU container its cog.yaml describes."""
    predictor = """
    from cog import BasePredictor

    class Aligner:
        def __init__(self, model_name, device="cuda"):
            self.model = load_align_model(model_name).to(device)

    class Predictor(BasePredictor):
        def setup(self):
            self.aligner = Aligner("whisperx")
    """
    found = scan(tmp_path, {"predict.py": predictor})
    assert found == [("predict.py", 5, "TD005", "low")]


def test_callers_cannot_raise_a_default_in_a_file_that_runs_on_cuda_only_chattts_vllm(tmp_path):
    """2noise/ChatTTS's velocity/model_runner.py imports vLLM's engine internals (CUDA only):
    its `device="cuda"` default stays low even where another file calls it without `device=`."""
    runner = """
    from vllm.model_executor import set_random_seed

    def _make_tensor(data, device="cuda"):
        return data
    """
    caller = "from model_runner import _make_tensor\nt = _make_tensor(x)\n"
    found = scan(tmp_path, {"model_runner.py": runner, "sampler.py": caller})
    assert found == [("model_runner.py", 4, "TD005", "low")]


DEVICE_OPTION = """
import argparse
import torch

def decode_video(encoded_tensor_path, dtype, device):
    encoded_frames = torch.load(encoded_tensor_path, weights_only=True).to(device)
    return encoded_frames

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cuda")
"""


def test_gpu_saved_latents_under_a_device_option_cogvideo_cli_vae_demo(tmp_path):
    """THUDM/CogVideo's cli_vae_demo.py: `--device cpu` loads latents encoded on a GPU with
    a bare `torch.load`: 'Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False'."""
    found = scan(tmp_path, {"cli_vae_demo.py": DEVICE_OPTION})
    assert ("cli_vae_demo.py", 6, "TD101", "medium") in found


def test_a_trainers_device_option_names_its_gpus_sam_hq_train(tmp_path):
    """SysCV/sam-hq's train/train.py has `--device` (default "cuda") but builds DDP on the
    GPU of its rank: training code, written for the GPUs it trains on; the load stays low."""
    found = scan(tmp_path, {"train.py": DEVICE_OPTION})
    assert ("train.py", 6, "TD101", "low") in found
