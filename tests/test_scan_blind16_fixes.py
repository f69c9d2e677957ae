"""What the sixteen labelled corpora showed after sets 15 and 16, each in the shape of the real
code: a test that runs off CUDA is no guard, TensorRT branches, device names, factories in
`forward` that meet no input, self-written CPU files, MetricLogger loops, metrics dicts, CPU
branches and export wrappers (benchmarks/scan_blind*, docs/scan-precision.md)."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan import ScanOptions, scan_paths

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")


def scan(tmp_path, text: str, name: str = "mod.py") -> list[tuple[int, str, str]]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1)
    return sorted((f.line, f.rule, f.confidence) for f in result.findings)


REGISTER_BUFFER = """
import torch

class DDIMSampler(object):
    def register_buffer(self, name, attr):
        if type(attr) == torch.Tensor:
            if attr.device {op} torch.device("cuda"):
                attr = attr.to(torch.device("cuda"))
        setattr(self, name, attr)
"""


def test_torch_not_compiled_with_cuda_enabled_in_ddim_register_buffer(tmp_path):
    """CompVis stable-diffusion's DDIMSampler.register_buffer moves every schedule tensor to
    "cuda" when it is *not* there: txt2img on a Mac raises "Torch not compiled with CUDA
    enabled". `x.device != cuda` is true off CUDA, so it guards nothing."""
    assert scan(tmp_path, REGISTER_BUFFER.format(op="!=")) == [(8, "TD002", "high")]


def test_a_test_that_holds_on_cuda_still_guards(tmp_path):
    assert scan(tmp_path, REGISTER_BUFFER.format(op="==")) == []


def test_a_tensorrt_branch_runs_on_nvidia_gpus_only_streamdiffusion_wrapper(tmp_path):
    text = """
    import torch

    class StreamDiffusionWrapper:
        def _load_model(self, stream, acceleration="tensorrt"):
            if acceleration == "tensorrt":
                vae_encoder = TorchVAEEncoder(stream.vae).to(torch.device("cuda"))
            return stream
    """
    assert scan(tmp_path, text) == []


def test_a_name_for_the_cuda_device_is_not_a_placement_invokeai_devices(tmp_path):
    """InvokeAI's devices.py defines CPU_DEVICE, CUDA_DEVICE and MPS_DEVICE and picks among
    them: `torch.device("cuda")` constructs on any machine; a use of the name may fail."""
    text = """
    import torch

    CPU_DEVICE = torch.device("cpu")
    CUDA_DEVICE = torch.device("cuda")

    def move(x):
        return x.to(torch.device("cuda"))
    """
    assert scan(tmp_path, text) == [(5, "TD002", "low"), (8, "TD002", "low")]


FORWARD = """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x, masked_input):
        h = self.proj(x)
        noise = torch.randn(h.shape[0], 4)
        out = h + noise
        out = torch.cat([out, torch.zeros(h.shape[0], 1)], dim=1)
        batch = torch.arange(masked_input.shape[0]).unsqueeze(-1)
        crops = torch.tensor([t.shape[-1] for t in x])
        scale = x.shape[0] * torch.ones(1)
        return out, batch, crops, scale
"""


def test_a_forward_factory_that_meets_an_input_is_shown_one_that_does_not_is_low(tmp_path):
    """Expected device mismatch `h + torch.randn(…)` on a GPU model: shown. vit-pytorch's MPP
    batch index, dino's crop counts and a shape product meet no input: `low`."""
    assert scan(tmp_path, FORWARD) == [
        (8, "TD302", "medium"),
        (10, "TD302", "medium"),
        (11, "TD302", "low"),
        (12, "TD302", "low"),
        (13, "TD302", "low"),
    ]


LOGITS_CACHE = """
import torch

if __name__ == "__main__":
    logit_file = args.output_dir + "/logits.pth"
    if os.path.isfile(logit_file):
        logits = torch.load(logit_file, weights_only=True)
    else:
        logits = torch.empty(len(images), len(tags){device})
        for i, imgs in enumerate(loader):
            logits[i] = model(imgs.to(device)).cpu()
        torch.save(logits, logit_file)
"""


def test_a_file_the_script_saved_from_a_cpu_tensor_needs_no_map_location(tmp_path):
    """recognize-anything's batch_inference.py caches `logits = torch.empty(n, k)`, filled
    with `out.cpu()` rows, and loads it back on the next run."""
    assert scan(tmp_path, LOGITS_CACHE.format(device="")) == []


