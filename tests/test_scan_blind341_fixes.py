"""What blind sets 341-348 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchdoctor.scan.astutil import is_guard, is_guard_else, without_gpu
from torchdoctor.scan.engine import ScanOptions, scan_source

# ENNCELADUS/DIPPI's src/training/v2_train.py (set 344), three copies: the trainer picks the
# CPU where CUDA is absent, then prints the one GPU's name in the `else:` of a test for several.
DIPPI = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model):
    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
        print(f"Using {torch.cuda.device_count()} GPUs")
    else:
        print(f"Using single GPU: {torch.cuda.get_device_name(0)}")
    return model.to(device)
"""


def td003(src: str) -> list[tuple[int, str]]:
    found = scan_source("v2_train.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [(f.line, f.confidence) for f in found if f.rule == "TD003"]


def test_get_device_name_in_the_else_of_several_gpus_raises_on_the_cpu_fallback_dippi():
    """ "Torch not compiled with CUDA enabled" (or "No CUDA GPUs are available") on the CPU
    the trainer falls back to: device_count() is 0 there, and the `else:` runs."""
    assert td003(DIPPI) == [(12, "high")]


def test_without_a_fallback_the_else_of_several_gpus_follows_the_table():
    src = DIPPI.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda"')
    assert td003(src) == [(12, "low")]


def test_the_body_of_fewer_than_two_gpus_raises_on_the_cpu_fallback_and_its_else_does_not():
    """The same trainer written the other way round (a review of this fix): `if
    torch.cuda.device_count() < 2:` holds with none, so the name is asked for on the CPU."""
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def train(model):
        if torch.cuda.device_count() < 2:
            print(f"Using single GPU: {torch.cuda.get_device_name(0)}")
        else:
            print(f"Using {torch.cuda.device_count()} GPUs: {torch.cuda.get_device_name(1)}")
        return model.to(device)
    """
    assert td003(src) == [(9, "high")]


def test_the_else_of_an_availability_test_is_still_the_cpu_side():
    src = DIPPI.replace("torch.cuda.device_count() > 1", "not torch.cuda.is_available()")
    assert td003(src) == []


@pytest.mark.parametrize(
    "test, value",
    [
        ("torch.cuda.device_count() > 1", False),
        ("torch.cuda.device_count() >= 2", False),
        ("torch.cuda.device_count() == 2", False),
        ('torch.cuda.device_count() > 1 and config.get("multi_gpu", True)', False),
        ("torch.cuda.device_count() > 1 or torch.cuda.is_available()", None),
        ("1 < torch.cuda.device_count()", False),
        ("2 <= torch.cuda.device_count()", False),
        ("1 > torch.cuda.device_count()", True),
        ("torch.cuda.device_count() > 0", False),  # its `else:` is the machine with none
        ("torch.cuda.device_count() >= 1", False),
        ("torch.cuda.device_count() == 1", False),
        ("torch.cuda.device_count() < 2", True),  # its body runs with one GPU and with none
        ("torch.cuda.device_count() <= 1", True),
        ("torch.cuda.device_count() != 1", True),
        ("not torch.cuda.device_count()", True),
        ("torch.cuda.device_count() < 2 or args.single", True),
        ("n_gpu > 1", None),  # a count kept in a name is not followed
    ],
)
def test_a_gpu_count_is_read_as_on_a_machine_with_none(test, value):
    """`without_gpu`: the test's value where `device_count()` is 0. Its body is a CUDA guard
    only where that is false, its `else:` only where it is true."""
    expr = ast.parse(test, mode="eval").body
    assert without_gpu(expr) is value
    if value is not None:
        assert is_guard(expr) is not value and is_guard_else(expr) is value
