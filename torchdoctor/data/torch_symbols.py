"""What marks a library or symbol as torch's own: shared by the live search for extensions built
against another torch (probes/extension_links.py) and the reading of a pasted 'undefined
symbol' line (check/checks/extension_abi.py)."""

from __future__ import annotations

import re

# Itanium-mangled names in torch's C++ namespaces (c10, at, torch, caffe2; _ZNK: const members).
TORCH_SYMBOL = re.compile(r"^_ZNK?(?:3c10|2at|5torch|6caffe2)")
# torch and the companions torchdoctor imports (their load errors are judged from that import).
TORCH_OWN_MODULES = ("torch", "torchvision", "torchaudio", "torchtext", "triton", "xformers")
