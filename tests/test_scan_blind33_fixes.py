"""What scoring the thirty-third blind corpus found wrong in the scan itself."""

from __future__ import annotations

from torchdoctor.scan.engine import ScanOptions, scan_source

# FunASR's runtime/llama.cpp/export_vad_gguf.py: two assignments to one name on one line. The
# `.numpy()` rule sorted the function's assignments as (line, name, value) tuples, so the tie
# compared two AST nodes and the whole scan stopped with "internal error: TypeError: '<' not
# supported between instances of 'Call' and 'Call'".
TWO_ON_ONE_LINE = """import torch

def export(path):
    sd = torch.load(path, map_location="cpu"); sd = sd.get("state_dict", sd)
    w = sd["w"]
    return w.numpy()

def on_gpu(x):
    y = x * 2; y = y.cuda()
    return y.numpy()
"""


def test_two_assignments_on_one_line_typeerror_not_supported_between_call_and_call():
    found, _ = scan_source("export_vad_gguf.py", TWO_ON_ONE_LINE, ScanOptions())
    numpy_lines = sorted(f.line for f in found if f.rule == "TD403")
    # the later assignment on the line is the one that counts: `y` is still on the device
    assert numpy_lines == [10]
