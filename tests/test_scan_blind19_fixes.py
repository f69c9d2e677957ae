"""What the nineteenth and twentieth blind corpora showed once scored (benchmarks/scan_blind19,
20; results-blind.md): loads whose options come from the callers' `**kwargs`, scripts whose
`--device` defaults to the CPU, and CUDA defaults that reach no tensor. Not blind: these rules
were written after seeing the scores."""

from __future__ import annotations

import pytest

from .scan_tree import scan_tree as scan

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")

DIST_UTIL = """
import io
import torch as th

def load_state_dict(path, **kwargs):
    with open(path, "rb") as f:
        data = f.read()
    return th.load(io.BytesIO(data), **kwargs)
"""


def test_forwarded_kwargs_without_weights_only_guided_diffusion_dist_util(tmp_path):
    """openai/guided-diffusion's dist_util.load_state_dict(path, **kwargs) ends in
    `th.load(io.BytesIO(data), **kwargs)`; every caller passes `map_location` and none
    `weights_only`, so a checkpoint from the command line is unpickled in full."""
    train = """
    from guided_diffusion import dist_util
    model.load_state_dict(dist_util.load_state_dict(args.model_path, map_location="cpu"))
    """
    found = scan(tmp_path, {"guided_diffusion/dist_util.py": DIST_UTIL, "train.py": train})
    assert ("guided_diffusion/dist_util.py", 8, "TD102", "high") in found


def test_forwarded_kwargs_whose_callers_pass_weights_only_are_quiet(tmp_path):
    train = """
    from guided_diffusion import dist_util
    sd = dist_util.load_state_dict(path, map_location="cpu", weights_only=True)
    """
    found = scan(tmp_path, {"guided_diffusion/dist_util.py": DIST_UTIL, "train.py": train})
    assert [f for f in found if f[2] == "TD102"] == []


def test_forwarded_kwargs_of_a_method_eai_vc_il_trainer_load_checkpoint(tmp_path):
    """facebookresearch/eai-vc's ILEnvTrainer.load_checkpoint(path, *args, **kwargs) returns
    `torch.load(checkpoint_path, *args, **kwargs)`; its one caller passes map_location only."""
    trainer = """
    import torch

    class ILEnvTrainer:
        def load_checkpoint(self, checkpoint_path, *args, **kwargs):
            return torch.load(checkpoint_path, *args, **kwargs)

        def _eval_checkpoint(self, checkpoint_path):
            ckpt_dict = self.load_checkpoint(checkpoint_path, map_location="cpu")
    """
    found = scan(tmp_path, {"il_trainer.py": trainer})
    assert ("il_trainer.py", 6, "TD102", "high") in found


def test_kwargs_that_are_not_the_functions_own_stay_quiet(tmp_path):
    """`torch.load(path, **opts)` with `opts` built inside: unsure what it holds, so quiet."""
    src = """
    import torch

    def load(path):
        opts = {"map_location": "cpu", "weights_only": True}
        return torch.load(path, **opts)
    """
    assert scan(tmp_path, {"m.py": src}) == []


OSX_DEMO = """
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", type=str, default="cpu", help="running on cpu only!")
args = parser.parse_args()
model = build(args).to(args.device)
osx = DataParallel(osx_model).cuda()
"""


def test_cuda_in_a_script_whose_device_defaults_to_cpu_grounded_sam_osx_demo(tmp_path):
    """IDEA-Research/Grounded-Segment-Anything's grounded_sam_osx_demo.py: `--device` defaults
    to "cpu" and the rest follows it, but the OSX model is moved with `.cuda()`: on a CPU
    machine, 'Torch not compiled with CUDA enabled'. A script meant for the CPU by default is
    not code written for its author's GPU."""
    found = scan(tmp_path, {"grounded_sam_osx_demo.py": OSX_DEMO})
    assert ("grounded_sam_osx_demo.py", 9, "TD001", "medium") in found
    cuda_default = OSX_DEMO.replace('default="cpu"', 'default="cuda"')
    found = scan(tmp_path, {"grounded_sam_osx_demo.py": cuda_default})
    assert ("grounded_sam_osx_demo.py", 9, "TD001", "low") in found


FROZEN_DATASET = """
class FrozenEmbeddingDataset:
    def __init__(self, paths, history_window=1, device: str = "cuda"):
        self.paths = paths
        self.device = device

    def __getitem__(self, index):
        features = self.paths[index]["embeddings"]
        # features = torch.from_numpy(features).float().to(self.device)
        return features
"""


