"""Precision and recall of `torchdoctor scan` on the blind corpus of issue 20.

    python benchmarks/scan_blind.py [--corpus-root DIR] [--no-write]

The corpus (benchmarks/scan_blind/corpus.json) is 31 files of 8 public repositories; its
labels (labels.csv) were written by someone who had never seen the scan's output: 35 real
pitfalls (must_flag=yes: crash, security or perf) and 93 lookalikes (must_flag=no).
DIR holds one source tree per repository, named as the last part of `local_path` in
corpus.json (default /work/research/scan_corpus). To make them:

    git clone https://github.com/<repo> DIR/<name> && git -C DIR/<name> checkout <commit>

Each repository is scanned whole (the project view needs the callers and the saved files),
with --format json, once at the default confidence and once at --confidence low; only the
findings in the labelled files are kept. A finding matches a label when the file is the
same, its rule is one that points at the label's kind (KIND_RULES) and the lines differ by
at most 2. Findings on lines with no label go to scan_blind/unlabelled.csv; the verdicts on
them in scan_blind/judged.csv were made after seeing the output (not blind) and are counted
apart.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).with_name("scan_blind")
DEFAULT_ROOT = Path("/work/research/scan_corpus")
SLACK = 2  # lines between a finding and its label: a statement over several lines
LEVELS: dict[str, str | None] = {"default": None, "low": "low"}
SEVERITIES = ("crash", "security", "perf")

# The labeller's kinds that are not rule ids, and the rules whose finding points at each
# (set before the scan was run on the corpus). A rule id in the kind stands for itself.
KIND_RULES: dict[str, frozenset[str]] = {
    "mps-float64": frozenset({"TD601"}),
    "guard-covers-too-little": frozenset({"TD003", "TD004"}),
    "public-api-cuda-default": frozenset({"TD005"}),
    "factory-without-device": frozenset({"TD302", "TD303"}),
    # no rule targeted it when the corpus was labelled (the nearest was TD002); TD304 came
    # after the blind figures, from this very miss (not blind)
    "legacy-constructor-device": frozenset({"TD002", "TD304"}),
    "hardcoded-cuda": frozenset({"TD001", "TD002", "TD003"}),
    "hardcoded-cuda autocast": frozenset({"TD001", "TD002", "TD003"}),
    "hardcoded-cuda-device": frozenset({"TD002"}),
    "implicit-sync-in-loop": frozenset({"TD402"}),
    "implicit-sync": frozenset({"TD402"}),
    "cpu-roundtrip": frozenset({"TD303", "TD402"}),
    "unsafe-pickle": frozenset({"TD102"}),
    # Kinds of the second corpus (scan_blind2), added before the scan was run on it.
    "unsafe-unpickle": frozenset({"TD102"}),
    "hardcoded-device": frozenset({"TD001", "TD002", "TD003"}),
    "platform-branch-crash": frozenset(),  # no rule of this version targets these three
    "mps-cache-not-cleared": frozenset({"TD009"}),  # set 2; TD009 since set 255
    "convert-before-transfer": frozenset(),
    # Kinds of the third corpus (scan_blind3), added before the scan was run on it.
    "half-on-cpu": frozenset(),  # no rule of this version targets these two
    "cuda-count-as-process-count": frozenset(),
    # Kinds of the fourth corpus (scan_blind4), added before the scan was run on it.
    "GradScaler-cuda": frozenset({"TD001", "TD002", "TD003"}),
    # set 188's name for the same (its rows are lookalikes); mapped before the set was scored
    "cuda-gradscaler": frozenset({"TD001", "TD002", "TD003"}),
    # set 185's hard-coded "xpu" of an Intel Arc backend class (lookalikes): what TD002 and
    # TD008 (a string naming the XPU device) would point at; mapped after the set's first
    # scoring stopped on it, before its figures were used
    "hardcoded-xpu-device": frozenset({"TD002", "TD008"}),
    # set 195's CUDA_LAUNCH_BLOCKING=1 set in a training script (a lookalike): no scan rule
    # reads it; mapped after the set's first scoring stopped on it
    "cuda-launch-blocking": frozenset(),
    # set 193's model never moved to the GPU it picks (a perf lookalike): no scan rule targets
    # it; mapped before the set was scored
    "model-left-on-cpu": frozenset(),
    "autocast-cuda": frozenset({"TD001", "TD002", "TD003"}),
    "cuda-extension-build": frozenset({"TD001", "TD002", "TD003"}),
    "set-default-cuda-tensor-type": frozenset({"TD001", "TD002", "TD003"}),
    "legacy-type-isinstance": frozenset(),  # no rule of this version targets these two
    "module-global-device": frozenset(),
    # Kinds of the fifth corpus (scan_blind5), added before the scan was run on it.
    "cuda-default-fallback": frozenset({"TD001", "TD002", "TD003", "TD005"}),
    "cuda-fallback-without-check": frozenset({"TD001", "TD002", "TD003"}),
    "cuda-default-cli-option": frozenset({"TD002", "TD005"}),
    "int-device-index": frozenset({"TD001", "TD002", "TD003"}),
    "mps-override": frozenset({"TD002"}),
    "mps-override-after-placement": frozenset(),  # no rule of this version targets it
    # Kinds of the sixth corpus (scan_blind6), added before the scan was run on it.
    "sync-in-loop": frozenset({"TD402"}),
    "device-str-compare": frozenset(),  # no rule of this version targets it
    # Kinds of the eighth corpus (scan_blind8), added before the scan was run on it.
    "cuda-legacy-type": frozenset({"TD001", "TD002", "TD003", "TD304"}),
    # Kinds of the ninth and tenth corpora, added before the scan was run on them.
    "device-pick-ignores-config": frozenset({"TD001", "TD002", "TD003", "TD005"}),
    "grad-scaler-cuda": frozenset({"TD001", "TD002", "TD003"}),
    # Kinds of the eleventh corpus, added before the scan was run on it.
    "hub-load-without-weights-only": frozenset({"TD102"}),
    "map-location-rejects-device": frozenset(),  # no rule of this version targets these two
    "fused-optimizer-device": frozenset(),
    # Kinds of the twelfth corpus, added before the scan was run on it.
    "library-sparse-on-mps": frozenset({"TD602"}),
    "wrong-device-restore": frozenset(),  # no rule of this version targets it
    # Kinds of the thirteenth corpus, added before the scan was run on it.
    "weights-only-default-breaks-load": frozenset(),  # no rule of this version targets these
    "to-result-discarded": frozenset(),
    # Kinds of the fourteenth corpus, added before the scan was run on it.
    "host-tensor-from-device-scalars": frozenset({"TD402"}),
    # Kinds of the fifteenth and sixteenth corpora, added before the scan was run on them: no
    # rule of this version targets them (a TD002 on co3d's `torch.device('cuda') if … else
    # device('cpu')` would point at the CUDA half, not at the unbound `device`); half-on-cpu
    # is mapped above.
    "stale-device-attribute": frozenset(),
    # Since the seventeenth session TD006 (a CUDA pick by ComfyUI's cuda_malloc_supported(),
    # torch.has_cuda, an uncalled torch.cuda.is_available) reads some of these two kinds;
    # mapped before sets 141-147 were scored, and before their labels were read.
    "broken-cpu-fallback": frozenset({"TD006"}),
    # The second labeller's kinds of set 15 (scan_blind15/second), mapped before scoring: a
    # `.cuda()` on the inputs that ignores the script's own --use_cuda flag, and the first
    # labeller's stale-device-attribute under another name.
    "model-input-device-mismatch": frozenset({"TD001", "TD002"}),
    "device-frozen-at-init": frozenset(),
    # The nineteenth corpus's new kind, mapped after the one blind run stopped on it in the
    # per-rule table (the figures above it were printed, and no finding lies near its line):
    # no rule of this version targets DDP's device_ids on the CPU.
    "ddp-device-ids-on-cpu": frozenset(),
    # The twenty-fifth corpus's new kind, mapped before the scan was run on it: indexing a
    # CPU tensor with a device index (score_sde's sde_lib.py); no rule of this version.
    "index-device-mismatch": frozenset(),
    # The twenty-eighth corpus's new kind, mapped before the scan was run on it: a hand-written
    # pickle.Unpickler that resolves any global (lit-llama's lazy_load); no rule of this
    # version reads Unpickler subclasses (TD102 is about torch.load's own argument).
    "unrestricted-unpickler": frozenset(),
    # The twenty-ninth corpus's new kind, mapped before the scan was run on it: AdamW's
    # fused=True on CPU parameters (a lookalike there); no rule of this version reads it.
    "fused-optimizer-cpu": frozenset(),
    # The thirty-first corpus's new kind, mapped before the scan was run on it: a model left
    # unmoved on devices accelerate's dispatch does not list (NPU, MLU); no rule reads it.
    "device-move-skipped": frozenset(),
    # The thirty-seventh and fortieth corpora's new kinds, mapped before the scan was run on
    # them: a CPU random generator asked for MPS tensors (riffusion) and a never-called
    # `torch.cuda.is_available` test, which no rule reads; a CPU input given to a model placed
    # on the GPU (stanford_alpaca), what TD303 is about.
    "generator-device-mismatch": frozenset(),
    "cuda-guard-not-called": frozenset({"TD006"}),
    "mixed-device": frozenset({"TD303"}),
    # The forty-first to forty-eighth corpora's new kinds, mapped before the scan was run on
    # them: `.module` of a model DataParallel wraps only on CUDA (pytorch-deeplab-xception),
    # TD203 since the twelfth session; a device argument one half of a pipeline ignores
    # (knn-vc) and float16 autocast on MPS (nanoVLM), which no rule reads.
    "dataparallel-module-on-cpu": frozenset(["TD203"]),
    "device-override-mismatch": frozenset(),
    "autocast-mps": frozenset(),
    # The forty-ninth to fifty-sixth corpora's new kinds, mapped before the scan was run on
    # them; no rule of this version reads any: a CPU tensor given a device index
    # (transformer-xl), inputs moved to the model only on CUDA (donut),
    # `get_device_states` on MPS (sentence-transformers' cached losses) and `.cuda(async=True)`.
    "cpu-tensor-device-index": frozenset(),
    "cuda-only-input-move": frozenset(),
    "get-device-states-mps": frozenset(),
    "cuda-async-keyword": frozenset(),
    # The fifty-seventh to sixty-fourth corpora's new kinds, mapped before the scan was run on
    # them: a CPU tensor multiplied with one left on the GPU (open_flamingo's RICES), what
    # TD303 is about; bfloat16 on MPS before torch 2.3 (MiniCPM-V's demo) and a device API
    # that does not exist (`torch.xpu_empty_cache`, llama-recipes), which no rule reads.
    "device-mismatch": frozenset({"TD303"}),
    "bfloat16-on-mps": frozenset(),
    "nonexistent-device-api": frozenset(),
    # The sixty-fifth to seventy-second corpora's new kinds, mapped before the scan was run on
    # them: a GPU tensor handed to SciPy, which converts it to NumPy and raises as `.numpy()`
    # does (allennlp's fairness metrics), what TD403 is about; a `torch.backends.cuda` flag
    # context (OpenNMT-py), a lookalike of TD003's `torch.cuda` calls.
    "implicit-numpy-on-device-tensor": frozenset({"TD403"}),
    "torch-backends-cuda": frozenset({"TD003"}),
    # The eighty-first to eighty-seventh corpora's new kind, mapped before the scan was run on
    # them: numba's CUDA JIT called without a CPU path (mmdetection3d's rotated IoU), which no
    # rule reads (TD003 is about `torch.cuda`).
    "numba-cuda-unguarded": frozenset(),
    # The eighty-eighth to ninety-third corpora's new kinds, mapped before the scan was run on
    # them: a device option the loader itself rejects ("Invalid device: mps", the Gorilla
    # scripts vendored in LLaMA-Adapter), which no rule reads; an invalid `device='gpu'`
    # default (evodiff), a lookalike of TD005's "cuda" defaults.
    "device-option-rejected": frozenset(),
    "invalid-device-default": frozenset({"TD005"}),
    # The ninety-ninth to hundred-and-fifth corpora's new kinds, mapped when the first scan of
    # sets 104 and 105 stopped on them (before any of their figures was read): a device read
    # from a saved workspace that this machine lacks (DeepFaceLive), a `non_blocking` copy to
    # the host read before a sync (backgroundremover), a device set to a shape (pytorch-ood):
    # no rule reads any of them.
    "saved-device-not-available": frozenset(),
    "nonblocking-d2h-read": frozenset(),
    "broken-device-default": frozenset(),
    # The hundred-and-sixth to hundred-and-twelfth corpora's new kinds, mapped before the scan
    # was run on them: `torch.load` swapped for an unrestricted one process-wide (a dreambooth
    # extension's postinstall), TD102's territory; a UI option naming execution providers used
    # as a torch device (CPU/CUDA/ROCM/DirectML...), like device-option-rejected, no rule.
    "unsafe-load-patch": frozenset({"TD102"}),
    "invalid-device-option": frozenset(),
    # Set 106's (mapped before it was scored): `x.type(torch.BoolTensor)`, like
    # cuda-legacy-type; a hard-coded `.to("mps")`, like hardcoded-device.
    "legacy-type-cast": frozenset({"TD001", "TD002", "TD003", "TD304"}),
    "hardcoded-mps-device": frozenset({"TD001", "TD002", "TD003"}),
    # The hundred-and-thirteenth to hundred-and-nineteenth corpora's new kind, mapped before
    # the scan was run on them: a UI's device option ('auto') passed to `.to()`, which no
    # torch accepts; like invalid-device-option, no rule.
    "broken-device-option": frozenset(),
    # The hundred-and-twentieth to hundred-and-twenty-sixth corpora's new kinds, mapped before
    # the scan was run on them, none a rule reads: a non-CUDA branch that calls a helper
    # without its required argument; `pickle.load` of a whole model pickled on CUDA (not
    # `torch.load`); diffusers' `enable_model_cpu_offload()` on a host without an accelerator.
    "broken-non-cuda-path": frozenset(),
    "pickle-load-cuda-model": frozenset(),
    # Read by TD007 since the eighteenth session (before sets 153 on were scored).
    "cpu-offload-needs-accelerator": frozenset({"TD007"}),
    # The hundred-and-twenty-seventh to hundred-and-thirty-third corpora's new kinds, mapped
    # before the scan was run on them, none a rule reads: float8 on MPS (TD601 reads float64
    # only); a `.cpu().numpy()` copy whose result is never used (a sync, but not in a loop);
    # `i % torch.cuda.device_count()`, a division by zero without CUDA.
    "float8-on-mps": frozenset(),
    "discarded-device-copy": frozenset(),
    "gpu-count-zero-division": frozenset(),
    # sets 134-140: mixed_precision="fp16" given to accelerate without a GPU (no rule); an op
    # MPS lacks, the kind TD603 flags
    "accelerate-fp16-no-gpu": frozenset(),
    "mps-unsupported-op": frozenset({"TD603"}),
    # sets 141-147, mapped before their scoring: a GPU id in a YAML config, inputs of one dtype
    # given to a model cast to another, xformers attention without CUDA; no rule reads them
    "cuda-default-config": frozenset(),
    "dtype-mismatch": frozenset(),
    "xformers-needs-cuda": frozenset(),
    # sets 148-152, mapped before their scoring: an import of a module only another host
    # application has, on macOS (no rule reads it)
    "mac-only-import": frozenset(),
    # sets 153-160, mapped before their scoring: `torch.xpu.stream` behind `hasattr(torch,
    # "xpu")`, true on every recent torch, so the XPU calls run on a CUDA machine (no rule
    # read XPU calls then; TD008 does since the nineteenth session, mapped before sets 161-168)
    "xpu-stream-on-cuda": frozenset(["TD008"]),
    # sets 161-168, mapped before their scoring: a batch copied to the host by
    # `.type(torch.FloatTensor)` and uploaded again every step (no rule reads it)
    "device-roundtrip-cast": frozenset(),
    # sets 169-176, mapped before their scoring, none a rule reads: layers of an accelerate
    # device_map promoted to GPU 0 after the file built a CPU-only map (gguf-connector); a
    # device string with a space in it, `torch.device('cuda: 0')`, which torch refuses (CTGCN)
    "gpu-index-device-map": frozenset(),
    # TD009 reads it since sets 319-326 were labelled (not blind for the four earlier rows)
    "invalid-device-string": frozenset({"TD009"}),
    # sets 201-208, mapped before their scoring: a "cuda" device string given to onnxruntime's
    # io binding (what TD002 would point at); a model never moved to the device its inputs are
    # built on (a cross-device mix, as "device-mismatch"); a method of the wrapped model called
    # on its DataParallel wrapper (what TD203 reads on `.module`)
    "onnxruntime-cuda-device": frozenset({"TD002"}),
    "model-not-moved-to-device": frozenset({"TD303"}),
    "dataparallel-attribute": frozenset({"TD203"}),
    # sets 209-216, mapped before their scoring: a `torch.mps.*` call outside any test (the MPS
    # calls TD008 reads); a `.to(device)` copy handed to an optimizer, not a leaf on a GPU (no
    # rule reads it)
    "unguarded-mps-api": frozenset({"TD008"}),
    "to-device-non-leaf-param": frozenset(),
    # sets 217-224, mapped before their scoring: a saved CUDA RNG state that is None when the run
    # was saved without CUDA; autocast given MPS on a torch that lacks it; a TPU pick handed to a
    # string test: no rule reads any of them
    "cuda-rng-state-none": frozenset(),
    "autocast-unsupported-device": frozenset(),
    "broken-xla-pick": frozenset(),
    # set 225, mapped before its scoring: Lightning's `Fabric(accelerator="cuda")`, a "cuda"
    # string TD002 reads
    "hardcoded-cuda-accelerator": frozenset({"TD002"}),
    # sets 233-240, mapped before their scoring: a "--device auto" string handed on to
    # map_location; eager quantized modules moved to CUDA (no QuantizedCUDA kernel); a batch the
    # trainer never moves to the model's device: no rule reads any of them
    "unresolved-device-alias": frozenset(),
    "quantized-model-on-cuda": frozenset(),
    "batch-not-moved-to-device": frozenset(),
    # set 234, before its scoring: an MPS-or-CPU pick that passes CUDA by (a lookalike, perf)
    "mps-default-fallback": frozenset(),
    # set 246, before its scoring: `torch.cuda.amp.autocast()`, as `autocast-cuda` above
    "cuda-autocast": frozenset({"TD001", "TD002", "TD003"}),
    # sets 248-255, before their scoring, each as the kind it names again above:
    "hardcoded-gpu-index": frozenset({"TD001", "TD002", "TD003"}),  # int-device-index
    "gradscaler-cuda": frozenset({"TD001", "TD002", "TD003"}),  # grad-scaler-cuda
    "input-not-moved-to-device": frozenset(),  # batch-not-moved-to-device
    # TD009 came after their scoring (results-blind.md of 248-255 are as scored, with no rule)
    "autocast-without-device-type": frozenset({"TD009"}),  # autocast() with no device_type
    "wrong-mps-namespace": frozenset({"TD009"}),  # torch.backends.mps.empty_cache()
    # sets 256-263, before their scoring: inputs never moved, as batch-not-moved-to-device;
    # `t.get_device()` (-1 on the CPU) used as a device, and PYTORCH_ENABLE_MPS_FALLBACK set
    # after `import torch`: no rule points at either line
    "inputs-not-moved-to-device": frozenset(),
    "get-device-on-cpu": frozenset(),
    "mps-fallback-set-after-torch-import": frozenset(),
    # sets 266-273, before their scoring: a tensor's `.to(device)` whose result is discarded
    # (not in place, unlike a module's): no rule points at it
    "discarded-tensor-to": frozenset(),
    # sets 274-281, before their scoring, by name only: a CUDA default tensor type, as
    # cuda-legacy-type; CUDA device indices, as hardcoded-gpu-index
    "cuda-default-tensor-type": frozenset({"TD001", "TD002", "TD003", "TD304"}),
    "cuda-index-devices": frozenset({"TD001", "TD002", "TD003"}),
    # sets 290-297, before their scoring: a device read from a settings object whose default is
    # "cuda" (TD002 leaves config values alone, as cuda-default-config); inputs sent to "cpu"
    # while the model sits on the picked device (no rule points at a "cpu" string)
    "config-device-without-fallback": frozenset(),
    "hardcoded-cpu-device": frozenset(),
    # sets 306-313, before their scoring: a name bound only under a CUDA test and read outside
    # it (NameError without CUDA); a tensor moved to CUDA inside DataLoader workers (CUDA in a
    # forked worker): no rule points at either
    "gpu-only-name-unguarded": frozenset(),
    "cuda-in-dataloader-worker": frozenset(),
    # set 319, mapped before its scoring: `device=self.rank`, an integer device (int-device-index)
    "cuda-device-index": frozenset({"TD001", "TD002", "TD003"}),
    # set 327, before its scoring: `device_map={"": 0}` (as gpu-index-device-map, no rule);
    # CUDA_VISIBLE_DEVICES set after CUDA was initialised (no rule reads it)
    "device-map-gpu-index": frozenset(),
    "cuda-visible-devices-after-init": frozenset(),
    # sets 335-338, before their scoring: Lightning's `Trainer(accelerator="gpu")` (no rule
    # reads a Trainer's accelerator); a DirectML device chosen by a shipped config flag
    "hardcoded-gpu-accelerator": frozenset(),
    "directml-default-config": frozenset(),
    # set 345, before its scoring: `voicefixer.restore(cuda=True)`, a library's own flag that
    # no rule reads
    "hardcoded-cuda-flag": frozenset(),
    # sets 351-355, before their scoring: a batch size times torch.cuda.device_count() (0
    # without CUDA, as gpu-count-zero-division); a state dict saved from a DataParallel model
    # that is wrapped only on several GPUs (as dataparallel-attribute); a module handed to
    # torch.load as its map_location; a model never moved to the device its inputs go to (as
    # model-not-moved-to-device)
    "device-count-zero": frozenset(),
    "conditional-dataparallel-state-dict": frozenset({"TD203"}),
    "load-module-as-map-location": frozenset(),
    "model-not-on-device": frozenset({"TD303"}),
    # set 363, before its scoring: `.to(device)` on an audiocraft wrapper that is no nn.Module
    # (it has no `.to`): no rule reads it
    "to-on-non-module": frozenset(),
    # set 365, before its scoring: `.grad` of a tensor rebound to its device copy (a non-leaf),
    # as to-device-non-leaf-param: no rule reads it
    "grad-of-moved-leaf": frozenset(),
    # Kinds of sets 372-379, mapped before the scan was run on them. A model loaded onto the
    # CPU and never moved, given the inputs sent to `device`: no rule reads a loaded model.
    "cpu-load-not-moved": frozenset(),
    # `"cuda:1"` picked whenever CUDA is there: a hard-coded device string
    "hardcoded-cuda-index": frozenset({"TD002"}),
    # a schedule tensor kept on the CPU (no buffer) indexed with GPU timesteps
    "cpu-buffer-device-index": frozenset({"TD301", "TD303"}),
    # Kinds of sets 380-387, mapped before the scan was run on them. `x.to(device)` whose
    # result is dropped: no rule reads it.
    "discarded-to-result": frozenset(),
    # a tensor not moved to the model's device before the call: the nearest is TD303
    "input-not-on-model-device": frozenset({"TD303"}),
    # pack_padded_sequence given lengths on the GPU (they must be a CPU tensor): no rule
    "pack-lengths-on-device": frozenset(),
    # torch.load(…, map_location="cuda"): a hard-coded CUDA device for the load
    "map-location-cuda": frozenset({"TD002", "TD101"}),
    # a batch size divided by torch.cuda.device_count(): no rule
    "cuda-device-count-divisor": frozenset(),
    # Kinds of sets 388-395, mapped before the scan was run on them. `.to(t.get_device())`,
    # -1 for a CPU tensor: no rule reads get_device().
    "get-device-index": frozenset(),
    # Kinds of sets 396-403, mapped before the scan was run on them. A whole pickled module
    # loaded where weights_only=True is the default (torch >= 2.6 required): no rule reads it.
    "full-model-load-weights-only": frozenset(),
    # a `cuda=True` / `use_gpu=True` default parameter: TD005 reads device strings only
    "cuda-default-flag": frozenset(),
    # Kinds of sets 404-411, mapped before the scan was run on them. `eval()` of a field read
    # from a checkpoint: no rule reads eval.
    "unsafe-eval": frozenset(),
    # Kinds of sets 412-419, mapped before the scan was run on them. A device tensor copied to
    # the host every step and the copy dropped: a per-step sync, as TD402's `.item()`.
    "discarded-device-to-host-copy": frozenset({"TD402"}),
}
# Label rows the labeller gave one root cause (method.md): recall is also counted per root.
ONE_ROOT = {("lllyasviel/Fooocus", "ldm_patched/modules/model_management.py")}
RULE_ID = re.compile(r"TD\d{3}")


@dataclass(frozen=True)
class Label:
    repo: str
    file: str
    line: int
    kind: str
    severity: str
    must_flag: bool

    @property
    def base_kind(self) -> str:
        return self.kind.split(" (")[0]

    @property
    def rules(self) -> frozenset[str]:
        head = self.kind.split()[0]
        if RULE_ID.fullmatch(head):
            return frozenset({head})
        return KIND_RULES[self.base_kind]

    @property
    def root(self) -> tuple[str, ...]:
        if (self.repo, self.file) in ONE_ROOT:
            return (self.repo, self.file, self.base_kind)
        return (self.repo, self.file, str(self.line), self.kind)


@dataclass(frozen=True)
class Finding:
    repo: str
    file: str
    line: int
    rule: str
    confidence: str
    code: str = ""

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.file, self.line, self.rule)


def read_labels(path: Path) -> list[Label]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [
        Label(
            r["repo"],
            r["file"],
            int(r["line"]),
            r["kind"],
            r["severity"],
            {"yes": True, "no": False}[r["must_flag"]],
        )
        for r in rows
    ]


def read_judged(path: Path) -> dict[tuple[str, str, int, str], bool]:
    """Verdicts made after seeing the output: (repo, file, line, rule) -> true pitfall."""
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as fh:
        return {
            (r["repo"], r["file"], int(r["line"]), r["rule"]): r["verdict"] == "true"
            for r in csv.DictReader(fh)
        }


def labels_of(finding: Finding, labels: Iterable[Label], slack: int = SLACK) -> list[Label]:
    """The labels a finding points at: same file, a rule of the label's kind, near line."""
    return [
        lab
        for lab in labels
        if lab.repo == finding.repo
        and lab.file == finding.file
        and finding.rule in lab.rules
        and abs(lab.line - finding.line) <= slack
    ]


