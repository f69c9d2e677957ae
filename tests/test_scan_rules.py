"""Each scan rule on snippets that must be flagged and snippets that must stay quiet."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source
from torchdoctor.scan.fix import plan
from torchdoctor.scan.rules import RULES


def rules_in(src: str) -> list[str]:
    findings, _ = scan_source("snippet.py", textwrap.dedent(src), ScanOptions())
    return [f.rule for f in findings]


MODULE = """
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {init}
    def forward(self, x):
        {forward}
        return x
"""

POSITIVE = {
    "TD001": ["model = Net().cuda()", "x = batch.cuda(non_blocking=True)", "y = t.cuda(1)"],
    "TD002": [
        'x = t.to("cuda")',
        'd = torch.device("cuda:0")',
        'z = torch.zeros(3, device="cuda")',
        'model.to("cuda:1")',
    ],
    "TD003": [
        "torch.cuda.synchronize()",
        "from torch import cuda\nname = cuda.get_device_name(0)",
        "torch.cuda.set_device(local_rank)",
    ],
    "TD101": ["sd = torch.load('m.pt')", "sd = torch.load(f, weights_only=True)"],
    "TD103": ["m = torch.jit.load('model.pt')", "from torch import jit\nm = jit.load(f)"],
    "TD102": ["sd = torch.load(f, map_location='cpu')", "sd = torch.load(f, 'cpu')"],
    "TD201": ["m = nn.DataParallel(model)", "m = torch.nn.DataParallel(model, device_ids=[0])"],
    "TD202": ["m = nn.DataParallel(model.cuda())"],
    "TD203": [
        "def train(model):\n    if torch.cuda.device_count() > 1:\n"
        "        model = nn.DataParallel(model)\n    torch.save(model.module.state_dict(), f)",
    ],
    "TD301": [
        MODULE.format(init="self.pos = torch.zeros(10)", forward="x = x + self.pos"),
        MODULE.format(
            init="self.mask: torch.Tensor = torch.ones(3, 3).bool()", forward="x = x * self.mask"
        ),
    ],
    "TD302": [
        MODULE.format(init="pass", forward="x = x + torch.ones(x.shape[0])"),
        MODULE.format(init="pass", forward="pos = torch.arange(10)\n        x = x + pos"),
    ],
    "TD401": [
        """
        def train(model, x, y):
            out = model(x)
            loss = (out - y).pow(2).mean()
            loss.backward()
            return out.cpu().numpy()
        """,
        "w = layer.weight.numpy()",
        "for p in model.parameters():\n    print(p.cpu().numpy())",
    ],
    "TD402": [
        """
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            total += loss.item()
        """,
        "for step in range(10):\n    run()\n    torch.cuda.synchronize()",
    ],
    "TD403": [
        "x = x.cuda()\narr = x.numpy()",
        "def f(model, x, device):\n    model = model.to(device)\n    out = model(x)\n"
        "    return out.detach().numpy()",
    ],
    "TD501": ["loader = DataLoader(ds, batch_size=8, pin_memory=True)"],
    "TD502": [
        "buf = torch.empty(1024, pin_memory=True)",
        "batch = batch.pin_memory()",
    ],
    "TD004": [
        "def sync(device):\n    if device.type != 'cpu':\n        torch.cuda.synchronize()",
        "if torch.backends.mps.is_available():\n    x = x.to('mps')\nelse:\n    x = x.cuda()",
        "def f(x, device):\n    if device == 'cpu':\n        return x\n    return x.to('cuda')",
    ],
    "TD006": [
        "import cuda_malloc\ndevice = 'cuda' if cuda_malloc.cuda_malloc_supported() else 'cpu'",
        "dev = torch.device('cpu' if not torch.backends.cuda.is_built() else 'cuda')",
        "if torch.cuda.is_available:\n    model = model.cuda()",
    ],
    "TD008": [
        "if hasattr(torch, 'xpu'):\n    torch.xpu.synchronize()",
        "with torch.xpu.stream(s) if hasattr(torch, 'xpu') else torch.cuda.stream(s):\n    pass",
        "if hasattr(torch.backends, 'mps'):\n    torch.mps.empty_cache()",
    ],
    "TD009": [
        "with torch.amp.autocast():\n    y = model(x)",
        "torch.backends.mps.empty_cache()",
        "torch.backends.cuda.synchronize()",
    ],
    "TD007": [
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\npipe.enable_model_cpu_offload()",
        "import comfy.model_management as mm\nif lowvram:\n    pipe.enable_sequential_cpu_offload()",
        "device = 'mps' if mps_ok else 'cpu'\nif device != 'mps':\n    pipe.enable_model_cpu_offload()",
    ],
    "TD005": [
        "def build(cfg, device='cuda'):\n    return cfg",
        "class Resize:\n    def __init__(self, size, *, device='cuda:0'):\n        self.size = size",
    ],
    "TD601": [
        "dev = torch.device('mps')\nt = torch.zeros(3, dtype=torch.float64, device=dev)",
        "def f(x, device):\n    x = x.to(device)\n    return x.double()",
        "t = t.to('mps', torch.float64)",
    ],
    "TD602": [
        "class G(nn.Module):\n    def __init__(self, i, v):\n        super().__init__()\n"
        "        self.register_buffer('adj', torch.sparse_coo_tensor(i, v, (3, 3)))",
        "adj = adj.to_sparse().to(device)",
        # pytorch/pytorch#143955: Whisper on MPS, SparseMPS backend
        "import whisper\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"
        "model = whisper.load_model('large-v3', device=device)",
        "from whisper import load_model\nm = load_model('tiny')\nm = m.to('mps')",
    ],
    "TD603": [
        "loss = nn.CTCLoss()(logp, y, il, tl)",
        "import torch.nn.functional as F\nloss = F.ctc_loss(logp, y, il, tl)",
    ],
    "TD304": [
        # coqui-ai/TTS TTS/tts/utils/synthesis.py (first blind scan corpus)
        "def mel(spec, device='cpu'):\n    return torch.FloatTensor(spec, device=device)",
        "ids = torch.LongTensor([1, 2], device='cuda')",
    ],
    "TD303": [
        "def f(x, device, s):\n    x = x.to(device)\n    noise = torch.randn(x.shape) * s\n"
        "    return x + noise",
        "def f(x):\n    x = x.cuda()\n    return torch.cat([x, torch.zeros(3, 4)])",
        # a module moved to the GPU, given a CPU tensor: 'mat1 is on cpu' (recorded on the H200)
        "def f(net, device):\n    m = net.to(device)\n    return m(torch.ones(1, 3))",
        # a name still on the GPU after a shape change: `c = c.unsqueeze(1)`
        "def f(a):\n    c = a.to('cuda')\n    c = c.unsqueeze(1)\n    return c < torch.rand(3)",
    ],
}

NEGATIVE = {
    "TD001": [
        "if torch.cuda.is_available():\n    model = model.cuda()",
        "if args.cuda:\n    model.cuda()",
        "model = model.cuda() if use_gpu else model",
        "def to_gpu(m):\n    return m.cuda()",
        "import torch.cuda\nx = torch.cuda.current_device()",
        "def f(m):\n    if not torch.cuda.is_available():\n        return m\n    return m.cuda()",
        "def f(m):\n    assert torch.cuda.is_available()\n    return m.cuda()",
        "import triton\nx = t.cuda()",
        "@unittest.skipIf(not torch.cuda.is_available(), 'no cuda')\ndef f():\n    x.cuda()",
        "m.cuda()  # torchdoctor: ignore[TD001]",
        "m.cuda()  # torchdoctor: ignore[hardcoded-cuda-call]",
        "m.cuda()  # torchdoctor: ignore",
    ],
    "TD002": [
        "x = t.to(device)",
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        'device = "cuda"',  # one place to change: a device variable
        'if x.device.type == "cuda":\n    pass',
        'ok = torch.device("cuda") in devices',
        'check_device(a, b, device="cuda")',
        'x = t.to("cpu")',
        'with torch.cuda.device(0):\n    y = t.to("cuda:0")',
        'def nccl_estimate(x):\n    return x.to("cuda")',  # NCCL-only code
    ],
    "TD003": [
        "if torch.cuda.is_available():\n    torch.cuda.synchronize()",
        "torch.cuda.empty_cache()",  # a no-op without CUDA
        "n = torch.cuda.device_count()",
    ],
    "TD101": ["sd = torch.load(f, map_location='cpu', weights_only=True)", "torch.load(**kw)"],
    "TD103": ["m = torch.jit.load(f, map_location='cpu')", "ep = torch.export.load(f)"],
    "TD102": ["sd = torch.load(f, map_location='cpu', weights_only=False)", "np.load(f)"],
    "TD201": ["m = DistributedDataParallel(model)"],
    "TD202": ["m = nn.DataParallel(model.to(device))"],
    "TD203": [
        "def train(model):\n    model = nn.DataParallel(model)\n    sd = model.module.state_dict()",
        "def train(model):\n    if torch.cuda.device_count() > 1:\n"
        "        model = nn.DataParallel(model)\n    sd = getattr(model, 'module', model)",
    ],
    "TD301": [
        MODULE.format(init='self.register_buffer("pos", torch.zeros(10))', forward="pass"),
        MODULE.format(init="self.w = nn.Parameter(torch.zeros(10))", forward="pass"),
        MODULE.format(init="self.n = 3", forward="pass"),
        "class NotAModule:\n    def __init__(self):\n        self.t = torch.zeros(3)",
        MODULE.format(
            init='self.p = torch.zeros(1)\n        self.register_buffer("p", self.p)',
            forward="pass",
        ),
    ],
    "TD302": [
        MODULE.format(init="pass", forward="x = x + torch.ones(x.shape[0], device=x.device)"),
        MODULE.format(init="pass", forward="m = torch.zeros_like(x)"),
        "def forward(x):\n    return torch.zeros(3)",  # not a module method
    ],
    "TD401": [
        "def f(model, x):\n    out = model(x)\n    out.backward()\n    return out.detach().cpu().numpy()",
        "def f(model, x):\n    out = model(x)\n    return out.cpu().numpy()",  # no grad visible
        "with torch.no_grad():\n    w = layer.weight.numpy()",
        "@torch.no_grad()\ndef f(layer):\n    return layer.weight.numpy()",
    ],
    "TD402": [
        "for x in loader:\n    loss = model(x)\n    loss.backward()\n    if i % 100 == 0:\n"
        "        print(loss.item())",
        "for x in data:\n    print(x.item())",  # not a training loop
        "for _ in range(10):\n    t0 = time.perf_counter()\n    run()\n"
        "    torch.cuda.synchronize()",
    ],
    "TD403": [
        "x = x.cuda()\narr = x.cpu().numpy()",
        "arr = torch.zeros(3).numpy()",  # never left the CPU
        "x = x.to(torch.float32)\narr = x.numpy()",  # a dtype, not a device
    ],
    "TD502": [
        "loader = DataLoader(ds, pin_memory=True)",  # only warns: TD501
        "if torch.cuda.is_available():\n    batch = batch.pin_memory()",
        "from torch.autograd.graph import save_on_cpu\nwith save_on_cpu(pin_memory=True):\n    pass",
    ],
    "TD501": [
        "loader = DataLoader(ds, pin_memory=torch.cuda.is_available())",
        "if torch.cuda.is_available():\n    loader = DataLoader(ds, pin_memory=True)",
    ],
    "TD004": [
        "if torch.cuda.is_available():\n    torch.cuda.synchronize()",
        "if device.type == 'cuda':\n    torch.cuda.synchronize()",
        "if device != 'cpu':\n    x = x.to(device)",  # no CUDA-only code behind it
    ],
    "TD006": [
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'",
        "is_half = True and cuda_malloc_supported()",  # no device picked
        "if torch.backends.cudnn.enabled:\n    torch.backends.cudnn.benchmark = True",
        "if not torch.version.cuda:\n    x = x.to('cuda')",  # true only on a build without CUDA
    ],
    "TD008": [
        "if hasattr(torch, 'xpu') and torch.xpu.is_available():\n    torch.xpu.synchronize()",
        "if hasattr(torch, 'xpu'):\n    torch.xpu.empty_cache()",  # harmless without XPU
        "if hasattr(torch, 'xpu'):\n    try:\n        torch.xpu.synchronize()\n"
        "    except Exception:\n        pass",
        "if hasattr(torch.backends, 'mps'):\n    ok = torch.backends.mps.is_available()",
    ],
    "TD009": [
        "with torch.autocast('cuda'):\n    y = model(x)",
        "with torch.cuda.amp.autocast():\n    y = model(x)",
        "torch.mps.empty_cache()\nok = torch.backends.mps.is_built()",
    ],
    "TD007": [
        "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "if torch.cuda.is_available():\n    pipe.enable_model_cpu_offload()",
        "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "if dev == 'cpu':\n    pipe.to(dev)\nelse:\n    pipe.enable_model_cpu_offload()",
        "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "pipe.enable_model_cpu_offload(device=dev)",  # the caller chose
    ],
    "TD005": [
        "def build(cfg, device=None):\n    return cfg",
        "def build(cfg, device='cpu'):\n    return cfg",
        "def _h(x, device='cuda'):\n    return x\n_h(1, device='cpu')\n_h(2, 'cpu')",
    ],
    "TD601": [
        "t = torch.zeros(3, dtype=torch.float64)",  # on the CPU
        "def f(x, device):\n    x = x.to(device)\n    return x.cpu().double()",
        "t = torch.zeros(3, dtype=torch.float64, device='cuda')",  # surely not MPS
    ],
    "TD602": [
        "adj = adj.to_sparse()",  # stays on the CPU
        "x = x.to(device)",
        # Whisper kept off MPS on purpose (the CUDA-or-CPU pick of most Whisper projects)
        "import whisper\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "model = whisper.load_model('base', device=device)",
        "import whisper\nmodel = whisper.load_model('base')",  # whisper picks CUDA or the CPU
        "from faster_whisper import WhisperModel\nfrom x import load_model\n"
        "m = load_model('tiny', device='mps')",  # not openai-whisper's
    ],
    "TD603": [
        "loss = nn.CrossEntropyLoss()(logits, y)",
        "from warpctc import ctc_loss\nloss = ctc_loss(a, b)",  # another library's
    ],
    "TD304": [
        "x = torch.FloatTensor([1.0], device='cpu')",
        "x = torch.FloatTensor([1.0])",
        "x = torch.cuda.FloatTensor([1.0])",  # the CUDA constructor: TD001's business
        "from tensorflow import FloatTensor\nx = FloatTensor([1.0], device='cuda')",
    ],
    "TD303": [
        "def f(x, device):\n    x = x.to(device)\n    return x + torch.randn(x.shape, device=device)",
        "def f(x, device):\n    x = x.to(device)\n    n = torch.randn(3)\n    n = n.to(device)\n"
        "    return x + n",
        "def f(x):\n    return x + torch.randn(3)",  # nothing placed here: unknown
        "def f(x, device):\n    x = x.to(device)\n    return x * torch.tensor(0.5)",  # 0-dim
        # offline-NeRF-based-NBV DistAgent.py (blind set 323): torch.tensor of a CUDA tensor
        # copies it on the GPU
        "def f(a, b):\n    c = torch.tensor(a).to('cuda')\n    c = c.unsqueeze(1)\n"
        "    r = b.to('cuda')\n    return torch.concat((r, torch.tensor(c).squeeze()), dim=1)",
        # Segment-Anything-in-NeRF sam_model.py (set 367): `.to(p.device)` of a CPU `p`
        "def f(p, cx, fx):\n    p = torch.from_numpy(p).to(torch.long)\n"
        "    coords = p - torch.tensor([[cx, cx]]).to(p.device)\n"
        "    coords /= torch.tensor([[fx, -fx]])\n    return coords",
        # a whole reduction of the CPU tensor is 0-dim: fine beside the GPU tensor
        "def f(x, device):\n    x = x.to(device)\n    w = torch.ones(3)\n    return x * w.sum()",
        # BirdCLEF residual_ssm_config_sweep.py (set 368): the probe's device is the CPU
        "def f(net, a):\n    device = torch.device('cpu')\n    m = net.to(device)\n"
        "    t = torch.tensor(a, dtype=torch.float32)\n    return m(t)",
        # Stock-Prediction cache_embeddings.py (set 330): the padding meets the loop's CPU rows;
        # the batch is moved after
        "def f(self, rows, n):\n    out = []\n    for r in rows:\n"
        "        pad = torch.zeros(n - r.shape[0])\n        r = torch.cat([r, pad])\n"
        "        out.append(r)\n    return torch.stack(out).to(self.device)",
    ],
}


def _cases(table: dict[str, list[str]]):
    return [
        pytest.param(rule, src, id=f"{rule}-{i}")
        for rule, srcs in table.items()
        for i, src in enumerate(srcs)
    ]


@pytest.mark.parametrize(("rule", "src"), _cases(POSITIVE))
def test_rule_flags(rule: str, src: str) -> None:
    src = textwrap.dedent(src)
    assert rule in rules_in("import torch\nfrom torch import nn\n" + src)


@pytest.mark.parametrize(("rule", "src"), _cases(NEGATIVE))
def test_rule_quiet(rule: str, src: str) -> None:
    assert rule not in rules_in("import torch\nfrom torch import nn\n" + src)


def test_every_rule_has_both_kinds_of_test():
    ids = {r.id for r in RULES}
    assert ids == set(POSITIVE) == set(NEGATIVE)


def test_position_code_and_fix_text():
    src = "import torch\n\nx = 1\nmodel = Net().cuda()\n"
    (f,) = scan_source("m.py", src, ScanOptions())[0]
    assert (f.rule, f.line, f.col, f.code) == ("TD001", 4, 9, "model = Net().cuda()")
    assert f.level == "error" and ".to(device)" in f.fix


def test_column_counts_characters_not_bytes():
    src = 'import torch\nnom = "é"; m = x.cuda()\n'
    (f,) = scan_source("m.py", src, ScanOptions())[0]
    assert f.col == src.splitlines()[1].index("x.cuda") + 1


def test_select_and_ignore():
    src = "import torch\nm.cuda()\ntorch.load(f)\n"
    only = scan_source("m.py", src, ScanOptions(select=frozenset({"TD101"})))[0]
    assert [f.rule for f in only] == ["TD101"]
    rest = scan_source("m.py", src, ScanOptions(ignore=frozenset({"TD101", "TD102"})))[0]
    assert [f.rule for f in rest] == ["TD001"]


def _fixed(src: str) -> str:
    src = textwrap.dedent(src)
    findings, _ = scan_source("m.py", src, ScanOptions())
    p = plan("m.py", src, findings)
    return p.new if p else src


def test_fix_torch_load_adds_both_arguments():
    new = _fixed("import torch\nnet.load_state_dict(torch.load(\n    path,  # the file\n))\n")
    assert (
        'torch.load(\n    path,  # the file\n    map_location="cpu",\n    weights_only=True,\n)'
        in new
    )
    ast.parse(new)


def test_fix_uses_device_variable_in_scope():
    new = _fixed(
        """
        import torch
        def main(device, path):
            model = Net().cuda()
            x = batch.cuda(non_blocking=True)
            sd = torch.load(path)
            y = t.to("cuda")
        """
    )
    assert "model = Net().to(device)" in new
    assert "x = batch.to(device, non_blocking=True)" in new
    # `sd` is never shown to be a state dict: weights_only=True could refuse it (reported)
    assert "torch.load(path, map_location=device)" in new
    assert "y = t.to(device)" in new


def test_fix_leaves_cuda_alone_without_device_variable():
    src = "import torch\nmodel = Net().cuda()\nd = torch.device('cuda')\n"
    assert _fixed(src) == src


def test_fix_detach_and_pin_memory():
    new = _fixed(
        """
        import torch
        def train(model, x, loader):
            out = model(x)
            out.sum().backward()
            dl = DataLoader(x, pin_memory=True)
            return out.cpu().numpy()
        """
    )
    assert "out.detach().cpu().numpy()" in new
    assert "pin_memory=torch.cuda.is_available()" in new


@pytest.mark.parametrize(("meet", "shown"), [("x * w", True), ("x * w.sum()", False)])
def test_td302_a_whole_reduction_of_the_factory_is_0_dim(meet: str, shown: bool) -> None:
    """`w.sum()` of a CPU tensor is 0-dim, and every 0-dim CPU tensor recorded beside a GPU
    tensor on the H200 ran (tests/facts/device_claims/cuda-gpu-mixes.json): shown only for
    `x * w`."""
    src = MODULE.format(init="pass", forward=f"w = torch.ones(3)\n        x = {meet}")
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(confidence="low"))
    assert [(f.rule, f.confidence != "low") for f in found] == [("TD302", shown)]