def test_a_cuda_default_that_reaches_no_tensor_eai_vc_frozen_embedding_dataset(tmp_path):
    """facebookresearch/eai-vc's FrozenEmbeddingDataset keeps `device="cuda"` in
    `self.device` while the `.to(self.device)` lines are commented out: the default can make
    nothing fail, whoever leaves it out."""
    caller = "from train_loop import FrozenEmbeddingDataset\nd = FrozenEmbeddingDataset(p)\n"
    found = scan(tmp_path, {"train_loop.py": FROZEN_DATASET, "main.py": caller})
    assert [f for f in found if f[2] == "TD005"] == []


def test_the_same_default_read_in_another_method_is_still_reported(tmp_path):
    used = FROZEN_DATASET.replace("        # features = ", "        features = ")
    caller = "from train_loop import FrozenEmbeddingDataset\nd = FrozenEmbeddingDataset(p)\n"
    found = scan(tmp_path, {"train_loop.py": used, "main.py": caller})
    assert ("train_loop.py", 3, "TD005", "high") in found


def test_an_engine_importing_flash_attn_kernels_runs_on_cuda_only_index_tts_accel(tmp_path):
    """index-tts's accel/attention.py imports flash-attn at the top level, and its paged
    attention engine imports that file: neither can be imported without CUDA, so the engine's
    pinned `.cuda()` buffers are not pitfalls (26 of set 22's 26 false findings)."""
    attention = "import torch\nfrom flash_attn import flash_attn_varlen_func\n"
    engine = """
    import torch
    from .attention import flash_attn_varlen_func

    class AccelInferenceEngine:
        def prepare(self, input_ids):
            return torch.tensor(input_ids, pin_memory=True).cuda(non_blocking=True)
    """
    files = {"accel/__init__.py": "", "accel/attention.py": attention, "accel/engine.py": engine}
    found = scan(tmp_path, files)
    assert {f[3] for f in found} == {"low"}
    files["accel/attention.py"] = (
        "import torch\ntry:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"
    )
    assert ("accel/engine.py", 7, "TD001", "high") in scan(tmp_path, files)


def test_metric_sync_after_a_distributed_check_ml_aim_metric_logger(tmp_path):
    """apple/ml-aim's SmoothedValue.synchronize_between_processes returns unless
    `utils.is_dist_avail_and_initialized()`, then builds `device="cuda"` for an all_reduce:
    reached only in multi-GPU training."""
    src = """
    import torch
    import torch.distributed as dist
    from aim import utils

    class SmoothedValue:
        def synchronize_between_processes(self):
            if not utils.is_dist_avail_and_initialized():
                return
            t = torch.tensor([self.count, self.total], device="cuda")
            dist.all_reduce(t)
    """
    assert [f for f in scan(tmp_path, {"logger.py": src}) if f[3] != "low"] == []


def test_cuda_call_under_pin_memory_lama_vendored_dataloader(tmp_path):
    """advimman/lama's vendored DataLoader asks `torch.cuda.current_device()` only under
    `if self.pin_memory:`: pinned memory presumes the accelerator it is pinned for."""
    src = """
    import torch

    class DataLoaderIter:
        def start(self):
            if self.pin_memory:
                maybe_device_id = torch.cuda.current_device()
            else:
                maybe_device_id = None
    """
    assert [f for f in scan(tmp_path, {"dataloader.py": src}) if f[3] != "low"] == []


VAE_EPOCH = """
import numpy as np

class ConvVAETrainer:
    def train_epoch(self, epoch):
        losses = []
        for batch_idx in range(self.batches):
            loss = self.model.loss(self.get_batch())
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        {after}
"""


def test_losses_kept_as_epoch_statistics_are_shown_rlkit_vae_trainer(tmp_path):
    """rail-berkeley/rlkit's ConvVAETrainer appends `loss.item()` every batch, then stores
    `np.mean(losses)` in `self.eval_statistics`, the record its logger prints: a sync on
    purpose. Collected and never used, the same sync is worth a look (`medium`)."""
    kept = VAE_EPOCH.format(after='self.eval_statistics["train/loss"] = np.mean(losses)')
    assert ("trainer.py", 11, "TD402", "low") in scan(tmp_path, {"trainer.py": kept})
    dropped = VAE_EPOCH.format(after="self.losses = None")
    assert ("trainer.py", 11, "TD402", "medium") in scan(tmp_path, {"trainer.py": dropped})


def test_a_cuda_only_trainer_that_leaves_weights_only_out_still_counts(tmp_path):
    """A caller that starts NCCL runs on CUDA only, which discounts a CUDA default it leaves
    out, but not an unsafe load: `weights_only` is a security choice on every machine."""
    train = """
    import torch.distributed as dist
    from guided_diffusion import dist_util
    dist.init_process_group(backend="nccl")
    sd = dist_util.load_state_dict(path, map_location="cpu")
    """
    found = scan(tmp_path, {"guided_diffusion/dist_util.py": DIST_UTIL, "train.py": train})
    assert ("guided_diffusion/dist_util.py", 8, "TD102", "high") in found
