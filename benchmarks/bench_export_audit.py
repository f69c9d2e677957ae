"""How long `torchdoctor.audit_export` takes on a ResNet-18-sized model, phase by phase.

    python benchmarks/bench_export_audit.py [--repeat 3] [--via torch.export --via onnx]

The model is a ResNet-18 written here (11.7 M parameters, random weights: nothing downloaded),
so it also serves the CLI:
    torchdoctor audit benchmarks/bench_export_audit.py:resnet18 --input-shape 1,3,224,224

The first audit in a process pays the exporters' one-time imports and set-up (the CLI pays it
on every run, in its child process); later ones show the steady cost. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
        return (out + (x if self.down is None else self.down(x))).relu()


class ResNet18(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(self.layers(self.stem(x)).mean(dim=(2, 3)))


def resnet18() -> nn.Module:
    """The factory for `torchdoctor audit`: in eval mode, as it would be exported."""
    torch.manual_seed(0)
    return ResNet18().eval()


def main() -> int:
    import torchdoctor

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--via", action="append", choices=["torch.export", "onnx"])
    args = ap.parse_args()
    model, x = resnet18(), torch.randn(1, 3, 224, 224)
    params = sum(p.numel() for p in model.parameters())
    print(
        f"ResNet-18: {params / 1e6:.1f} M parameters, input 1×3×224×224, torch {torch.__version__}"
    )
    cols = ("checklist", "copy", "eager", "export", "run", "total")
    print(f"\n| via | audit | {' | '.join(cols)} | findings |\n|{'---|' * (len(cols) + 3)}")
    for via in args.via or ["torch.export", "onnx"]:
        runs = []
        for i in range(args.repeat):
            t0 = time.perf_counter()
            findings = torchdoctor.audit_export(model, x, via=via)
            runs.append({**findings.timings, "total": time.perf_counter() - t0})
            label = "first" if i == 0 else f"#{i + 1}"
            row = " | ".join(f"{runs[-1][k]:.3f} s" for k in cols)
            print(f"| {via} | {label} | {row} | {[f.id for f in findings] or 'none'} |", flush=True)
        if len(runs) > 2:
            steady = {k: statistics.median(r[k] for r in runs[1:]) for k in runs[0]}
            row = " | ".join(f"{steady[k]:.3f} s" for k in cols)
            print(f"| {via} | median of later | {row} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
