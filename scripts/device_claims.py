"""Run the snippets whose outcome the scan rules rely on, and record what torch really does.

Each snippet runs in a forked child (torch imported once in the parent, CUDA never initialised
there), so one snippet's failed CUDA initialisation cannot change the next one's outcome. Run it
three ways to record the evidence in torchdoctor/data/device_claims.json:

    python scripts/device_claims.py --mode cpu-build           # a CPU-only wheel
    CUDA_VISIBLE_DEVICES= python scripts/device_claims.py --mode cuda-build-no-gpu
    python scripts/device_claims.py --mode cuda-gpu            # a CUDA wheel on a real GPU
    python scripts/device_claims.py --mode cuda-gpu-mixes --mixes  # TD303's atlas, on the GPU

It prints one JSON object: the torch version, the mode and, per snippet, whether it raised and the
error's type and first line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date

# torch.cuda calls as people write them; the scan rule TD003 must agree with what raises here.
CUDA_API = {
    "synchronize": "torch.cuda.synchronize()",
    "set_device": "torch.cuda.set_device(0)",
    "current_device": "torch.cuda.current_device()",
    "get_device_name": "torch.cuda.get_device_name()",
    "get_device_properties": "torch.cuda.get_device_properties(0)",
    "get_device_capability": "torch.cuda.get_device_capability()",
    "mem_get_info": "torch.cuda.mem_get_info()",
    "Stream": "torch.cuda.Stream()",
    "current_stream": "torch.cuda.current_stream()",
    "default_stream": "torch.cuda.default_stream()",
    "set_stream": "torch.cuda.set_stream(torch.cuda.default_stream())",
    "ipc_collect": "torch.cuda.ipc_collect()",
    "init": "torch.cuda.init()",
    "reset_peak_memory_stats": "torch.cuda.reset_peak_memory_stats()",
    "is_available": "torch.cuda.is_available()",
    "device_count": "torch.cuda.device_count()",
    "manual_seed": "torch.cuda.manual_seed(0)",
    "manual_seed_all": "torch.cuda.manual_seed_all(0)",
    "empty_cache": "torch.cuda.empty_cache()",
    "memory_allocated": "torch.cuda.memory_allocated()",
    "max_memory_allocated": "torch.cuda.max_memory_allocated()",
    "memory_reserved": "torch.cuda.memory_reserved()",
    "max_memory_reserved": "torch.cuda.max_memory_reserved()",
    "memory_stats": "torch.cuda.memory_stats()",
    "memory_summary": "torch.cuda.memory_summary()",
    "get_rng_state": "torch.cuda.get_rng_state()",
    "get_rng_state_all": "torch.cuda.get_rng_state_all()",
    "set_rng_state": "torch.cuda.set_rng_state(torch.ByteTensor(16))",
    "is_bf16_supported": "torch.cuda.is_bf16_supported()",
    "get_arch_list": "torch.cuda.get_arch_list()",
    "is_initialized": "torch.cuda.is_initialized()",
    "Event": "torch.cuda.Event(enable_timing=True)",
    "Event.record": "torch.cuda.Event(enable_timing=True).record()",
    "set_per_process_memory_fraction": "torch.cuda.set_per_process_memory_fraction(0.5)",
    "amp.autocast": "torch.autocast('cuda').__enter__()",
    "nvtx.range_push": "torch.cuda.nvtx.range_push('x')",
    "nvtx.range_pop": "torch.cuda.nvtx.range_pop()",
    "nvtx.mark": "torch.cuda.nvtx.mark('x')",
    "nvtx.range": "torch.cuda.nvtx.range('x').__enter__()",
    "graph": "torch.cuda.graph(torch.cuda.CUDAGraph()).__enter__()",
    "utilization": "torch.cuda.utilization()",
    "is_current_stream_capturing": "torch.cuda.is_current_stream_capturing()",
    "amp.GradScaler": "torch.cuda.amp.GradScaler()",
    "stream": "torch.cuda.stream(None).__enter__()",
    "CUDAGraph": "torch.cuda.CUDAGraph()",
}

# Cross-device and device-specific claims (TD101, TD303, TD304, TD403, TD502).
OTHER = {
    "td303.cpu_1d_plus_cuda": "torch.ones(3) + torch.ones(3, device='cuda')",
    "td303.cpu_0dim_plus_cuda": "torch.tensor(2.0) + torch.ones(3, device='cuda')",
    "td303.python_float_times_cuda": "2.0 * torch.ones(3, device='cuda')",
    "td303.cuda_indexed_by_cpu_long": "torch.ones(3, device='cuda')[torch.tensor([0, 2])]",
    "td303.cpu_indexed_by_cuda_long": "torch.ones(3)[torch.tensor([0, 2], device='cuda')]",
    "td303.cat_cpu_cuda": "torch.cat([torch.ones(3), torch.ones(3, device='cuda')])",
    "td303.matmul_cpu_cuda": "torch.ones(2, 2) @ torch.ones(2, 2, device='cuda')",
    "td303.where_cpu_0dim": "torch.where(torch.ones(3, device='cuda') > 0, "
    "torch.ones(3, device='cuda'), torch.tensor(0.0))",
    "td403.numpy_of_cuda": "torch.ones(3, device='cuda').numpy()",
    "td403.cpu_numpy_of_cuda": "torch.ones(3, device='cuda').cpu().numpy()",
    "td304.legacy_floattensor_cuda": "torch.FloatTensor([1.0], device='cuda')",
    "td304.legacy_floattensor_cpu": "torch.FloatTensor([1.0], device='cpu')",
    "td304.legacy_cuda_floattensor": "torch.cuda.FloatTensor([1.0])",
    "td502.empty_pinned": "torch.empty(4, pin_memory=True)",
    "td502.pin_memory_method": "torch.ones(4).pin_memory()",
    "td502.dataloader_pinned": "list(torch.utils.data.DataLoader("
    "torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2, pin_memory=True))",
    "td101.load_cuda_saved": "torch.load(CUDA_CKPT)",
    "td101.load_cuda_saved_map_cpu": "torch.load(CUDA_CKPT, map_location='cpu')",
    "td202.dataparallel_no_cuda_call": "torch.nn.DataParallel(torch.nn.Linear(2, 2))(torch.ones(1, 2))",
    "td601.double_on_cuda": "torch.ones(3, device='cuda').double().cpu()",
    # TD008: what the torch.xpu / torch.mps branch of a `hasattr` test does without the backend
    "td008.xpu_stream": "torch.xpu.stream(object()).__enter__()",
    "td008.xpu_stream_none": "torch.xpu.stream(None).__enter__()",
    "td008.xpu_synchronize": "torch.xpu.synchronize()",
    "td008.xpu_empty_cache": "torch.xpu.empty_cache()",
    "td008.mps_empty_cache": "torch.mps.empty_cache()",
}


# TD303's cross-device atlas: `x` is a float tensor of shape (3,) on the GPU, and `c` a tensor a
# factory made without `device=`, so on the CPU. Each body runs on the GPU after
# `x = torch.ones(3, device="cuda")`, and tests/test_device_claims.py scans the same text as a
# function that moved `x` to the GPU: TD303 must flag exactly the bodies that raised.
MIXES = {
    "add_1d": "c = torch.ones(3)\ny = x + c",
    "add_zeros_of_shape": "c = torch.zeros(x.shape)\ny = x + c",
    "add_1elem": "c = torch.rand(1)\ny = x + c",
    "add_1elem_list": "c = torch.tensor([2.0])\ny = x * c",
    "add_list": "c = torch.tensor([1.0, 2.0, 3.0])\ny = x * c",
    "add_0dim": "c = torch.tensor(2.0)\ny = x + c",
    "mul_0dim_rand": "c = torch.rand(())\ny = x * c",
    "mul_0dim_full": "c = torch.full((), 2.0)\ny = x * c",
    "mul_scalar_tensor": "c = torch.scalar_tensor(2.0)\ny = x * c",
    "cuda_0dim_plus_cpu_1d": "c = torch.ones(3)\ny = x.sum() + c",
    "cuda_0dim_times_cpu_1elem": "c = torch.rand(1)\ny = x.sum() * c",
    "iadd_1d": "c = torch.ones(3)\nx += c",
    "imul_0dim": "c = torch.tensor(0.5)\nx *= c",
    "pow_0dim": "c = torch.tensor(2.0)\ny = x**c",
    "mod_long": "c = torch.arange(1, 4)\ny = x.long() % c",
    "compare_1d": "c = torch.rand(3)\ny = x < c",
    "compare_1elem": "c = torch.rand(1)\ny = x < c",
    "eq_long": "c = torch.arange(3)\ny = x.long() == c",
    "length_mask": "c = torch.arange(4)\ny = c[None, :] < x.long()[:, None]",
    "rand_compared_with_float": "if torch.rand(1) < 0.5:\n    x = x * 2",
    "rand_item_compared": "c = torch.rand(1)\nif c.item() < 0.5:\n    x = x * 2",
    "index_by_cpu_long": "c = torch.arange(2)\ny = x[c]",
    "index_by_cpu_0dim": "c = torch.tensor(1)\ny = x[c]",
    "index_by_cpu_bool": "c = torch.ones(3, dtype=torch.bool)\ny = x[c]",
    "cpu_indexed_by_cuda_mask": "c = torch.zeros(3)\ny = c[x > 0]",
    "setitem_cpu_index": "c = torch.arange(2)\nx[c] = 0.0",
    "setitem_cpu_values_at_cpu_index": "c = torch.zeros(2)\nx[torch.arange(2)] = c",
    "setitem_cpu_values_at_slice": "c = torch.zeros(2)\nx[0:2] = c",
    "copy_from_cpu": "c = torch.zeros(3)\nx.copy_(c)",
    "index_select_cpu_index": "c = torch.arange(2)\ny = x.index_select(0, c)",
    "gather_cpu_index": "c = torch.arange(2)\ny = torch.gather(x, 0, c)",
    "scatter_cpu_index": "c = torch.arange(2)\ny = x.scatter(0, c, x[:2])",
    "index_add_cpu_index": "c = torch.arange(2)\ny = x.index_add(0, c, x[:2])",
    "masked_fill_cpu_mask": "c = torch.ones(3, dtype=torch.bool)\ny = x.masked_fill(c, 0.0)",
    "masked_fill_cpu_0dim_value": "c = torch.tensor(0.0)\ny = x.masked_fill(x > 0, c)",
    "where_cpu_1d": "c = torch.zeros(3)\ny = torch.where(x > 0, x, c)",
    "where_cpu_condition": "c = torch.ones(3, dtype=torch.bool)\ny = torch.where(c, x, x)",
    "cat": "c = torch.zeros(3)\ny = torch.cat([x, c])",
    "stack": "c = torch.zeros(3)\ny = torch.stack([x, c])",
    "torch_add": "c = torch.ones(3)\ny = torch.add(x, c)",
    "method_add": "c = torch.ones(3)\ny = x.add(c)",
    "method_mul": "c = torch.ones(3)\ny = x.mul(c)",
    "maximum": "c = torch.zeros(3)\ny = torch.maximum(x, c)",
    "clamp_min_1d": "c = torch.zeros(3)\ny = torch.clamp(x, min=c)",
    "clamp_min_0dim": "c = torch.tensor(0.0)\ny = torch.clamp(x, min=c)",
    "addcmul": "c = torch.ones(3)\ny = torch.addcmul(x, x, c)",
    "lerp": "c = torch.zeros(3)\ny = torch.lerp(x, c, 0.5)",
    "dot": "c = torch.ones(3)\ny = torch.dot(x, c)",
    "einsum": "c = torch.ones(3)\ny = torch.einsum('i,i->', x, c)",
    "matmul": "c = torch.ones(3, 3)\ny = x @ c",
    "cdist": "c = torch.zeros(2, 3)\ny = torch.cdist(x[None], c)",
    "linear_cpu_input": "c = torch.ones(1, 3)\ny = torch.nn.functional.linear(c, x[None])",
    "embedding_cpu_index": "c = torch.tensor([0, 1])\ny = torch.nn.functional.embedding(c, x[:, None])",
    "cross_entropy_cpu_target": "c = torch.tensor([0, 1])\n"
    "y = torch.nn.functional.cross_entropy(x[None].expand(2, 3), c)",
    "mse_cpu_target": "c = torch.zeros(3)\ny = torch.nn.functional.mse_loss(x, c)",
    "searchsorted_cpu_boundaries": "c = torch.tensor([0.0, 2.0])\ny = torch.searchsorted(c, x)",
    "bucketize_cpu_boundaries": "c = torch.tensor([0.0, 2.0])\ny = torch.bucketize(x, c)",
    "normal_cpu_std": "c = torch.ones(3)\ny = torch.normal(x, c)",
    "cpu_iadd_cuda": "c = torch.zeros(3)\nc += x",
    "cpu_method_add_cuda": "c = torch.zeros(3)\ny = c.add(x)",
    "setitem_cpu_values_at_cuda_mask": "c = torch.zeros(3)\nx[x > 0] = c",
    "masked_fill_inplace_cpu_mask": "c = torch.ones(3, dtype=torch.bool)\nx.masked_fill_(c, 0.0)",
    "masked_select_cpu_mask": "c = torch.ones(3, dtype=torch.bool)\ny = x.masked_select(c)",
    "where_cpu_value_first": "c = torch.zeros(3)\ny = torch.where(x > 0, c, x)",
    "clamp_inplace_cpu_max": "c = torch.ones(3)\nx.clamp_(max=c)",
    "isclose": "c = torch.ones(3)\ny = torch.isclose(x, c)",
    "allclose": "c = torch.ones(3)\ny = torch.allclose(x, c)",
    "equal": "c = torch.ones(3)\ny = torch.equal(x, c)",
    "broadcast_tensors": "c = torch.ones(3)\ny = torch.broadcast_tensors(x, c)",
    "outer": "c = torch.ones(3)\ny = torch.outer(x, c)",
    "bmm": "c = torch.ones(1, 3, 3)\ny = torch.bmm(x[None, None], c)",
    "index_fill_cpu_index": "c = torch.arange(2)\ny = x.index_fill(0, c, 0.0)",
    "index_copy_cpu_index": "c = torch.arange(2)\ny = x.index_copy(0, c, x[:2])",
    "take_along_dim_cpu_index": "c = torch.arange(2)\ny = torch.take_along_dim(x, c)",
    "cosine_similarity": "c = torch.ones(3)\ny = torch.nn.functional.cosine_similarity(x, c, dim=0)",
    "bce_with_logits_cpu_target": "c = torch.ones(3)\n"
    "y = torch.nn.functional.binary_cross_entropy_with_logits(x, c)",
    "nll_loss_cpu_target": "c = torch.tensor([0, 1])\n"
    "y = torch.nn.functional.nll_loss(x[None].expand(2, 3), c)",
    "module_on_gpu_cpu_input": "m = torch.nn.Linear(3, 2).to(x.device)\nc = torch.ones(1, 3)\ny = m(c)",
    "remainder_cpu_0dim": "c = torch.tensor(2.0)\ny = x % c",
    "div_cpu_0dim_long": "c = torch.tensor(2)\ny = x / c",
    "tensor_of_the_device_tensor": "c = torch.tensor(x)\ny = x + c",
    "moved_in_the_assignment": "c = torch.ones(3).to(x.device)\ny = x + c",
    "moved_a_line_later": "c = torch.ones(3)\nc = c.to(x.device)\ny = x + c",
    "moved_where_it_meets": "c = torch.ones(3)\ny = x + c.to(x)",
    "like_factory": "c = torch.randn_like(x)\ny = x + c",
}


def run_one(code: str, env: dict) -> dict:
    """Fork, run `code`, report {'ok': bool, 'error': 'Type: first line'} through a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            import warnings

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(code, dict(env))  # our own snippets, never user input
            out = {"ok": True}
            if caught:
                out["warning"] = str(caught[0].message).splitlines()[0][:200]
        except BaseException as e:  # noqa: BLE001 — recording what torch raises is the point
            first = (str(e).strip().splitlines() or [""])[0][:200]
            out = {"ok": False, "error": f"{type(e).__name__}: {first}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data or b'{"ok": false, "error": "child died"}')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--cuda-ckpt", help="a state dict saved from CUDA tensors (td101 claims)")
    ap.add_argument("--mixes", action="store_true", help="record TD303's MIXES alone")
    ap.add_argument("--device", default="cuda", help="where `x` of MIXES lives (cpu: a dry run)")
    args = ap.parse_args()
    import torch

    env = {"torch": torch, "CUDA_CKPT": args.cuda_ckpt}
    if args.mixes:
        prelude = f"x = torch.ones(3, device={args.device!r})\n"
        snippets = {name: prelude + body for name, body in MIXES.items()}
    else:
        snippets = dict(CUDA_API)
        snippets.update(
            OTHER if args.cuda_ckpt else {k: v for k, v in OTHER.items() if "td101" not in k}
        )
    doc = {
        "mode": args.mode,
        "recorded": date.today().isoformat(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "python": sys.version.split()[0],
        "claims": {name: {"code": code, **run_one(code, env)} for name, code in snippets.items()},
    }
    print(json.dumps(doc, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
