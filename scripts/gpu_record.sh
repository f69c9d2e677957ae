#!/usr/bin/env bash
# Record what torchdoctor sees on a real NVIDIA GPU machine, as fixtures for the tests that run
# without one. Run from the repository root on the GPU machine; everything lands in $OUT/gpu.tar.gz
# (plus $OUT/log). Every step has its own deadline and a failed step does not stop the others.
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
  tar -C "$D" -czf "$OUT/gpu.tar.gz" --exclude='*.pt' . # what is done so far comes back
}

step nvidia_smi 30 nvidia-smi
step nvidia_smi_q 30 nvidia-smi -q
step collect_env 120 "$PY" -m torch.utils.collect_env
step check_json 180 "$PY" -m torchdoctor check --json --expect cuda --smoke-size full \
  --timeout 120 --dump-facts "$D/facts.json"
step check_text 180 "$PY" -m torchdoctor check -v --timeout 120
step check_paste 60 "$PY" -m torchdoctor check --facts "$D/collect_env.out" --json
step gpu_tests 300 "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py
# the checkpoint the claims and inspect load: saved from real CUDA tensors
"$PY" -c "import torch,sys; torch.save({'w': torch.ones(2, device='cuda')}, sys.argv[1])" "$D/cuda_sd.pt"
step claims_gpu 120 "$PY" scripts/device_claims.py --mode cuda-gpu --cuda-ckpt "$D/cuda_sd.pt"
step claims_nogpu 120 env CUDA_VISIBLE_DEVICES= "$PY" scripts/device_claims.py \
  --mode cuda-build-no-gpu --cuda-ckpt "$D/cuda_sd.pt"
step check_nogpu 180 env CUDA_VISIBLE_DEVICES= "$PY" -m torchdoctor check --json --timeout 120 \
  --dump-facts "$D/facts_nogpu.json"
step inspect_cuda 120 "$PY" -m torchdoctor inspect --json "$D/cuda_sd.pt"
step inspect_cuda_nogpu 120 env CUDA_VISIBLE_DEVICES= "$PY" -m torchdoctor inspect --json "$D/cuda_sd.pt"
cat >"$D/models.py" <<'EOF'
import torch


class HardCoded(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(x.shape[-1], device="cuda")  # exports on the GPU, fails on the CPU


def hard_coded():
    return HardCoded().cuda()


def healthy():
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).cuda()
EOF
step audit_bad_cpu 240 "$PY" -m torchdoctor audit --json "$D/models.py:hard_coded" --input-shape 2,8 --target cpu
step audit_ok_cpu 240 "$PY" -m torchdoctor audit --json "$D/models.py:healthy" --input-shape 2,8 --target cpu
step dist_nccl1 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node=1 -m torchdoctor dist --json \
  --timeout 120 -o "$D/fleet_nccl1.json"
# two ranks on one GPU: NCCL refuses a communicator whose ranks share a device
step dist_nccl2_one_gpu 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node=2 -m torchdoctor dist --json \
  --backend nccl --no-checks --collective-timeout 30 -o "$D/fleet_nccl2.json"
step bench 420 "$PY" benchmarks/bench_check.py --rounds 4 --warmup 1
