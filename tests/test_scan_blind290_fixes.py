"""False findings of the blind sets 290-297 (twenty-seventh session), fixed after their one
scoring: each test reproduces the public code the labellers judged, reduced to what decides it.
Both are loads of weights the repository commits, which are as trusted as the code loading them
(the precedent of every blind set since the eighteenth)."""

from __future__ import annotations

from torchdoctor.scan import ScanOptions

from .scan_tree import scan_tree as scan

COMMITTED = "not read: only its being a regular file in the tree counts"

# calvinlchen/classical-music-generation-model's backend/main.py (set 294), run from backend/
FROM_A_SUBFOLDER = """\
    import torch
    COND_DIFF_MODEL_PATH = "../models/diffusion_conditional_20000/best_model.pt"
    checkpoint = torch.load(COND_DIFF_MODEL_PATH, map_location="cpu")
    vocab_data = torch.load("../models/transformer/vocab.pt", map_location="cpu")
"""


def _weights_only(found, level: str = "high") -> list[tuple[str, int]]:
    return [(path, line) for path, line, rule, conf in found if rule == "TD102" and conf == level]


def test_a_committed_checkpoint_named_from_a_subfolder_classical_music_generation(tmp_path):
    """Labelled lookalikes: "torch.load of the committed checkpoint ../models/…/best_model.pt
    at a fixed path". The `../` climbs from backend/, where the server is started, to the
    repository's models/ folder."""
    tree = {
        "pyproject.toml": "",
        "backend/main.py": FROM_A_SUBFOLDER,
        "models/diffusion_conditional_20000/best_model.pt": COMMITTED,
        "models/transformer/vocab.pt": COMMITTED,
    }
    found = scan(tmp_path, tree)
    assert _weights_only(found) == []
    assert _weights_only(found, "low") == [("backend/main.py", 3), ("backend/main.py", 4)]


def test_a_path_that_climbs_out_of_the_repository_is_not_its_own(tmp_path):
    """The same `../` from the repository's root names a file beside the repository, which
    it does not ship: the load stays a finding. So does a path to a file nobody committed."""
    repo = tmp_path / "repo"
    (tmp_path / "models" / "transformer").mkdir(parents=True)
    (tmp_path / "models" / "transformer" / "vocab.pt").write_text(COMMITTED)
    found = scan(repo, {"pyproject.toml": "", "main.py": FROM_A_SUBFOLDER})
    assert _weights_only(found) == [("main.py", 3), ("main.py", 4)]


# JewelryForge/QuadrupedRL's qdpgym/tasks/identify/identify.py (set 290)
AUTHOR_PATH = """\
    import torch

    if __name__ == "__main__":
        device = torch.device("cpu")
        if TRAIN:
            pass
        else:
            model_path = '/home/jewel/Workspaces/QuadrupedRLv2/qdpgym/sim/resources/acnet.pt'
            model_info = torch.load(model_path, map_location=device)
"""


def test_the_authors_absolute_path_to_a_committed_file_quadrupedrl(tmp_path):
    """Labelled a lookalike: "torch.load of the committed qdpgym/sim/resources/acnet_220526.pt
    at a fixed path". The author's absolute path ends in folders and a file the repository
    holds, and the `if __name__` block binds the path once."""
    tree = {
        "setup.py": "",
        "qdpgym/tasks/identify/identify.py": AUTHOR_PATH,
        "qdpgym/sim/resources/acnet.pt": COMMITTED,
    }
    found = scan(tmp_path, tree)
    assert _weights_only(found) == []
    assert _weights_only(found, "low") == [("qdpgym/tasks/identify/identify.py", 9)]


def test_an_absolute_path_is_matched_by_more_than_its_file_name(tmp_path):
    """Only the file's name in common (another folder's acnet.pt), a second binding of the
    path, or a Windows drive path to a file not in the tree: still a finding."""
    tree = {"setup.py": "", "identify.py": AUTHOR_PATH, "weights/acnet.pt": COMMITTED}
    assert _weights_only(scan(tmp_path / "a", tree)) == [("identify.py", 9)]
    rebound = AUTHOR_PATH.replace("pass", "model_path = input()")
    tree = {"setup.py": "", "q/identify.py": rebound, "qdpgym/sim/resources/acnet.pt": COMMITTED}
    assert _weights_only(scan(tmp_path / "b", tree)) == [("q/identify.py", 9)]
    drive = AUTHOR_PATH.replace("/home/jewel/Workspaces", "B:/code/kortex")
    tree = {"setup.py": "", "identify.py": drive}
    assert _weights_only(scan(tmp_path / "c", tree)) == [("identify.py", 9)]


