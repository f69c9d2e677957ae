"""What blind sets 349-356 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source

# Andrei-Aksionov/nanoGPTplus's src/utils/model.py (set 352): the checkpoint a caller names,
# found below the repository's root.
NANOGPTPLUS = """
from pathlib import Path

import torch


def load_checkpoint(path: str, model: torch.nn.Module) -> None:
    path = Path(__file__).parents[2] / path
    model.load_state_dict(torch.load(path))
"""

# LPIPS (blind set 190): the parameters pick one of the weights shipped beside the code.
LPIPS = """
import inspect
import os

import torch


class NetLinLayer(torch.nn.Module):
    def __init__(self, version="0.1", net="alex"):
        model_path = os.path.abspath(
            os.path.join(inspect.getfile(self.__init__), "..", "weights/v%s/%s.pth" % (version, net))
        )
        self.load_state_dict(torch.load(model_path, map_location="cpu"))
"""


def rules(src: str) -> list[tuple[int, str]]:
    found = scan_source("model.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return sorted((f.line, f.rule) for f in found if f.rule in ("TD101", "TD102"))


def test_a_checkpoint_the_caller_names_below_the_files_folder_is_no_shipped_file_nanogptplus():
    """torch ~1.13 unpickles whatever `path` names: TD102 (and TD101), not "data shipped with
    the package"."""
    assert rules(NANOGPTPLUS) == [(9, "TD101"), (9, "TD102")]


def test_parameters_that_pick_a_shipped_file_by_name_keep_it_shipped_lpips():
    assert rules(LPIPS) == []


# lianghongzhuo/PointNetGPD's six main_*.py (set 349): --cuda stays on where CUDA is absent.
POINTNETGPD = """
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true", default=True)
args = parser.parse_args()
args.cuda = args.cuda if torch.cuda.is_available else False
if args.cuda:
    torch.cuda.manual_seed(1)
"""


def td006(src: str) -> list[int]:
    found = scan_source("main_1v.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [f.line for f in found if f.rule == "TD006"]


def test_uncalled_is_available_keeps_the_cuda_flag_on_a_cpu_machine_pointnetgpd():
    assert td006(POINTNETGPD) == [9]


def test_a_called_test_or_a_value_that_is_not_the_cpu_side_stays_quiet():
    assert td006(POINTNETGPD.replace("is_available else", "is_available() else")) == []
    assert td006(POINTNETGPD.replace("else False", "else args.cpu_fallback")) == []


# lonePatient/BERT-NER-Pytorch's run_ner_crf.py (set 353), Hugging Face's load_and_cache_examples:
# the barriers keep the other ranks waiting while the first builds the cache; a later run reads
# what an earlier one wrote, from --data_dir.
CACHED_FEATURES = """
import os

import torch


def load_and_cache_examples(args, tokenizer, data_type="train"):
    if args.local_rank not in [-1, 0]:
        torch.distributed.barrier()
    cached_features_file = os.path.join(args.data_dir, "cached_crf-{}".format(data_type))
    if os.path.exists(cached_features_file) and not args.overwrite_cache:
        features = torch.load(cached_features_file)
    else:
        features = convert_examples_to_features(tokenizer)
        if args.local_rank in [-1, 0]:
            torch.save(features, cached_features_file)
    if args.local_rank == 0:
        torch.distributed.barrier()
    return features
"""

# sam2's gather: the ranks save, meet, then read what the others just wrote.
GATHERED = """
import os

import torch


def all_gather(obj, folder, rank, world):
    path = os.path.join(folder, f"{rank}.pt")
    torch.save(obj, path)
    torch.distributed.barrier()
    return [torch.load(os.path.join(folder, f"{r}.pt")) for r in range(world)]
"""


def test_a_features_cache_an_earlier_run_wrote_is_no_exchange_between_ranks_bert_ner():
    assert rules(CACHED_FEATURES) == [(12, "TD102")]


def test_what_the_ranks_just_saved_is_still_an_exchange_sam2():
    assert rules(GATHERED) == []


# The exchange itself: rank 0 saves, the others meet it at the barrier and read it.
RANK_EXCHANGE = """
import os

import torch
import torch.distributed as dist


def share(obj, args):
    tmp = os.path.join(args.out, "tmp.pt")
    if args.rank == 0:
        torch.save(obj, tmp)
        dist.barrier()
    else:
        dist.barrier()
        obj = torch.load(tmp)
    return obj
"""


def test_the_two_branches_of_a_rank_test_are_the_exchange_itself():
    assert rules(RANK_EXCHANGE) == []


def test_an_uncalled_test_that_picks_no_cuda_flag_stays_quiet():
    """`num_workers=4 if torch.cuda.is_available else 0`: always 4, which crashes nothing."""
    src = POINTNETGPD.replace(
        "args.cuda if torch.cuda.is_available else False", "4 if torch.cuda.is_available else 0"
    )
    assert td006(src) == []
    src = POINTNETGPD.replace("else False", "else 0.0")
    assert td006(src) == []
