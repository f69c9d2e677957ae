"""What blind sets 388-395 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import sys
import textwrap

import pytest

from torchdoctor.scan import scan_paths
from torchdoctor.scan.engine import ScanOptions, scan_source

from .scan_tree import scan_tree as scan


def rules(src: str) -> list[tuple[str, int]]:
    found = scan_source("m.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [(f.rule, f.line) for f in found]


DISTILL = """
import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--output", default="student.pth")
    args = parser.parse_args()
    student = Student().to(args.device)
    distiller.train_student(student, loader, epochs=3, output_path=args.output)
    checkpoint = torch.load(args.output, weights_only=True)
    student.load_state_dict(checkpoint)
"""


def test_a_reload_of_the_path_a_training_call_was_given_is_the_same_run_neuro_xai():
    """kadarishiva918/Neuro-XAI-Brain-Tumor-Classification's knowledge_distillation.py 370
    (set 391), labelled a lookalike: `train_student(..., output_path=args.output)` writes the
    best student there, and the `torch.load(args.output)` right after it reads it back in the
    same run, onto the device it trained on."""
    assert rules(DISTILL) == []


def test_a_load_before_the_training_call_still_reads_an_earlier_run():
    lines = DISTILL.splitlines()
    at = next(i for i, line in enumerate(lines) if "train_student" in line)
    moved = "\n".join(lines[:at] + lines[at + 1 : at + 3] + [lines[at]] + lines[at + 3 :])
    assert [r for r, _ in rules(moved)] == ["TD101"]


def test_a_call_that_does_not_train_is_not_taken_for_the_writer():
    src = DISTILL.replace("distiller.train_student(", "distiller.evaluate_student(")
    assert [r for r, _ in rules(src)] == ["TD101"]


def _newer() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1] + 1}"


@pytest.mark.parametrize("requires", [f">={_newer()}", None])
def test_syntax_error_expected_paren_says_the_project_needs_a_newer_python_unit_hifigan(
    tmp_path, requires
):
    """bootphon/unit-hifigan's model.py (set 388) writes `def tensor_from_name[T](…)` (PEP 695)
    under `requires-python = ">=3.13"`; a scan on 3.11 reported only "syntax error: expected
    '('" and lost the file's two hub loads without weights_only. Now the error says which
    Python the project needs; without requires-python it stays as it was."""
    if requires:
        (tmp_path / "pyproject.toml").write_text(
            f'[project]\nname = "x"\nrequires-python = "{requires}"\n'
        )
    (tmp_path / "model.py").write_text("import torch\ndef f(:\n    pass\n")
    result = scan_paths([str(tmp_path)], ScanOptions(), jobs=1)
    (error,) = result.errors
    assert error.message.startswith("syntax error: ")
    hint = f"the project requires Python >= {_newer()}; this scan runs on"
    assert (hint in error.message) == bool(requires)


FORECAST = """\
import torch

best_model_path = "best_models/"


def evaluate(lstm, device):
    lstm.load_state_dict(torch.load(best_model_path + "best_lstm.pth", map_location=device))
"""


def test_a_committed_file_named_by_a_sum_of_constants_is_shipped_time_series_forecasting(
    tmp_path,
):
    """francescobaraldi/time-series-forecasting-with-transformers's main.py 53-55 (set 394),
    labelled lookalikes: `torch.load(best_model_path + "best_lstm.pth")` with
    `best_model_path = "best_models/"` reads a file committed with the code, as trusted as the
    code (TD102 low), like a literal path."""
    (tmp_path / "best_models").mkdir()
    (tmp_path / "best_models" / "best_lstm.pth").write_bytes(b"not read for TD102")
    found = [(line, conf) for _, line, rule, conf in scan(tmp_path, {"main.py": FORECAST})]
    assert found == [(7, "low")]


def test_a_sum_naming_no_committed_file_stays_flagged(tmp_path):
    found = [(line, conf) for _, line, rule, conf in scan(tmp_path, {"main.py": FORECAST})]
    assert found == [(7, "high")]