# Icyfiremario/PPO-Jumpstart's test.py (set 309): a module moved in place, then its output
PLACED_IN_PLACE = """\
    import torch
    from network import FeedForwardNN

    if torch.cuda.is_available():
        DEVICE = torch.device("cuda:0")
    else:
        DEVICE = torch.device("cpu")

    policy = FeedForwardNN(3, 1)
    policy.to(DEVICE)
    while True:
        action = policy(obs).detach().numpy()
"""


def _numpy(found) -> list[int]:
    return [line for _, line, rule, _ in found if rule == "TD403"]


def test_cant_convert_cuda_device_type_tensor_to_numpy_ppo_jumpstart(tmp_path):
    """Labelled a crash: "policy(obs).detach().numpy() without .cpu(): policy is moved to DEVICE
    (cuda:0 when available)". `Module.to` moves the module in place: its output is on the
    device, and `.numpy()` raises "can't convert cuda:0 device type tensor to numpy"."""
    assert _numpy(scan(tmp_path, {"test.py": PLACED_IN_PLACE})) == [12]


def test_a_module_moved_back_or_a_tensor_to_call_is_not_on_the_device(tmp_path):
    """Moved back to the CPU before the call, moved only before it was rebuilt, or a tensor's
    discarded `.to()` (the tensor itself never moves): no finding."""
    back = PLACED_IN_PLACE.replace("policy.to(DEVICE)\n", "policy.to(DEVICE)\n    policy.cpu()\n")
    assert _numpy(scan(tmp_path / "a", {"test.py": back})) == []
    rebuilt = PLACED_IN_PLACE.replace(
        "policy.to(DEVICE)\n", "policy.to(DEVICE)\n    policy = FeedForwardNN(3, 1)\n"
    )
    assert _numpy(scan(tmp_path / "b", {"test.py": rebuilt})) == []
    tensor = PLACED_IN_PLACE.replace("policy(obs)", "policy")
    assert _numpy(scan(tmp_path / "c", {"test.py": tensor})) == []


STATEMENT_FALLBACK = """\
    import torch

    if torch.cuda.is_available():
        device = "cuda"
    else:
        device = "cpu"

    def evaluate(model, x):
        return model(x.cuda())
"""


def test_the_statement_form_of_a_cpu_fallback_is_a_fallback(tmp_path):
    """`if torch.cuda.is_available(): device = "cuda"` / `else: device = "cpu"` picks the CPU
    where CUDA is absent as surely as `"cuda" if … else "cpu"` does, so a `.cuda()` in that
    file breaks the file's own fallback: medium by the rule's own reasoning (--portable: the
    calibration since sets 349-356 puts the class just under the bar), as in the expression
    form. Without the fallback the same line is code its author runs on a CUDA machine (low).
    (PPO-Jumpstart's test.py, set 309, picks its device this way.)"""

    def cuda_calls(found):
        return [(line, conf) for _, line, rule, conf in found if rule == "TD001"]

    own = ScanOptions(confidence="low", portable=True)
    assert cuda_calls(scan(tmp_path / "a", {"eval.py": STATEMENT_FALLBACK}, own)) == [(9, "medium")]
    block = (
        'if torch.cuda.is_available():\n        device = "cuda"\n    else:\n        device = "cpu"'
    )
    expression = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
    assert block in STATEMENT_FALLBACK
    same = STATEMENT_FALLBACK.replace(block, expression)
    assert cuda_calls(scan(tmp_path / "b", {"eval.py": same}, own))[0][1] == "medium"
    none = STATEMENT_FALLBACK.replace('device = "cpu"', "device = None")
    assert cuda_calls(scan(tmp_path / "c", {"eval.py": none}, own)) == [(9, "low")]
