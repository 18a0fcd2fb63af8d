# Settles (not run yet: written 2026-12-06; no AMD part is lent here; docs/known-gaps.md 207 (a), (b), (d) (a)): the
# host time the legacy grouped GEMM spends a local expert on a CDNA 4 part, the lead for the Primus rows' micro-batch
# floor (known-gaps 73: 240 us a gmm GEMM). On gfx950 rocBLAS >= 5.0 runs a 16-bit gemm_ex through hipBLASLt and asks
# its heuristic on every call; ROCm 7.1.0's rocBLAS 5.1.0 also takes the GEMM's workspace with hipMallocAsync /
# hipFreeAsync on every call (ROCm 7.1.1 reverted it). Run it on one MI355X under ROCm 7.1.0 and under 7.1.1 or later,
# and on one MI300X (rocBLAS keeps its Tensile kernels on gfx942) as the control; the host us a GEMM of the
# grouped_gemm package's gmm at Lite's micro-batch-1 shapes is the term's figure.
# 2026-12-07 (docs/known-gaps.md 274 (b), (c)): the GPU time a GEMM is now taken with device events (the docstring
# promised it; the synced wall stood in for it), so each path also prints the time a layer's device synchronize exposes
# over the GPU's (HIP's default memory pool returns freed blocks at a synchronization: under ROCm 7.1.0's stream-ordered
# rocBLAS workspace the next layer's first GEMM on each handle allocates again); and one more line times the unfused
# sort_chunks_by_idxs host work a MoE layer (3 splits into EP x local-expert chunks and their cats, forward and backward).
# Run: python benchmarks/device/rocm_gmm_host.py (--tiny on a CPU as a smoke test)
"""The routed experts' GEMMs of one DeepSeek-V2-Lite MoE layer on one EP-8 rank at micro-batch 1 (8 local experts x
3,072 rows: fc1 2,048 -> 2 x 1,408, fc2 1,408 -> 2,048, bf16), forward and backward, issued as Megatron-Core's legacy
GroupedMLP issues them: one BLAS call per expert. Paths: the grouped_gemm package's gmm where it imports (its own
hipBLAS handles, rocBLAS-managed workspace: the rows' path), and a per-expert torch.mm loop under PyTorch's rocBLAS
('cublas') and hipBLASLt ('cublaslt') preferences (PyTorch's handles carry a caching-allocator workspace: no
stream-ordered workspace, the heuristic as each library runs it). Per path one JSON line: host us a GEMM (the issue loop
timed on the CPU with the queue kept full, so the host's own time shows), GPU us a GEMM (events around a synced run),
the environment's ROCm / rocBLAS switches."""

import json
import os
import statistics
import sys
import time

import torch

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
EXPERTS, ROWS, HIDDEN, FFN = (2, 16, 32, 24) if TINY else (8, 3072, 2048, 1408)
WARM, N = (1, 3) if TINY else (5, 30)
# Megatron-Core's unfused sort_chunks_by_idxs at EP 8 (moe_utils.py at 847781764f): the received tokens split into
# EP x local-expert chunks, tokens and probs at dispatch, tokens at combine
EP = 2 if TINY else 8
ENV = ("ROCBLAS_USE_HIPBLASLT", "ROCBLAS_STREAM_ORDER_ALLOC", "HIPBLASLT_LOG_LEVEL", "GPU_MAX_HW_QUEUES",
       "HSA_KERNARG_POOL_SIZE")


