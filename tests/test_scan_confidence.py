"""Confidence on every finding (scan/confidence.py) and the noise classes of issue 20 that it,
and the project view, keep out of the default output; each test is named after the real
pattern or error it is about."""

from __future__ import annotations

import json
import textwrap

import jsonschema
import pytest

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import scan_source

from .conftest import REPORT_SCHEMA, run_cli

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")


def found(src: str, path: str = "m.py") -> list[tuple[str, str]]:
    findings, _ = scan_source(path, textwrap.dedent(src), ScanOptions())
    return [(f.rule, f.confidence) for f in findings]


def project(tmp_path, files: dict[str, str], **opts):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return scan_paths([str(tmp_path)], ScanOptions(**opts), jobs=1)


# -- code that only ever runs on CUDA ---------------------------------------------------------


def test_script_that_starts_nccl_ddp_keeps_its_cuda_calls_at_low_confidence():
    src = """
    import torch
    import torch.distributed as dist
    dist.init_process_group(backend="nccl")
    model = Net().cuda()
    """
    assert found(src) == [("TD001", "low")]


def test_bitsandbytes_module_is_cuda_only():
    assert found("import bitsandbytes as bnb\nimport torch\nw = w.cuda()\n") == [("TD001", "low")]


def test_sagemaker_model_parallel_import_is_cuda_only():
    src = (
        "import smdistributed.modelparallel.torch as smp\nimport torch\ntorch.cuda.set_device(0)\n"
    )
    assert found(src) == [("TD003", "low")]


@pytest.mark.parametrize(
    "guard",
    [
        "if torch.cuda.is_available():\n    x = x.cuda()",
        "assert torch.cuda.is_available()\nx = x.cuda()",
        "if device.type == 'cuda':\n    torch.cuda.synchronize()",
    ],
)
def test_paths_behind_a_cuda_guard_are_not_pitfalls(guard):
    assert found("import torch\n" + guard + "\n") == []


# -- syncs that are the point -----------------------------------------------------------------

LOOP = """
import torch
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    opt.step()
    {body}
"""


def test_training_loop_printing_loss_item_each_step_is_low():
    assert found(LOOP.format(body="print(f'loss {loss.item():.3f}')")) == [("TD402", "low")]


def test_loss_item_logged_through_a_dict_each_step_is_low():
    body = "logs = {'loss': loss.detach().item()}\n    progress_bar.set_postfix(**logs)"
    assert found(LOOP.format(body=body)) == [("TD402", "low")]


def test_loss_item_summed_and_never_shown_is_medium():
    assert found(LOOP.format(body="total += loss.item()")) == [("TD402", "medium")]


def test_item_per_parameter_inside_the_training_step_is_high():
    body = "for p in model.parameters():\n        norm += p.grad.norm().item()"
    assert ("TD402", "high") in found(LOOP.format(body=body))


# vwxyzjn/cleanrl@fe8d8a0 cleanrl/ppo_atari_multigpu.py:328 (and ppg_procgen.py:364): a clip
# fraction per minibatch collected into a list whose mean is written to TensorBoard after the
# epochs; ppo_rnd_envpool.py:483 collects it the same way and never writes it.
PPO = """
import numpy as np
import torch
for iteration in range(n):
    clipfracs = []
    for epoch in range(epochs):
        for start in range(0, batch, mb):
            loss = agent.loss(start)
            loss.backward()
            optimizer.step()
            clipfracs += [(ratio.abs() > clip).float().mean().item()]
    {after}
"""


def test_cleanrl_clipfracs_written_to_tensorboard_after_the_epochs_is_low():
    after = 'writer.add_scalar("losses/clipfrac", np.mean(clipfracs), step)'
    assert found(PPO.format(after=after)) == [("TD402", "low")]


def test_cleanrl_clipfracs_collected_and_never_written_stays_medium():
    assert found(PPO.format(after="pass")) == [("TD402", "medium")]


def test_losses_appended_in_a_function_and_printed_after_the_loop_is_low():
    src = """
    import torch
    def train(loader):
        losses = []
        for x in loader:
            loss = model(x)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(sum(losses) / len(losses))
    """
    assert found(src) == [("TD402", "low")]


# lllyasviel/Fooocus@59f183a ldm_patched/modules/model_management.py:181: a bf16 probe with
# torch.cuda.get_device_properties inside `try: … except: pass` falls back instead of raising.
@pytest.mark.parametrize("handler", ["except:", "except Exception:", "except AssertionError:"])
def test_fooocus_cuda_probe_inside_try_with_a_catching_handler_is_low(handler):
    src = f"""
    import torch
    try:
        major = torch.cuda.get_device_properties(torch.cuda.current_device()).major
    {handler}
        major = 0
    """
    assert set(found(src)) == {("TD003", "low")}