def verdict(finding: Finding, labels: Iterable[Label]) -> str:
    """tp (points at a real pitfall), fp (only at lookalikes) or unlabelled."""
    hit = labels_of(finding, labels)
    if any(lab.must_flag for lab in hit):
        return "tp"
    return "fp" if hit else "unlabelled"


def found(label: Label, findings: Iterable[Finding]) -> bool:
    return any(label in labels_of(f, [label]) for f in findings)


def recall(labels: Sequence[Label], findings: Sequence[Finding]) -> dict[str, tuple[int, int]]:
    """(found, total) of the must-flag labels per severity, 'crash+security', 'all' and
    'crash+security, per root' (rows of one root cause count once, found if any is)."""
    out: dict[str, tuple[int, int]] = {}
    wanted = [lab for lab in labels if lab.must_flag]
    groups = {**{s: (s,) for s in SEVERITIES}, "crash+security": ("crash", "security")}
    groups["all"] = SEVERITIES
    for name, sevs in groups.items():
        rows = [lab for lab in wanted if lab.severity in sevs]
        out[name] = (sum(found(lab, findings) for lab in rows), len(rows))
    roots: dict[tuple[str, ...], bool] = {}
    for lab in wanted:
        if lab.severity in ("crash", "security"):
            roots[lab.root] = roots.get(lab.root, False) or found(lab, findings)
    out["crash+security, per root"] = (sum(roots.values()), len(roots))
    return out