def synchronize() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def expert_tensors() -> dict[str, torch.Tensor]:
    """Per-expert inputs and weights of one layer: fc1 (gate + up fused) and fc2, bf16 on the device."""
    def t(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    return {"x": t(EXPERTS * ROWS, HIDDEN), "w1": t(EXPERTS, HIDDEN, 2 * FFN), "w2": t(EXPERTS, FFN, HIDDEN)}


def loop_layer(p: dict[str, torch.Tensor]) -> int:
    """fc1, activation, fc2 forward and the backward, one torch.mm per expert as GroupedMLP's gmm issues them; returns
    the GEMM count (6 an expert: 2 forward, 4 backward)."""
    outs = []
    for e, x in enumerate(p["x"].split(ROWS)):
        h = x @ p["w1"][e]
        a = torch.nn.functional.silu(h[:, :FFN]) * h[:, FFN:]
        outs.append(a @ p["w2"][e])
    torch.cat(outs).sum().backward()
    return 6 * EXPERTS


def gmm_layer(p: dict[str, torch.Tensor]) -> int:
    """The same layer through the grouped_gemm package (gg.ops.gmm with host batch sizes, Megatron's GroupedMLP)."""
    import grouped_gemm as gg  # noqa: PLC0415 (optional: the rows' package, absent on most hosts)

    sizes = torch.full((EXPERTS,), ROWS, dtype=torch.int64)
    h = gg.ops.gmm(p["x"], p["w1"], sizes, trans_b=False)
    a = torch.nn.functional.silu(h[:, :FFN]) * h[:, FFN:]
    gg.ops.gmm(a, p["w2"], sizes, trans_b=False).sum().backward()
    return 6 * EXPERTS


def time_path(layer) -> dict[str, float]:
    """Host and GPU microseconds a GEMM: the host's issue loop over N layers with no sync in it (the host's own time,
    the queue never drained), and the synced wall time a layer over the GEMM count."""
    p = expert_tensors()
    for _ in range(WARM):
        gemms = layer(p)
    synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        layer(p)
    host = (time.perf_counter() - t0) / N
    synchronize()
    walls, gpus = [], []
    for _ in range(N):
        t = time.perf_counter()
        gpu = timed_on_device(lambda: layer(p))
        walls.append(time.perf_counter() - t)
        gpus.append(gpu)
    wall, gpu = statistics.median(walls), statistics.median(gpus)
    return {"gemms_per_layer": gemms, "host_us_per_gemm": round(host / gemms * 1e6, 2),
            "synced_wall_us_per_gemm": round(wall / gemms * 1e6, 2),
            "gpu_us_per_gemm": round(gpu / gemms * 1e6, 2),
            "sync_exposed_us_per_gemm": round(max(wall - gpu, 0.0) / gemms * 1e6, 2)}


def timed_on_device(work) -> float:
    """Seconds `work` takes on the device between two events, the queue drained after it (a synced run); on a CPU the
    wall time of the call (no device: all of it is host time)."""
    if DEV != "cuda":
        t = time.perf_counter()
        work()
        return time.perf_counter() - t
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def sort_chunks_host() -> dict[str, float]:
    """Host microseconds a MoE layer of Megatron-Core's unfused sort_chunks_by_idxs (moe_utils.py at 847781764f:
    torch.split by the host sizes, a Python list in the sorted order, torch.cat), three a layer (tokens and probs at
    dispatch, tokens at combine) over EP x local-expert chunks, forward and backward, at Lite's micro-batch-1 rows; the
    issue loop with no sync, as time_path's host figure."""
    chunks = EP * EXPERTS
    tokens = torch.randn(EXPERTS * ROWS, HIDDEN, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    probs = torch.rand(EXPERTS * ROWS, dtype=torch.float32, device=DEV, requires_grad=True)
    sizes = [EXPERTS * ROWS // chunks] * chunks
    order = torch.arange(chunks).reshape(-1, EXPERTS).T.ravel().tolist()  # sort_input_by_local_experts
    restore = torch.arange(chunks).reshape(EXPERTS, -1).T.ravel().tolist()  # restore_output_by_local_experts

    def sort(x, idx):
        parts = torch.split(x, sizes, dim=0)
        return torch.cat([parts[i] for i in idx], dim=0)

    def layer():
        t, pr = sort(tokens, order), sort(probs, order)
        back = sort(t * pr.unsqueeze(-1), restore)
        back.float().sum().backward()

    for _ in range(WARM):
        layer()
    synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        layer()
    host = (time.perf_counter() - t0) / N
    synchronize()
    return {"chunks": chunks, "sorts_per_layer": 3, "host_us_per_layer": round(host * 1e6, 2)}


def paths() -> dict:
    out = {}
    try:
        import grouped_gemm  # noqa: F401, PLC0415

        out["grouped_gemm gmm"] = gmm_layer
    except ImportError:
        pass
    if DEV == "cuda":
        for lib in ("cublas", "cublaslt"):
            def run(p, lib=lib):
                torch.backends.cuda.preferred_blas_library(lib)
                return loop_layer(p)
            out[f"torch.mm loop ({lib})"] = run
    else:
        out["torch.mm loop (cpu)"] = loop_layer
    return out


def main() -> None:
    arch = torch.cuda.get_device_properties(0).gcnArchName if DEV == "cuda" and torch.version.hip else DEV
    print(json.dumps({"torch": torch.__version__, "hip": torch.version.hip, "device": arch,
                      "env": {k: os.environ.get(k) for k in ENV}}))
    for name, layer in paths().items():
        print(json.dumps({"path": name, "experts": EXPERTS, "rows": ROWS, **time_path(layer)}))
    print(json.dumps({"path": "sort_chunks_by_idxs (unfused)", "experts": EXPERTS, "rows": ROWS, **sort_chunks_host()}))


if __name__ == "__main__":
    main()