def test_cuda_probe_inside_try_that_catches_only_value_error_stays_high():
    src = """
    import torch

    class Probe:
        def names(self):
            try:
                name = torch.cuda.get_device_name()
            except ValueError:
                name = "?"
            return name, torch.cuda.get_device_name()
    """
    assert found(src) == [("TD003", "high"), ("TD003", "high")]


# -- loads of files the project wrote from CPU tensors ---------------------------------------


def test_load_of_a_dataset_cache_the_project_saved_needs_no_map_location(tmp_path):
    result = project(
        tmp_path,
        {
            "prep.py": """
            import torch
            def build(items, out):
                feats = torch.stack([encode(i) for i in items]).cpu()
                torch.save(feats, out + "/features.pt")
            """,
            "train.py": """
            import torch
            def load(out):
                return torch.load(out + "/features.pt", weights_only=True)
            """,
        },
    )
    assert [f.rule for f in result.findings] == []


def test_load_of_a_file_saved_from_the_gpu_model_still_needs_map_location(tmp_path):
    result = project(
        tmp_path,
        {
            # saved by another script (a reload right after its own save, in the same run,
            # reads back what this machine wrote: not flagged)
            "train.py": "import torch\ntorch.save(model.state_dict(), 'model.pt')\n",
            "a.py": "import torch\nsd = torch.load('model.pt', weights_only=True)\n"
            'map_device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        },
    )
    assert [f.rule for f in result.findings] == ["TD101"]


# -- the default output, the formats and the configuration -----------------------------------

NOISY = "import torch\nimport torch.distributed as d\nd.init_process_group('nccl')\nx = x.cuda()\n"


def test_default_output_hides_low_confidence_and_says_how_many(tmp_path):
    (tmp_path / "a.py").write_text(NOISY)
    r = run_cli("scan", str(tmp_path), "--no-cache")
    assert r.returncode == 0 and "TD001" not in r.stdout
    assert "1 of lower confidence than medium not shown (--confidence low)" in r.stdout
    r = run_cli("scan", str(tmp_path), "--no-cache", "--confidence", "low")
    assert r.returncode == 1 and "TD001 error (low confidence)" in r.stdout
    assert "confidence: the file starts NCCL: it runs on CUDA only" in r.stdout


def test_json_carries_confidence_and_still_validates(tmp_path):
    (tmp_path / "a.py").write_text(NOISY + "m = Net().cuda()\n")
    doc = json.loads(run_cli("scan", str(tmp_path), "--json", "--confidence", "low").stdout)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(doc)
    assert {f["confidence"] for f in doc["findings"]} == {"low"}
    assert doc["summary"]["confidence"] == "low" and doc["summary"]["below_confidence"] == 0
    assert all("precision" in r for r in doc["rules"])


def test_sarif_rank_and_rule_precision(tmp_path, monkeypatch):
    validate = pytest.importorskip("sarif_kit.validate", reason="sarif-kit not installed")
    (tmp_path / "a.py").write_text("import torch\nx = x.cuda()\n" + NOISY.split("\n", 1)[1])
    monkeypatch.chdir(tmp_path)
    r = run_cli("scan", "a.py", "--format", "sarif", "--confidence", "low", cwd=tmp_path)
    log = json.loads(r.stdout)
    assert validate.validation_errors(log) == []
    run = log["runs"][0]
    assert {res["rank"] for res in run["results"]} == {30.0}  # the file starts NCCL
    precision = {
        rule["id"]: rule["properties"]["precision"] for rule in run["tool"]["driver"]["rules"]
    }
    assert precision["TD001"] == "high" and precision["TD302"] == "medium"


@pytest.mark.parametrize("table", ["[tool.torchdoctor]", "[tool.torchdoctor.scan]"])
def test_confidence_from_pyproject(tmp_path, table):
    (tmp_path / "pyproject.toml").write_text(f'{table}\nconfidence = "low"\n')
    (tmp_path / "a.py").write_text(NOISY)
    r = run_cli("scan", str(tmp_path), "--no-cache", "--json", cwd=tmp_path)
    assert [f["confidence"] for f in json.loads(r.stdout)["findings"]] == ["low"]
    r = run_cli("scan", str(tmp_path), "--no-cache", "--json", "--confidence", "high", cwd=tmp_path)
    assert json.loads(r.stdout)["findings"] == []  # the command line wins


def test_misspelt_confidence_in_pyproject_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor]\nconfidence = "hgih"\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    r = run_cli("scan", str(tmp_path), "--no-cache", cwd=tmp_path)
    assert r.returncode == 2 and "confidence: must be one of low, medium, high" in r.stderr
    assert "Traceback" not in r.stderr
