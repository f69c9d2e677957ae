"""A file that imports, unconditionally, a project module whose import compiles CUDA kernels
cannot run without CUDA: its device findings are moot (project.py, imports_cuda_only).

The shape is rosinality/stylegan2-pytorch's (fourth blind scan corpus): op/upfirdn2d.py calls
torch.utils.cpp_extension.load(sources=[... "upfirdn2d_kernel.cu"]) at import, model.py does
`from op import upfirdn2d`, and fid.py / ppl.py / projector.py do `from model import Generator`
and `torch.load(args.ckpt)`: three TD101 findings the labeller marked as lookalikes.
"""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan import ScanOptions, scan_paths

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")

OP = """
import os
import torch
from torch.utils.cpp_extension import load

module_path = os.path.dirname(__file__)
upfirdn2d_op = load(
    "upfirdn2d",
    sources=[
        os.path.join(module_path, "upfirdn2d.cpp"),
        os.path.join(module_path, "upfirdn2d_kernel.cu"),
    ],
)
"""
FID = """
import torch
{imp}

def main(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ckpt = torch.load(args.ckpt)
    g = Generator().cuda()
"""


def _tree(tmp_path, imp: str, op: str = OP) -> dict[tuple[str, str], tuple[str, str | None]]:
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "__init__.py").write_text("from .upfirdn2d import upfirdn2d_op\n")
    (tmp_path / "op" / "upfirdn2d.py").write_text(textwrap.dedent(op))
    (tmp_path / "model.py").write_text(
        "import torch\nfrom op import upfirdn2d_op\n\nclass Generator(torch.nn.Module):\n    pass\n"
    )
    (tmp_path / "fid.py").write_text(textwrap.dedent(FID.format(imp=imp)))
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1)
    return {
        (f.path.rsplit("/", 1)[1], f.rule): (f.confidence, f.grounds)
        for f in result.findings
        if f.path.endswith("fid.py")
    }


def test_torch_load_in_a_script_that_imports_cuda_kernels_through_model_py_is_low(tmp_path):
    found = _tree(tmp_path, "from model import Generator")
    conf, why = found[("fid.py", "TD101")]
    assert conf == "low"
    assert "it imports model.py, which needs CUDA" in why and "upfirdn2d.py" in why
    assert found[("fid.py", "TD001")][0] == "low"
    assert found[("fid.py", "TD102")][0] != "low"  # unpickling is a risk on any device


def test_an_import_with_a_way_around_it_keeps_the_findings(tmp_path):
    imp = "try:\n    from model import Generator\nexcept ImportError:\n    Generator = None"
    found = _tree(tmp_path, imp)
    assert found[("fid.py", "TD101")][0] == "high"


def test_kernels_built_only_when_asked_do_not_make_importers_cuda_only_basicsr(tmp_path):
    """BasicSR's ops build their kernels only under BASICSR_JIT=True (else a prebuilt or
    absent extension): importing them needs no CUDA."""
    op = "import os\nfrom torch.utils.cpp_extension import load\nif os.getenv('BASICSR_JIT'):\n" + (
        "    op = load('x', sources=['k.cu'])\n"
    )
    found = _tree(tmp_path, "from model import Generator", op=op)
    assert found[("fid.py", "TD101")][0] == "high"