def flagged_lookalikes(labels: Sequence[Label], findings: Sequence[Finding]) -> tuple[int, int]:
    rows = [lab for lab in labels if not lab.must_flag]
    return sum(found(lab, findings) for lab in rows), len(rows)


def tally(
    findings: Sequence[Finding], labels: Sequence[Label], judged: dict[tuple, bool]
) -> Counter[str]:
    """Counts of one set of findings: tp/fp on labelled lines, and the unlabelled ones by
    the after-the-fact verdict (jtrue, jfalse, or unjudged)."""
    c: Counter[str] = Counter(findings=len(findings))
    for f in findings:
        v = verdict(f, labels)
        if v == "unlabelled" and f.key in judged:
            v = "jtrue" if judged[f.key] else "jfalse"
        elif v == "unlabelled":
            v = "unjudged"
        c[v] += 1
    return c


def pct(num: int, den: int) -> str:
    return f"{num / den:.0%} ({num}/{den})" if den else "– (0/0)"


def scan_repo(
    root: Path, repo: str, confidence: str | None, jobs: int, extra: Sequence[str] = ()
) -> list[Finding]:
    """Every finding of one whole tree, as `torchdoctor scan . --format json` reports it."""
    cmd = [sys.executable, "-m", "torchdoctor", "scan", ".", "--format", "json"]
    cmd += ["--no-cache", "--fail-on", "never", "--jobs", str(jobs), *extra]
    if confidence:
        cmd += ["--confidence", confidence]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode == 2 and proc.stderr.count("\n") == 1:
        # The scan refused the tree in one line (a pyproject.toml that is not valid TOML, as
        # set 179's contractive-diffusion-policy ships): what a user gets is no findings.
        print(f"refused ({confidence or 'default'}): {repo}: {proc.stderr.strip()}")
        return []
    if proc.returncode != 0:
        sys.exit(f"scan of {root} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    return [
        Finding(
            repo,
            Path(f["details"]["path"]).as_posix().removeprefix("./"),
            int(f["details"]["line"]),
            f["id"],
            f.get("confidence", ""),
            f["details"].get("code", "").strip(),
        )
        for f in doc["findings"]
    ]


