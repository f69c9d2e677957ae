"""False findings of the blind sets 266-273 (twenty-sixth session), fixed after their one
scoring: each test reproduces the public code the labellers judged, reduced to what decides it."""

from __future__ import annotations

from .scan_tree import scan_tree as scan

# yjs2005/diffusion-policy-obstacle-reach-2d's eval.py (set 266)
OLD_TORCH_FALLBACK = """\
    import torch

    def load(checkpoint_path, device):
        try:
            checkpoint = torch.load(checkpoint_path, map_location=device, weights_only=False)
        except TypeError:
            checkpoint = torch.load(checkpoint_path, map_location=device)
        return checkpoint
"""


def _weights_only(found):
    return [line for _, line, rule, _ in found if rule == "TD102"]


def test_the_except_typeerror_fallback_for_a_torch_without_weights_only(tmp_path):
    """Labelled a lookalike: "except TypeError fallback for a torch without the weights_only
    keyword; the first call already passes weights_only=False". The fallback runs only on a
    torch before 1.13, where there is no keyword to add."""
    assert _weights_only(scan(tmp_path, {"eval.py": OLD_TORCH_FALLBACK})) == []


def test_a_load_in_another_handler_is_still_flagged(tmp_path):
    """A handler for another error, or a try whose load does not choose weights_only, is no
    such fallback: the plain load there unpickles on every torch before 2.6."""
    other = OLD_TORCH_FALLBACK.replace("except TypeError", "except FileNotFoundError")
    assert _weights_only(scan(tmp_path / "a", {"eval.py": other})) == [7]
    unchosen = OLD_TORCH_FALLBACK.replace(", weights_only=False", "")
    assert _weights_only(scan(tmp_path / "b", {"eval.py": unchosen})) == [5, 7]
