"""Loads the blind corpora labelled lookalikes after the table of sets 3-200 was made (read
again from sets 153-200 of benchmarks/scan_blind*): files that hold no CUDA tensors, and
weights found from the loading code's own file."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source


def found(src: str) -> list[tuple[str, int]]:
    findings, _ = scan_source("model.py", textwrap.dedent(src), ScanOptions(confidence="low"))
    return [(f.rule, f.line) for f in findings]


def _restore(load: str) -> str:
    return f"""
    import os
    import torch

    def restore(args, checkpoint, unpacked, model_args, history_dir):
        return {load}
    """


@pytest.mark.parametrize(
    "load",
    [
        'torch.load(os.path.join(checkpoint, "model_args.bin"))',  # vec2text's analyze_utils.py
        "torch.load(f'{unpacked}/stats.pt')",  # a MAPPO runner's episode statistics
        "torch.load(args.history_path)['history']",  # DiffBinaural's loss history
    ],
)
def test_args_statistics_and_history_files_hold_no_cuda_tensors(load):
    """map_location is moot for a file of Python numbers; weights_only still matters."""
    assert found(_restore(load)) == [("TD102", 6)]


@pytest.mark.parametrize(
    "load",
    [
        'torch.load(os.path.join(model_args.model_name_or_path, "pytorch_model.bin"))',
        'torch.load(f"{history_dir}/best_model.pt")',
        "torch.load(args.history_path)",
    ],
)
def test_the_same_words_as_variable_names_say_nothing_of_the_file(load):
    """A Hugging Face `model_args` namespace or a `history_dir` folder holds any checkpoint."""
    assert ("TD101", 6) in found(_restore(load))


def test_a_checkpoint_whose_name_merely_contains_args_is_still_flagged():
    """`args.checkpoint` is the argparse namespace, not an `*_args` file (air-hockey-rl's
    rma.py, set 153: a real crash)."""
    src = """
    import torch

    def restore(agent, args):
        agent.load_state_dict(torch.load(args.checkpoint))
    """
    assert ("TD101", 5) in found(src)


def test_weights_beside_the_code_found_with_inspect_getfile_lpips():
    """The LPIPS copy in Video-Diffusion-Models (set 190) finds its linear layers' weights from
    `inspect.getfile(self.initialize)`: shipped with the code, like a path from `__file__`."""
    src = """
    import inspect
    import os
    import torch

    class DistModel:
        def initialize(self, net, version):
            model_path = os.path.abspath(
                os.path.join(inspect.getfile(self.initialize), "..", f"weights/v{version}/{net}.pth")
            )
            self.net.load_state_dict(torch.load(model_path), strict=False)
    """
    assert found(src) == []


def test_a_user_path_beside_inspect_elsewhere_is_still_flagged():
    src = """
    import inspect
    import torch

    def load(path):
        print(inspect.getfile(load))
        return torch.load(path)
    """
    assert {rule for rule, _ in found(src)} == {"TD101", "TD102"}


def test_a_function_named_getfile_from_elsewhere_is_no_package_anchor():
    src = """
    import torch
    from mylib.hub import getfile

    def load(url):
        return torch.load(getfile(url))
    """
    assert {rule for rule, _ in found(src)} == {"TD101", "TD102"}