def tree_of(root: Path, entry: dict, corpus: dict | None = None) -> Path:
    tree = root / Path(entry["local_path"]).name
    if not tree.is_dir():
        sys.exit(
            f"{tree} is missing. Fetch it at the recorded commit:\n"
            f"  git clone https://github.com/{entry['repo']} {tree} && "
            f"git -C {tree} checkout {entry['commit']}"
        )
    if corpus is not None:
        restore_missing(tree, missing_blobs(corpus, entry["repo"]))
    return tree


def missing_blobs(corpus: dict, repo: str) -> list[str]:
    """Files the repository commits whose content its export left out (too large for the
    snapshot, Git LFS), as corpus.json lists them: a list, or (as the labellers of 82 sets from
    318 on wrote it) a table whose `missing_from_snapshot` and `left_out_for_disk_space…` lists
    name them (submodules and symbolic links are no files to restore)."""
    listed = corpus.get("missing_blobs_left_out_of_export")
    paths = listed.get(repo) if isinstance(listed, dict) else None
    if isinstance(paths, dict):
        paths = [
            p
            for key, value in paths.items()
            if key == "missing_from_snapshot" or key.startswith("left_out_for_disk_space")
            if isinstance(value, list)
            for p in value
        ]
    return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []


def restore_missing(tree: Path, paths: Sequence[str]) -> None:
    """An empty file where a clone holds a committed one the export left out: the scan then
    sees the tree a user's clone has (a load of a committed file at a fixed path is judged by
    whether the file is there; its content stays unknown, as behind a Git LFS pointer). Sets
    scored before 2026-11-28 were scored without them (CheXNet_torch's model/model.pth, set 255)."""
    for rel in paths:
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            continue
        path = tree / rel
        if path.exists() or path.is_symlink():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        except OSError:  # a parent that is a file: the clone's layout differs, leave it
            continue