def test_the_same_load_of_a_file_saved_from_the_gpu_is_still_reported(tmp_path):
    found = scan(tmp_path, LOGITS_CACHE.format(device=', device="cuda"'))
    assert [r for _, r, _ in found] == ["TD101", "TD002"]


def test_a_metric_logger_loop_syncs_for_its_own_timing_dino_main_dino(tmp_path):
    """torchvision's reference MetricLogger.log_every (copied into DETR, DINO, DeiT) times
    each iteration; dino's train_one_epoch syncs at its end for that."""
    text = """
    import torch

    def train_one_epoch(model, loader, optimizer, metric_logger):
        for it, (images, _) in enumerate(metric_logger.log_every(loader, 10, "Epoch")):
            loss = model(images)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()
    """
    assert [f for f in scan(tmp_path, text) if f[1] == "TD402"] == []


def test_a_metrics_dict_made_numbers_for_logging_is_low_jukebox_train(tmp_path):
    text = """
    def train(model, loader, opt, logger):
        for x in loader:
            loss, metrics = model(x)
            loss.backward()
            opt.step()
            for key, val in metrics.items():
                metrics[key] = val.item()
            logger.log(metrics)
    """
    assert scan(tmp_path, text) == [(8, "TD402", "low")]


LOGREG = """
import torch

_CPU_DEVICE = torch.device("cpu")

class LogRegModule(torch.nn.Module):
    def fit(self, train_features, train_labels):
        train_features = train_features.to(dtype=self.dtype, device=self.device)
        if self.device {op} _CPU_DEVICE:
            train_features = train_features.numpy()
        self.estimator.fit(train_features, train_labels)
"""


def test_numpy_under_a_cpu_test_is_a_host_tensor_dinov2_log_regression(tmp_path):
    """dinov2's eval/log_regression.py converts to NumPy only `if self.device ==
    _CPU_DEVICE:` (cuML takes CUDA tensors, sklearn NumPy arrays)."""
    assert scan(tmp_path, LOGREG.format(op="==")) == []


def test_numpy_under_the_opposite_test_is_still_can_t_convert_cuda_device_type_tensor(tmp_path):
    assert scan(tmp_path, LOGREG.format(op="!=")) == [(10, "TD403", "high")]


def test_a_tensor_attribute_of_an_onnx_export_wrapper_is_low_yolov7_experimental(tmp_path):
    text = """
    import torch
    from torch import nn

    class ONNX_TRT(nn.Module):
        def __init__(self, max_obj=100, device=None):
            super().__init__()
            self.max_obj = torch.tensor([max_obj]).to(device)

        def forward(self, x):
            return x * self.max_obj

    class Normalize(nn.Module):
        def __init__(self, device=None):
            super().__init__()
            self.mean = torch.tensor([[104.0], [117.0], [123.0]]).to(device)

        def forward(self, x):
            return x - self.mean
    """
    assert scan(tmp_path, text) == [(8, "TD301", "low"), (16, "TD301", "medium")]


SAMPLE_GRID = """
import torch

def train(model, vae, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        samples = vae.decode(batch)
        image = samples.mul(255).clamp_(0, 255).permute(1, 2, 0).to("cpu", {dtype}).numpy()
"""


def test_numpy_of_an_image_made_uint8_cannot_require_grad_pixart_train_latents(tmp_path):
    """PixArt's train_latents.py writes sample grids: an integer tensor never requires grad,
    so `.numpy()` works (after the eighteenth blind scoring; a lookalike there)."""
    assert scan(tmp_path, SAMPLE_GRID.format(dtype="torch.uint8")) == []


def test_numpy_of_a_float_sample_still_can_t_call_numpy_on_tensor_that_requires_grad(tmp_path):
    assert scan(tmp_path, SAMPLE_GRID.format(dtype="torch.float32")) == [(10, "TD401", "medium")]


def test_numpy_of_the_loaders_inputs_needs_no_detach_sam_hq_train(tmp_path):
    """sam-hq's train.py unpacks `inputs, labels = data["image"], data["label"]`, moves them
    to CUDA and draws boxes from `inputs.cpu().numpy()`: input data never requires grad."""
    text = """
    import torch

    def main(net, loader, optimizer):
        for data in loader:
            inputs, labels = data["image"], data["label"]
            if torch.cuda.is_available():
                inputs = inputs.cuda()
            imgs = inputs.permute(0, 2, 3, 1).cpu().numpy()
            masks = net(imgs)
            masks.{sum}.backward()
            optimizer.step()
            out = masks.cpu().numpy()
    """
    assert scan(tmp_path, text.replace("{sum}", "sum()")) == [(13, "TD401", "medium")]
