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


# Deep-reinforcement-learning-with-pytorch's SAC: `torch.load(self.policy_net.state_dict(),
# path)` where `torch.save` was meant. It raises a TypeError before unpickling anything, so
# TD102's "add weights_only=True" (and TD101's map_location) would be advice for a call that
# never loads; three false TD102 findings in set 38.
SAVE_MISSPELT = """import torch

class SAC:
    def save(self, path):
        torch.load(self.policy_net.state_dict(), path + "policy.pth")

    def load(self, path):
        self.policy_net.load_state_dict(torch.load(path + "policy.pth"))

    def save_critic(self, path):
        torch.load(f=self.critic.state_dict())
"""


def test_torch_load_of_a_state_dict_is_a_misspelt_save_not_an_unsafe_load():
    found, _ = scan_source("SAC.py", SAVE_MISSPELT, ScanOptions(confidence="low"))
    load_rules = {(f.rule, f.line) for f in found if f.rule in ("TD101", "TD102")}
    assert ("TD102", 5) not in load_rules and ("TD101", 5) not in load_rules
    assert ("TD102", 8) in load_rules  # the real load beside it is still reported
    assert ("TD102", 11) not in load_rules  # the same mistake with the `f=` keyword
