#!/usr/bin/env bash
# Record what torchdoctor sees on a real NVIDIA GPU machine, as fixtures for the tests that run
# without one. Run from the repository root on the GPU machine; everything lands in $OUT/gpu.tar.gz
# (plus $OUT/log); QUICK=1 re-checks a change in a few minutes (BENCH= skips its timings),
# ALL_TESTS=1 also runs the whole test suite. Every step has its own deadline
# and a failed step does not stop the others.
#   OUT=/tmp/out bash scripts/gpu_record.sh
set -u
export PYTHONUNBUFFERED=1
D=$(mktemp -d)
PY=${PY:-python3}
step() { # step NAME SECONDS CMD... : run with a deadline, keep stdout+stderr and the exit code
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout -k 5 "$secs" "$@" >"$D/$name.out" 2>"$D/$name.err"
  echo "$name rc=$? $((SECONDS - t0))s" | tee -a "$D/steps.txt"
  tar -C "$D" -czf "$OUT/gpu.tar.gz" . # what is done so far comes back (the .pt files are small)
}

step nvidia_smi 30 nvidia-smi
if [ -n "${QUICK:-}" ]; then # a re-check of a change: the report, the dist runs, the timings
  step check_json 180 "$PY" -m torchdoctor check --json --expect cuda --timeout 120
  step check_text 180 "$PY" -m torchdoctor check --timeout 120
  step dist_nccl2_one_gpu 120 "$PY" -m torch.distributed.run --standalone --nproc-per-node=2 \
    -m torchdoctor dist --backend nccl --no-checks --collective-timeout 30
  [ -n "${BENCH-1}" ] && step bench 300 "$PY" benchmarks/bench_check.py --rounds 3 --warmup 1
  ROUNDS="1 2 3"
else
step collect_env 120 "$PY" -m torch.utils.collect_env
step check_json 180 "$PY" -m torchdoctor check --json --expect cuda --smoke-size full \
  --timeout 120 --dump-facts "$D/facts.json"
step check_text 180 "$PY" -m torchdoctor check --timeout 120
step check_paste 60 "$PY" -m torchdoctor check --facts "$D/collect_env.out" --json
step gpu_tests 300 "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py
# each companion's import after torch's, alone in a fresh process (what the probe pays)
for m in torchvision torchaudio triton; do
  step "import_$m" 60 "$PY" -c "import time, torch; t = time.perf_counter(); import $m
print('$m', round(time.perf_counter() - t, 3))"
done
step importtime_torchvision 60 "$PY" -X importtime -c "import torch; import torchvision"
# the checkpoint the claims and inspect load: saved from real CUDA tensors
"$PY" -c "import torch,sys; torch.save({'w': torch.ones(2, device='cuda')}, sys.argv[1])" "$D/cuda_sd.pt"
step claims_gpu 120 "$PY" scripts/device_claims.py --mode cuda-gpu --cuda-ckpt "$D/cuda_sd.pt"
step claims_nogpu 120 env CUDA_VISIBLE_DEVICES= "$PY" scripts/device_claims.py \
  --mode cuda-build-no-gpu --cuda-ckpt "$D/cuda_sd.pt"
step check_nogpu 180 env CUDA_VISIBLE_DEVICES= "$PY" -m torchdoctor check --json --timeout 120 \
  --dump-facts "$D/facts_nogpu.json"
step dist_nccl1 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node=1 \
  -m torchdoctor dist --json --timeout 120 -o "$D/fleet_nccl1.json"
# two ranks on one GPU: NCCL refuses a communicator whose ranks share a device
step dist_nccl2_one_gpu 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node=2 \
  -m torchdoctor dist --backend nccl --no-checks --collective-timeout 30 -o "$D/fleet_nccl2.json"
step dist_auto2_one_gpu 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node=2 \
  -m torchdoctor dist --no-checks --collective-timeout 30 -o "$D/fleet_auto2.json"
step bench 420 "$PY" benchmarks/bench_check.py --rounds 4 --warmup 1
fi
# checkpoints saved from real CUDA tensors: inspect reads each; the scan reads one committed
# beside a script that falls back to the CPU (torchdoctor/scan/committed.py)
step cuda_ckpts 60 "$PY" scripts/cuda_checkpoints.py "$D/ckpt"
for f in "$D"/ckpt/*.pt; do
  step "inspect_$(basename "$f" .pt)" 60 "$PY" -m torchdoctor inspect --json "$f"
done
mkdir -p "$D/project" && cp "$D/ckpt/state_dict_cuda.pt" "$D/project/expert-data.pt"
printf '%s\n' 'import os' 'import torch' 'DIR = os.path.dirname(os.path.abspath(__file__))' \
  'device = "cuda" if torch.cuda.is_available() else "cpu"' \
  'data = torch.load(os.path.join(DIR, "expert-data.pt"), weights_only=True)' >"$D/project/train.py"
step scan_committed 60 "$PY" -m torchdoctor scan --json --no-cache --confidence low "$D/project"
step fix_dry_run 120 "$PY" -m torchdoctor fix --dry-run --expect cuda --json
# a model built on the GPU with a device baked into forward, audited for the CPU, and ResNet-18
# audited for the GPU
printf '%s\n' 'import torch' 'class Baked(torch.nn.Module):' \
  '    def forward(self, x):' '        return x + torch.ones(3, device="cuda")' \
  'def make():' '    return Baked().cuda()' >"$D/baked.py"
step audit_baked_target_cpu 240 "$PY" -m torchdoctor audit "$D/baked.py:make" --input-shape 2,3 \
  --target cpu --json
step audit_resnet_target_cuda 240 "$PY" -m torchdoctor audit \
  benchmarks/bench_export_audit.py:resnet18 --input-shape 1,3,224,224 --target cuda --json
# the whole suite where a GPU is present: tests that assume there is none show up here
[ -n "${ALL_TESTS:-}" ] && step pytest_all 300 "$PY" -m pytest -v -rfs --timeout 120 -n 16 -p no:cacheprovider tests
# A/B against an older torchdoctor in BASELINE (a folder holding its torchdoctor/ package):
# alternating runs, each from a folder holding only its own package, same machine, same run
if [ -n "${BASELINE:-}" ]; then
  CAND=$(mktemp -d) && cp -r torchdoctor "$CAND/"
  for i in ${ROUNDS:-1 2 3 4 5}; do
    for who in baseline candidate; do
      dir=$BASELINE; [ $who = candidate ] && dir=$CAND
      t0=$EPOCHREALTIME
      (cd "$dir" && timeout 120 "$PY" -m torchdoctor check --json >/dev/null 2>&1)
      echo "$who $i $t0 $EPOCHREALTIME" >>"$D/ab.txt" # start and end, seconds
    done
  done
  step ab_done 5 cat "$D/ab.txt"
fi
