"""Crash pitfalls the default output missed on blind sets 163-264, measured at the twenty-fifth
session's head (/tmp atlas of every crash label's status): each test reproduces the public code
the labellers judged, reduced to what decides it."""

from __future__ import annotations

from .scan_tree import scan_tree as scan

# Time-Series-Library's layout, as XXLTraffic (set 232), LLM-TS-Integrator (246) and six more
# repositories of sets 163-257 copy it: run.py turns the GPU flag off without CUDA, Exp_Basic
# then picks the CPU, train() reloads the checkpoint its EarlyStopping wrote in the same run,
# test(test=1) loads one an earlier (GPU) run wrote.
RUN = """\
    import argparse
    import torch
    from exp.exp_long_term_forecasting import Exp_Long_Term_Forecast
    parser = argparse.ArgumentParser()
    parser.add_argument('--use_gpu', type=bool, default=True)
    args = parser.parse_args()
    args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False
    exp = Exp_Long_Term_Forecast(args)
"""
EXP = """\
    import os
    import torch
    from utils.tools import EarlyStopping

    class Exp_Long_Term_Forecast:
        def __init__(self, args, device):
            self.device = device
            self.model = build(args).to(self.device)

        def train(self, setting):
            path = os.path.join(self.args.checkpoints, setting)
            early_stopping = EarlyStopping(patience=3)
            for epoch in range(10):
                vali_loss = self.vali()
                early_stopping(vali_loss, self.model, path)
                if early_stopping.early_stop:
                    break
            best_model_path = path + '/' + 'checkpoint.pth'
            self.model.load_state_dict(torch.load(best_model_path))
            return self.model

        def test(self, setting, test=0):
            if test:
                self.model.load_state_dict(
                    torch.load(os.path.join('./checkpoints/' + setting, 'checkpoint.pth'))
                )
"""


def _loads(found):
    return [(path, line, conf) for path, line, rule, conf in found if rule == "TD101"]


def test_early_stopping_checkpoint_reloaded_in_the_same_run_is_no_td101(tmp_path):
    """Labelled on all eight Time-Series-Library copies: train()'s reload "loads the
    checkpoint EarlyStopping saved earlier in the same run on the same device"; test(test=1)'s
    load of a GPU-trained checkpoint 'Attempting to deserialize object on a CUDA device' on a
    CPU-only machine, where run.py falls back."""
    found = scan(tmp_path, {"run.py": RUN, "exp/exp_long_term_forecasting.py": EXP})
    lines = [line for path, line, _ in _loads(found) if path.startswith("exp/")]
    assert lines == [25]  # test()'s load, not train()'s (line 19)


def test_a_call_given_the_path_but_no_model_writes_nothing(tmp_path):
    """`print(path)` in the loop does not write the file the load reads."""
    src = EXP.replace("early_stopping(vali_loss, self.model, path)", "log(vali_loss, path)")
    found = scan(tmp_path, {"run.py": RUN, "exp/exp_long_term_forecasting.py": src})
    lines = [line for path, line, _ in _loads(found) if path.startswith("exp/")]
    assert lines == [19, 25]


# openai-whisper moved to MPS: "Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors'
# with arguments from the 'SparseMPS' backend" (pytorch/pytorch#141711, #143955)
PICK = """\
    import torch
    import whisper
    device = "mps" if torch.backends.mps.is_available() else "cpu"
    model = whisper.load_model("large-v3", device=device)
"""


def _sparse(found):
    return [(path, line, conf) for path, line, rule, conf in found if rule == "TD602"]


def test_whisper_loaded_on_the_mps_device_the_file_picks(tmp_path):
    """pytorch/pytorch#143955's reproduction, as VALL-E-X (set 12) and mlx-whisper (264) do it."""
    assert _sparse(scan(tmp_path, {"asr.py": PICK})) == [("asr.py", 4, "medium")]


def test_whisper_given_a_callers_device_is_low(tmp_path):
    """chatterbox-pipeline (set 200): `whisper.load_model(size, device=self.device)`. A device
    chosen elsewhere was as often CUDA-or-CPU on purpose on the Whisper projects of the sets."""
    src = """\
        import whisper
        class Validator:
            def __init__(self, device):
                self.device = device
            def load(self):
                self.model = whisper.load_model("base", device=self.device)
    """
    found = scan(tmp_path, {"v.py": src, "cli.py": PICK.replace("model = ", "m = ")})
    assert ("v.py", 6, "low") in _sparse(found)


def test_whisper_kept_on_cuda_or_the_cpu_is_not_flagged(tmp_path):
    """speechlib (set 175): 'Whisper device is cuda if available else cpu: Macs run on the CPU'."""
    src = PICK.replace(
        '"mps" if torch.backends.mps.is_available()', '"cuda" if torch.cuda.is_available()'
    )
    assert _sparse(scan(tmp_path, {"asr.py": src})) == []


def test_whisper_on_mps_is_not_flagged_where_the_project_requires_torch_2_10(tmp_path):
    """Sparse MPS ops landed through October 2025 (pytorch/pytorch#165232, which closes the
    Whisper issue); a project that requires a later torch gets them."""
    for floor, found in (("torch>=2.10", []), ("torch==2.6.0", [("asr.py", 4, "medium")])):
        d = tmp_path / floor
        d.mkdir()
        files = {"asr.py": PICK, "requirements.txt": f"{floor}\nopenai-whisper\n"}
        assert _sparse(scan(d, files)) == found, floor


def test_a_whisper_model_moved_after_loading(tmp_path):
    """VALL-E-X's launch-ui.py: `whisper_model.to(device)` after a load with no device. (A
    statement is walked only where it names whisper or load_model: `m.to(device)` of a model
    loaded lines before, under another name, is not seen.)"""
    src = PICK.replace("model = whisper", "whisper_model = whisper").replace(
        '"large-v3", device=device)', '"medium")\n    whisper_model.to(device)'
    )
    assert _sparse(scan(tmp_path, {"asr.py": src})) == [("asr.py", 5, "medium")]