def scan_corpus(
    corpus: dict, root: Path, jobs: int, extra: Sequence[str] = ()
) -> dict[str, list[Finding]]:
    """Findings in the labelled files, per output level (default, low)."""
    out: dict[str, list[Finding]] = {level: [] for level in LEVELS}
    for entry in corpus["repos"]:
        tree = tree_of(root, entry, corpus)
        keep = set(entry["files_in_scope"])
        for level, confidence in LEVELS.items():
            found_ = scan_repo(tree, entry["repo"], confidence, jobs, extra)
            out[level] += [f for f in found_ if f.file in keep]
    return out


def overall_lines(level: str, findings: Sequence[Finding], labels, judged) -> list[str]:
    c = tally(findings, labels, judged)
    r = recall(labels, findings)
    shown = c["tp"] + c["fp"] + c["jtrue"] + c["jfalse"]
    return [
        f"### {level} output: {c['findings']} findings in the labelled files",
        "",
        f"- precision on labelled lines (blind): {pct(c['tp'], c['tp'] + c['fp'])}",
        f"- unlabelled lines: {c['jtrue'] + c['jfalse'] + c['unjudged']} findings, judged after "
        f"seeing them: {c['jtrue']} true, {c['jfalse']} false, {c['unjudged']} not judged",
        f"- precision with the judged ones (not blind): {pct(c['tp'] + c['jtrue'], shown)}",
        *(f"- recall, {name}: {pct(*r[name])}" for name in r),
        f"- lookalikes (must_flag=no) flagged: {pct(*flagged_lookalikes(labels, findings))}",
        "",
    ]


