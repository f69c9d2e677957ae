"""The --fix corpus: real idioms (written for this suite), each with the file --fix must leave.

`expected` None means "left alone": every finding stays, reported with why it was not fixed.
Sources are dedented; `H` binds `device` the usual way, so device edits are possible.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

H = 'import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


# Loads are fixed for projects that still allow torch < 2.6: from 2.6 on, `weights_only=True`
# is torch's own default and the scan says nothing of a load (TD102).
BEFORE_WEIGHTS_ONLY_DEFAULT = "torch>=2.4"


@dataclass(frozen=True)
class Case:
    name: str
    src: str
    expected: str | None  # None: left alone
    torch_floor: str = "torch>=2.6"  # what the project's requirements.txt says


def case(name: str, src: str, expected: str | None, **kw: str) -> Case:
    src = textwrap.dedent(src)
    return Case(name, src, None if expected is None else textwrap.dedent(expected), **kw)


TRAIN = """
def step(x):
    model = build()
    loss = model(x).sum()
    loss.backward()
    {}
"""

CASES = [
    # ------------------------------------------------------------ TD401 .numpy() chains
    case(
        "numpy_on_a_call_result_detaches_the_result_not_the_model",
        TRAIN.format("y = model(x).cpu().numpy()"),
        TRAIN.format("y = model(x).detach().cpu().numpy()"),
    ),
    case(
        "numpy_on_an_output_variable",
        TRAIN.format("out = model(x)\n    return out.cpu().numpy()"),
        TRAIN.format("out = model(x)\n    return out.detach().cpu().numpy()"),
    ),
    case(
        "numpy_on_a_subscript",
        TRAIN.format("out = model(x)\n    return out[0].float().cpu().numpy()"),
        TRAIN.format("out = model(x)\n    return out[0].detach().float().cpu().numpy()"),
    ),
    case("numpy_on_a_weight", "w = layer.weight.numpy()\n", "w = layer.weight.detach().numpy()\n"),
    case(
        "numpy_in_a_method_on_an_attribute_chain",
        "class A:\n    def show(self):\n        print(self.fc.bias.numpy())\n",
        "class A:\n    def show(self):\n        print(self.fc.bias.detach().numpy())\n",
    ),
    case(
        "numpy_in_a_parameters_loop",
        "for p in model.parameters():\n    print(p.numpy())\n",
        "for p in model.parameters():\n    print(p.detach().numpy())\n",
    ),
    case(
        "numpy_in_a_list_comprehension",
        TRAIN.format("outs = model(x)\n    return [outs[i].cpu().numpy() for i in range(3)]"),
        TRAIN.format(
            "outs = model(x)\n    return [outs[i].detach().cpu().numpy() for i in range(3)]"
        ),
    ),
    case(
        "numpy_in_a_lambda",
        "get = lambda m: m.bias.numpy()\n",
        "get = lambda m: m.bias.detach().numpy()\n",
    ),
    case(
        "numpy_on_a_parenthesised_receiver",
        "w = (layer.weight).numpy()\n",
        "w = (layer.weight).detach().numpy()\n",
    ),
    case(
        "numpy_chain_over_lines_with_a_comment",
        TRAIN.format(
            "out = model(x)\n    return (\n        out  # logits\n        .cpu()\n        .numpy()\n    )"
        ),
        TRAIN.format(
            "out = model(x)\n    return (\n        out.detach()  # logits\n        .cpu()\n        .numpy()\n    )"
        ),
    ),
    case(
        "numpy_inside_an_fstring",
        'print(f"{layer.weight.numpy()}")\n',
        'print(f"{layer.weight.detach().numpy()}")\n',
    ),
    # ------------------------------------------------------------ TD001 .cuda()
    case("cuda_call_becomes_to_device", H + "x = x.cuda()\n", H + "x = x.to(device)\n"),
    case(
        "cuda_non_blocking_is_kept",
        H + "x = x.cuda(non_blocking=True)\n",
        H + "x = x.to(device, non_blocking=True)\n",
    ),
    case("cuda_with_a_device_index_is_left_alone", H + "x = x.cuda(0)\n", None),
    case("cuda_with_star_args_is_left_alone", H + "x = x.cuda(*where)\n", None),
    case(
        "cuda_in_a_method_chain",
        H + "model = Net().cuda().eval()\n",
        H + "model = Net().to(device).eval()\n",
    ),
    case("cuda_without_a_device_variable_is_left_alone", "def f(m):\n    return m.cuda()\n", None),
    case(
        "cuda_in_a_decorated_function",
        H + "@torch.no_grad()\ndef infer(model, x):\n    return model(x.cuda())\n",
        H + "@torch.no_grad()\ndef infer(model, x):\n    return model(x.to(device))\n",
    ),
    case(
        "cuda_with_a_comment_inside_the_call",
        H + "x = x.cuda(  # move it\n    non_blocking=True,\n)\n",
        H + "x = x.to(  # move it\n    device, non_blocking=True,\n)\n",
    ),
    case(
        "cuda_on_nested_parentheses",
        H + "y = ((x)).cuda(non_blocking=True)\n",
        H + "y = ((x)).to(device, non_blocking=True)\n",
    ),
    case(
        "cuda_in_a_tab_indented_block",
        H + "if ready:\n\tx = x.cuda()\n",
        H + "if ready:\n\tx = x.to(device)\n",
    ),
    case(
        "cuda_in_an_async_function",
        H + "async def get(q):\n    x = await q.get()\n    return x.cuda()\n",
        H + "async def get(q):\n    x = await q.get()\n    return x.to(device)\n",
    ),
    case(
        "cuda_in_a_static_method",
        H + "class Box:\n    @staticmethod\n    def put(x):\n        return x.cuda()\n",
        H + "class Box:\n    @staticmethod\n    def put(x):\n        return x.to(device)\n",
    ),
    case(
        "cuda_in_a_closure_over_a_device_parameter",
        "def make(device):\n    def move(x):\n        return x.cuda()\n    return move\n",
        "def make(device):\n    def move(x):\n        return x.to(device)\n    return move\n",
    ),
    # ------------------------------------------------------------ TD002 "cuda" strings
    case("to_cuda_string", H + 'x = x.to("cuda")\n', H + "x = x.to(device)\n"),
    case(
        "device_keyword_cuda_0",
        H + 'z = torch.zeros(3, device="cuda:0")\n',
        H + "z = torch.zeros(3, device=device)\n",
    ),
    case("parenthesised_cuda_string", H + 'x = x.to(("cuda"))\n', H + "x = x.to((device))\n"),
    case(
        "torch_device_cuda_is_where_a_device_is_defined",
        'import torch\nd = torch.device("cuda")\n',
        None,
    ),
    # ------------------------------------------------------------ TD101/TD102 torch.load
    case(
        "load_into_load_state_dict",
        H + "net.load_state_dict(torch.load(path))\n",
        H + "net.load_state_dict(torch.load(path, map_location=device, weights_only=True))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_with_a_parenthesised_last_argument",
        H + 'net.load_state_dict(torch.load(("a.pt")))\n',
        H + 'net.load_state_dict(torch.load(("a.pt"), map_location=device, weights_only=True))\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_whole_model_without_device_is_left_alone",
        'import torch\nmodel = torch.load("model.pt")\n',
        None,
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_whole_model_gets_no_weights_only",
        H + 'model = torch.load("model.pt")\nmodel.eval()\n',
        H + 'model = torch.load("model.pt", map_location=device)\nmodel.eval()\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_an_array_gets_no_weights_only",
        'import torch\narr = torch.load("x.pt", map_location="cpu")\nprint(arr.mean())\n',
        None,
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_state_dict_by_name",
        'import torch\nsd = torch.load(p, map_location="cpu")\nmodel.load_state_dict(sd)\n',
        'import torch\nsd = torch.load(p, map_location="cpu", weights_only=True)\n'
        "model.load_state_dict(sd)\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_state_dict_with_renamed_keys",
        'import torch\nsd = torch.load(p, map_location="cpu")\n'
        "model.load_state_dict({k[7:]: v for k, v in sd.items()})\n",
        'import torch\nsd = torch.load(p, map_location="cpu", weights_only=True)\n'
        "model.load_state_dict({k[7:]: v for k, v in sd.items()})\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_checkpoint_with_other_objects_gets_no_weights_only",
        'import torch\nck = torch.load(p, map_location="cpu")\n'
        'model.load_state_dict(ck["model"])\nargs = ck["args"]\n',
        None,
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_path_saved_from_a_state_dict",
        'import torch\ntorch.save(model.state_dict(), "w.pt")\nw = torch.load("w.pt", map_location="cpu")\n',
        'import torch\ntorch.save(model.state_dict(), "w.pt")\n'
        'w = torch.load("w.pt", map_location="cpu", weights_only=True)\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_of_a_path_saved_from_a_whole_model",
        'import torch\ntorch.save(model, "m.pt")\nm = torch.load("m.pt", map_location="cpu")\n',
        None,
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_over_lines_with_a_trailing_comma",
        """
        import torch
        sd = torch.load(
            path,
            map_location="cpu",
        )
        model.load_state_dict(sd)
        """,
        """
        import torch
        sd = torch.load(
            path,
            map_location="cpu",
            weights_only=True,
        )
        model.load_state_dict(sd)
        """,
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_over_lines_with_a_comment_after_the_last_argument",
        H + "net.load_state_dict(torch.load(\n    path  # the weights\n))\n",
        H + "net.load_state_dict(torch.load(\n"
        "    path, map_location=device, weights_only=True  # the weights\n))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_over_lines_with_a_comment_after_a_trailing_comma",
        "import torch\nnet.load_state_dict(torch.load(\n    path,  # the file\n))\n",
        "import torch\nnet.load_state_dict(torch.load(\n    path,  # the file\n"
        '    map_location="cpu",\n    weights_only=True,\n))\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_with_a_trailing_comma_on_one_line",
        H + "net.load_state_dict(torch.load(p, ))\n",
        H + "net.load_state_dict(torch.load(p, map_location=device, weights_only=True, ))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_with_weights_only_already_present",
        H + "m = torch.load(p, weights_only=False)\n",
        H + "m = torch.load(p, weights_only=False, map_location=device)\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_with_a_pickle_module_gets_no_weights_only",
        H + "import pickle\nnet.load_state_dict(torch.load(p, pickle_module=pickle))\n",
        H + "import pickle\n"
        "net.load_state_dict(torch.load(p, pickle_module=pickle, map_location=device))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_imported_from_torch",
        'from torch import load\nnet.load_state_dict(load(p, map_location="cpu"))\n',
        'from torch import load\nnet.load_state_dict(load(p, map_location="cpu", weights_only=True))\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_through_an_alias",
        'import torch as th\nnet.load_state_dict(th.load(p, map_location="cpu"))\n',
        'import torch as th\nnet.load_state_dict(th.load(p, map_location="cpu", weights_only=True))\n',
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_with_star_args",
        H + "net.load_state_dict(torch.load(*args))\n",
        H + "net.load_state_dict(torch.load(*args, map_location=device, weights_only=True))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "load_inside_a_comprehension",
        H + "sds = [torch.load(p) for p in paths]\n",
        H + "sds = [torch.load(p, map_location=device) for p in paths]\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    # ------------------------------------------------------------ TD501 pin_memory
    case(
        "pin_memory_prefers_torch_accelerator",
        "import torch\ndl = DataLoader(ds, pin_memory=True)\n",
        "import torch\ndl = DataLoader(ds, pin_memory=torch.accelerator.is_available())\n",
    ),
    case(
        "pin_memory_on_an_old_torch_asks_cuda",
        "import torch\ndl = DataLoader(ds, pin_memory=True)\n",
        "import torch\ndl = DataLoader(ds, pin_memory=torch.cuda.is_available())\n",
        torch_floor="torch>=2.1,<2.6",
    ),
    case(
        "pin_memory_in_a_file_that_never_imports_torch",
        '"""Data."""\nfrom __future__ import annotations\n'
        "from torch.utils.data import DataLoader\ndl = DataLoader(ds, pin_memory=True)\n",
        '"""Data."""\nfrom __future__ import annotations\nimport torch\n'
        "from torch.utils.data import DataLoader\n"
        "dl = DataLoader(ds, pin_memory=torch.accelerator.is_available())\n",
    ),
    case(
        "pin_memory_through_an_alias",
        "import torch as th\ndl = DataLoader(ds, pin_memory=True)\n",
        "import torch as th\ndl = DataLoader(ds, pin_memory=th.accelerator.is_available())\n",
    ),
    case(
        "pin_memory_where_torch_is_some_other_object",
        "from mylib import torch\ndl = DataLoader(ds, pin_memory=True)\n",
        None,
    ),
    # ------------------------------------------------------------ several at once
    case(
        "one_declined_edit_keeps_the_others",
        H + "a = x.cuda(1)\nb = y.cuda()\nnet.load_state_dict(torch.load(p))\n",
        H + "a = x.cuda(1)\nb = y.to(device)\n"
        "net.load_state_dict(torch.load(p, map_location=device, weights_only=True))\n",
        torch_floor=BEFORE_WEIGHTS_ONLY_DEFAULT,
    ),
    case(
        "cuda_and_numpy_in_one_chain",
        "for p in model.parameters():\n    print(p.cuda().cpu().numpy())\n",
        "for p in model.parameters():\n    print(p.cuda().detach().cpu().numpy())\n",
    ),
]
