"""TD203: `.module` of a model that DataParallel/DDP wraps only on some machines.

Each case is a shape from a public report: "AttributeError: 'Pix2PixHDModel' object has no
attribute 'module'" when run on the CPU only (NVIDIA/pix2pixHD#20), "'Generator' object has no
attribute 'module'" on a single GPU (yucornetto/MGMatting#24), and the blind corpora's trainers
(pytorch-deeplab-xception's train.py, decision-transformer's trainer_atari.py)."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source


def td203(src: str) -> list[int]:
    findings, _ = scan_source("trainer.py", textwrap.dedent(src), ScanOptions())
    return [f.line for f in findings if f.rule == "TD203"]


DEEPLAB_TRAINER = """
import torch

class Trainer:
    def __init__(self, args, model):
        self.model = model
        if args.cuda:
            self.model = torch.nn.DataParallel(self.model, device_ids=args.gpu_ids)
            self.model = self.model.cuda()
        if args.resume:
            if args.cuda:
                self.model.module.load_state_dict(torch.load(args.resume)["state_dict"])
            else:
                self.model.load_state_dict(torch.load(args.resume)["state_dict"])

    def validation(self, epoch):
        self.saver.save_checkpoint({"state_dict": self.model.module.state_dict()})
"""


def test_attributeerror_no_attribute_module_when_saving_a_cpu_run():
    # the read under `if args.cuda:` is safe; the checkpoint save after validation is not
    assert td203(DEEPLAB_TRAINER) == [17]


def test_message_names_the_condition_and_its_line():
    findings, _ = scan_source("t.py", textwrap.dedent(DEEPLAB_TRAINER), ScanOptions())
    (f,) = [f for f in findings if f.rule == "TD203"]
    assert "`args.cuda` (line 7)" in f.message and f.confidence == "high"
    assert f.level == "error"


def test_decision_transformer_hasattr_read_is_safe_and_the_bare_one_is_not():
    src = """
    import torch
    class Trainer:
        def __init__(self, model):
            self.model = model
            self.device = "cpu"
            if torch.cuda.is_available():
                self.device = torch.cuda.current_device()
                self.model = torch.nn.DataParallel(self.model).to(self.device)
        def optimizer(self):
            raw_model = self.model.module if hasattr(self.model, "module") else self.model
            return raw_model
        def get_returns(self, state):
            return sample(self.model.module, state, 1)
    """
    assert td203(src) == [14]


def test_single_gpu_device_count_wrap_then_module_in_a_function():
    src = """
    import torch
    from torch import nn
    def main(model, path):
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        train(model)
        torch.save(model.module.state_dict(), path)
    """
    assert td203(src) == [8]


def test_yolov7_is_parallel_test_on_the_model_itself_is_a_guard():
    src = """
    def train(model, cuda, rank):
        if cuda and rank == -1 and torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        ckpt = {"model": deepcopy(model.module if is_parallel(model) else model).half()}
    """
    assert td203(src) == []


def test_wrapped_on_every_path_ddp_or_dataparallel():
    src = """
    def build(model, args):
        if args.distributed:
            model = DDP(model, device_ids=[args.gpu])
        else:
            model = torch.nn.DataParallel(model)
        return model.module
    """
    assert td203(src) == []


# DataParallel without visible GPUs still wraps (device_ids=[]): `.module` exists; a wrap under
# a test about something else is not judged.
QUIET_WRAPS = {
    "unconditional": "model = torch.nn.DataParallel(model)",
    "other_test": "if args.parallel:\n            model = torch.nn.DataParallel(model)",
}


@pytest.mark.parametrize("wrap", QUIET_WRAPS.values(), ids=QUIET_WRAPS.keys())
def test_wraps_that_keep_module_or_are_not_about_devices(wrap: str):
    src = f"""
    def build(model, args):
        {wrap}
        return model.module
    """
    assert td203(src) == []


def test_ddp_inside_its_own_branch_then_module_under_the_same_flag():
    src = """
    def main(args, model):
        model_without_ddp = model
        if args.distributed:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
            model_without_ddp = model.module
        if args.distributed:
            sd = model.module.state_dict()
        return model_without_ddp
    """
    assert td203(src) == []


def test_read_inside_try_that_catches_attributeerror():
    src = """
    def save(model, path):
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        try:
            sd = model.module.state_dict()
        except AttributeError:
            sd = model.state_dict()
        torch.save(sd, path)
    """
    assert td203(src) == []


def test_read_before_the_wrap_in_the_same_function():
    src = """
    def setup(model):
        inner = model.module
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        return inner
    """
    assert td203(src) == []


def test_attribute_of_another_object_is_left_to_its_own_file():
    src = """
    def setup(args):
        if args.cuda:
            args.model = torch.nn.DataParallel(args.model)
        return args.model.module
    """
    assert td203(src) == []


def test_script_global_wrap_is_matched_at_the_top_level_only():
    src = """
    import torch
    model = build()
    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
    def save(model, path):
        torch.save(model.module.state_dict(), path)
    torch.save(model.module.state_dict(), "last.pt")
    """
    assert td203(src) == [8]