def rule_table(findings: Sequence[Finding], labels: Sequence[Label], judged) -> list[str]:
    out = [
        "| rule | findings | tp | fp | precision (blind) | unlabelled: true / false / "
        "unjudged | precision with judged | must-flag found |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rules = sorted({f.rule for f in findings} | {r for lab in labels for r in lab.rules})
    for rule in rules:
        mine = [f for f in findings if f.rule == rule]
        c = tally(mine, labels, judged)
        wanted = [lab for lab in labels if lab.must_flag and rule in lab.rules]
        hit = sum(found(lab, mine) for lab in wanted)
        shown = c["tp"] + c["fp"] + c["jtrue"] + c["jfalse"]
        out.append(
            f"| {rule} | {c['findings']} | {c['tp']} | {c['fp']} | "
            f"{pct(c['tp'], c['tp'] + c['fp'])} | {c['jtrue']} / {c['jfalse']} / "
            f"{c['unjudged']} | {pct(c['tp'] + c['jtrue'], shown)} | "
            f"{f'{hit}/{len(wanted)}' if wanted else '–'} |"
        )
    return out


def missed_lines(labels: Sequence[Label], findings: Sequence[Finding]) -> list[str]:
    return [
        f"- missed {lab.severity}: {lab.repo} {lab.file}:{lab.line} {lab.kind}"
        for lab in labels
        if lab.must_flag and not found(lab, findings)
    ]


def write_unlabelled(path: Path, by_level: dict[str, list[Finding]], labels, judged) -> None:
    """Findings at --confidence low on lines with no label; `default` says whether the
    default output shows them too."""
    default = {f.key for f in by_level["default"]}
    rows = sorted(
        {f for f in by_level["low"] if verdict(f, labels) == "unlabelled"}, key=lambda f: f.key
    )
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["repo", "file", "line", "rule", "confidence", "default", "judged", "code"])
        for f in rows:
            seen = judged.get(f.key)
            mark = "" if seen is None else ("true" if seen else "false")
            w.writerow([*f.key, f.confidence, "yes" if f.key in default else "no", mark, f.code])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=HERE, help="the labelled set's folder")
    ap.add_argument("--corpus-root", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-write", action="store_true", help="do not rewrite unlabelled.csv")
    ap.add_argument(
        "--portable", action="store_true", help="scan with --portable (device rules uncalibrated)"
    )
    ap.add_argument(
        "--false", action="store_true", help="also list the default output's false findings"
    )
    args = ap.parse_args()
    here = args.set
    corpus = json.loads((here / "corpus.json").read_text(encoding="utf-8"))
    labels = read_labels(here / "labels.csv")
    judged = read_judged(here / "judged.csv")
    root = args.corpus_root or Path(corpus["repos"][0]["local_path"]).parent
    by_level = scan_corpus(corpus, root, args.jobs, ["--portable"] if args.portable else [])
    if not args.no_write:
        write_unlabelled(here / "unlabelled.csv", by_level, labels, judged)
    if args.false:  # after a blind scoring only: the list shows what the labels said no to
        for f in by_level["default"]:
            if verdict(f, labels) == "fp":
                print(f"false: {f.repo} {f.file}:{f.line} {f.rule} {f.confidence} | {f.code[:80]}")
        print()
    for level, findings in by_level.items():
        print("\n".join(overall_lines(level, findings, labels, judged)))
        print("\n".join(rule_table(findings, labels, judged)))
        print()
        print("\n".join(missed_lines(labels, findings)))
        print()


if __name__ == "__main__":
    main()
