"""What sets 73-80 of the blind corpora showed (benchmarks/scan_blind73..80): unsafe loads the
scan did not see, each in the shape of the real code."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source


def found(src: str) -> list[tuple[str, int]]:
    findings, _ = scan_source("model.py", textwrap.dedent(src), ScanOptions(confidence="low"))
    return [(f.rule, f.line) for f in findings]


def test_model_zoo_imported_as_a_module_alias_pytorch_retinanet():
    """pytorch-retinanet's resnet builders: `import torch.utils.model_zoo as model_zoo`, then
    `model_zoo.load_url(url)` unpickles the download (set 76: five security rows missed)."""
    src = """
    import torch.utils.model_zoo as model_zoo

    def resnet18(model, url):
        model.load_state_dict(model_zoo.load_url(url, model_dir="."), strict=False)
    """
    assert ("TD102", 5) in found(src)


def test_a_module_alias_of_another_package_is_not_torch():
    src = """
    import mylib.utils.model_zoo as model_zoo

    def resnet18(model, url):
        model.load_state_dict(model_zoo.load_url(url))
    """
    assert found(src) == []


EDSR_LOAD = """
import os
import torch

class Model:
    def load(self, apath, cpu=False):
        if cpu:
            kwargs = {{'map_location': lambda storage, loc: storage}}
        else:
            kwargs = {{}}
        self.model.load_state_dict(
            torch.load(os.path.join(apath, 'model', 'model_latest.pt'), **kwargs)
        )
"""


def test_load_with_a_local_kwargs_dict_edsr_rcan_model_init():
    """RCAN's model/__init__.py (EDSR's, copied in many super-resolution repositories):
    `torch.load(path, **kwargs)` where `kwargs` is `{'map_location': …}` or `{}`. weights_only
    is in neither (set 73: eight security rows missed); map_location is in one branch, so
    TD101 says nothing."""
    assert found(EDSR_LOAD.format()) == [("TD102", 12)]


def test_local_kwargs_dict_with_weights_only_is_an_explicit_choice():
    src = EDSR_LOAD.replace("{{}}", "{{'weights_only': True}}").replace(
        "storage}}", "storage, 'weights_only': True}}"
    )
    assert found(src.format()) == []


def test_kwargs_built_from_something_else_stay_unknown():
    src = """
    import torch

    def load(path, cfg):
        kwargs = dict(cfg.load_options)
        return torch.load(path, **kwargs)
    """
    assert found(src) == []


def test_keys_added_to_the_local_dict_count_lpips_dist_model():
    """LPIPS's dist_model.py (in stylegan2-pytorch, fourth blind corpus): `kw = {}`, then
    `kw['map_location'] = 'cpu'` on the CPU; a `kw['weights_only']` would be a choice."""
    src = """
    import torch

    def load(net, model_path, use_gpu):
        kw = {}
        if not use_gpu:
            kw['map_location'] = 'cpu'
        net.load_state_dict(torch.load(model_path, **kw), strict=False)
    """
    assert found(src) == [("TD102", 8)]
    chosen = src.replace("kw['map_location'] = 'cpu'", "kw['weights_only'] = True")
    assert found(chosen) == []
    assert found(src.replace("kw = {}", "kw = {}\n        kw.update(opts)")) == []


def test_a_main_that_saves_and_waits_at_a_barrier_still_loads_the_users_checkpoint_albef():
    """salesforce/ALBEF's Grounding.py main(): `torch.load(args.checkpoint, map_location='cpu')`,
    then training that saves checkpoints and calls dist.barrier(); the load reads the user's
    file, not one the ranks exchanged (set 87: seven TD102 missed). A shared-folder gather
    (sam2's shape) still reads what the save wrote."""
    albef = """
    import os
    import torch
    import torch.distributed as dist

    def main(args, model):
        if args.checkpoint:
            checkpoint = torch.load(args.checkpoint, map_location='cpu')
            model.load_state_dict(checkpoint['model'])
        for epoch in range(args.epochs):
            torch.save({'model': model.state_dict()}, os.path.join(args.output_dir, 'ckpt.pth'))
            dist.barrier()
    """
    assert [r for r, _ in found(albef)] == ["TD102"]
    shared = """
    import os
    import torch
    import torch.distributed as dist

    def gather(data, tmpdir, rank, world):
        torch.save(data, os.path.join(tmpdir, f"{rank}.pt"))
        dist.barrier()
        return [torch.load(os.path.join(tmpdir, f"{i}.pt")) for i in range(world)]
    """
    assert found(shared) == []


def test_training_args_bin_holds_no_tensors_oscar():
    """microsoft/Oscar's run_retrieval.py reloads the Trainer's `training_args.bin`, a pickled
    argparse Namespace: map_location is moot (set 87's lookalike); weights_only is not."""
    src = """
    import os
    import torch

    def restore(args):
        return torch.load(os.path.join(args.eval_model_dir, 'training_args.bin'))
    """
    assert found(src) == [("TD102", 6)]
