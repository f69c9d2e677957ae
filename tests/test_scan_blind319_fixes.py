"""What blind sets 319-326 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source

# AlphaPose's detector/effdet_api.py, vendored in AOLIAO12312/Deepsort_ReID_Tracker (set 323):
# get_detector always passes the options, so the `.cuda()` branches never run there.
EFFDET = """
import torch

class EffDetDetector:
    def load_model(self, args=None):
        if args:
            self.model.to(args.device)
        else:
            self.model.cuda()

    def images_detection(self, imgs, args=None):
        with torch.no_grad():
            imgs = imgs.to(args.device) if args else imgs.cuda()
            scale = torch.ones(3)
            scale = scale.to(args.device) if args else scale.cuda()
            other = imgs.cuda() if args else imgs
        return imgs, scale, other
"""


def td001(src: str) -> list[tuple[int, str]]:
    found = scan_source("effdet_api.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [(f.line, f.confidence) for f in found if f.rule == "TD001"]


def test_cuda_in_the_no_options_branch_of_alphapose_effdet_api_is_low():
    """`imgs.to(args.device) if args else imgs.cuda()` and the `if args:` / `else:
    self.model.cuda()` of load_model: labelled lookalikes. A `.cuda()` whose other branch
    does not move the same value stays as it was."""
    assert td001(EFFDET) == [(9, "low"), (13, "low"), (15, "low"), (16, "high")]


def test_a_dtype_cast_in_the_other_branch_is_not_a_device_given():
    """`x.to(dtype) if half else x.cuda()`: the other branch casts, it does not place."""
    src = """
    import torch

    class Net:
        def forward(self, x, dtype, half):
            x = x.to(dtype) if half else x.cuda()
            y = x.to(torch.float16) if half else x.cuda()
            return x, y
    """
    assert td001(src) == [(6, "high"), (7, "high")]
