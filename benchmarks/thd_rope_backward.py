"""Megatron-Core's unfused RoPE over THD-packed rows, forward and backward, counted and timed as PyTorch runs it
(needs PyTorch; CPU is enough: the ops are the device's, the host times are this machine's).

Megatron-Core rope_utils._apply_rotary_pos_emb_thd (NVIDIA/Megatron-LM 61f31145, 2026-07-17, Megatron-Bridge
f3ae2767b's pin) with apply_rope_fusion False splits the packed row at cu_seqlens and runs each sub-sequence through
_apply_rotary_pos_emb_bshd, copying each result into its slice of an output buffer. step_time._thd_rope_host charges
the forward's Python ops (docs/known-gaps.md 286 (b)); step_time._thd_rope_backward_host_s the backward's kernels,
which autograd's engine issues one node at a time (docs/known-gaps.md 315 (a)). This script:

(1) counts the data-moving ops a sub-sequence adds, forward and backward (the slope between two pack sizes, under
    eager_chain_bytes' dispatch mode; allocations and views not counted, a zero-filled slice_backward two kernels),
    against perf_constants.yaml kernels rope_thd_host_per_sequence / rope_thd_backward_per_sequence;
(2) times the host per sub-sequence both ways on CPU tensors (median; the backward's C++ nodes against the forward's
    Python ops) and single ops back to back on the same tiny tensors: what the loop spends a kernel beyond a bare add
    is its views, Python and autograd bookkeeping, device independent (perf_constants.yaml eager_loop_glue; the charge
    takes each kernel at host_sync elementwise_op_s plus that, docs/known-gaps.md 325 (a));
(3) prints each perf_heldout72 row's charge a layer and micro-batch, forward and backward.

    python benchmarks/thd_rope_backward.py
"""

from __future__ import annotations

import time
from collections import Counter

from eager_chain_bytes import NO_DATA, ZERO_FILLED, byte_mode, mcore_rope_unfused

SAMPLE_LEN, HEADS, ROT = 8, 2, 16  # a sub-sequence's tokens, heads and rotary width (counts do not depend on them)
PACKS = (2, 12)  # sub-sequences a row at the two points of the slope
# allocations that launch nothing (CopySlices' result buffer)
NO_KERNEL = NO_DATA | {"new_empty_strided", "squeeze"}


def thd_rope(t, cu_seqlens, freqs, mla: bool = False):
    """The THD loop as Megatron-Core runs it without fusion (CP 1): the lengths and the total read on the host, one
    split, then each sub-sequence rotated on its own (eager_chain_bytes.mcore_rope_unfused, the bshd path) and copied
    into its slice of an empty output. `mla`: multi-latent attention's call (mla_rotary_interleaved True,
    multi_latent_attention.py at 61f31145) first gathers the even then the odd rotary channels with a cat."""
    import torch  # noqa: PLC0415 (optional dependency)

    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    int(cu_seqlens[-1].item())
    out, at = torch.empty_like(t), 0
    for part in torch.split(t, lengths):
        if mla:
            part = torch.cat((part[..., 0::2], part[..., 1::2]), dim=-1)
        rotated = mcore_rope_unfused(part.unsqueeze(1), freqs[: part.size(0)]).squeeze(1)
        out.narrow(0, at, part.size(0)).copy_(rotated)
        at += part.size(0)
    return out


def _inputs(samples: int):
    import torch  # noqa: PLC0415

    cu = torch.arange(samples + 1, dtype=torch.int32) * SAMPLE_LEN
    t = torch.randn(samples * SAMPLE_LEN, HEADS, ROT, dtype=torch.bfloat16, requires_grad=True)
    return t, cu, torch.randn(2 * SAMPLE_LEN, 1, 1, ROT)


def kernels(ops: list[tuple[str, int, int]]) -> int:
    """Kernels a list of dispatched ops launches: views and allocations none, a zero-filled backward two."""
    return sum(2 if op in ZERO_FILLED else 1 for op, _, _ in ops if op not in NO_KERNEL)


def counted(samples: int, mla: bool = False) -> tuple[int, int, Counter]:
    """(forward kernels, backward kernels, backward ops by name) of one call over a row of `samples`."""
    import torch  # noqa: PLC0415

    t, cu, freqs = _inputs(samples)
    fwd = byte_mode()
    with fwd:
        out = thd_rope(t, cu, freqs, mla)
    grad = torch.randn_like(out)
    bwd = byte_mode()
    with bwd:
        out.backward(grad)
    return kernels(fwd.ops), kernels(bwd.ops), Counter(op for op, _, _ in bwd.ops)


def per_sequence(mla: bool = False) -> tuple[float, float]:
    """(forward, backward) kernels each further sub-sequence adds to a call (`mla`: multi-latent attention's)."""
    (f0, b0, _), (f1, b1, _) = counted(PACKS[0], mla), counted(PACKS[1], mla)
    span = PACKS[1] - PACKS[0]
    return (f1 - f0) / span, (b1 - b0) / span


def host_per_sequence(reps: int = 800) -> tuple[float, float]:
    """(forward, backward) host seconds each further sub-sequence adds, medians over `reps` calls on CPU tensors."""
    import torch  # noqa: PLC0415

    torch.set_num_threads(1)

    def medians(samples: int) -> tuple[float, float]:
        t, cu, freqs = _inputs(samples)
        f, b = [], []
        for i in range(reps + 100):
            t0 = time.perf_counter()
            out = thd_rope(t, cu, freqs)
            t1 = time.perf_counter()
            grad = torch.ones_like(out)
            t2 = time.perf_counter()
            out.backward(grad)
            t3 = time.perf_counter()
            if i >= 100:
                f.append(t1 - t0)
                b.append(t3 - t2)
        return sorted(f)[len(f) // 2], sorted(b)[len(b) // 2]

    (f0, b0), (f1, b1) = medians(PACKS[0]), medians(PACKS[1])
    span = PACKS[1] - PACKS[0]
    return (f1 - f0) / span, (b1 - b0) / span


def bare_ops_s(reps: int = 7, n: int = 2000) -> dict[str, float]:
    """Host seconds of single eager ops on tiny CPU tensors issued back to back from Python (best of `reps` means of
    `n` calls, one thread): element-wise add, mul, neg and cat, the output slice's copy_, and mm at 1 x 1 and 64 x 64
    (fp32): the device-independent part of each op (Python, dispatcher, the CPU kernel)."""
    import torch  # noqa: PLC0415

    torch.set_num_threads(1)
    a = torch.randn(2 * SAMPLE_LEN, HEADS, ROT, dtype=torch.bfloat16)
    b, out = torch.randn_like(a), torch.empty(4 * SAMPLE_LEN, HEADS, ROT, dtype=torch.bfloat16)
    m1, m64 = torch.randn(1, 1), torch.randn(64, 64)
    ops = {"add": lambda: torch.add(a, b), "mul": lambda: torch.mul(a, b), "neg": lambda: torch.neg(a),
           "cat": lambda: torch.cat((a, b), -1), "copy_ into a slice": lambda: out.narrow(0, 0, a.size(0)).copy_(a),
           "mm 1x1": lambda: torch.mm(m1, m1), "mm 64x64": lambda: torch.mm(m64, m64)}
    got = {}
    for name, fn in ops.items():
        best = float("inf")
        for _ in range(reps):
            for _ in range(200):
                fn()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n)
        got[name] = best
    return got


def row_charges() -> list[tuple[str, float, float, float]]:
    """(row id, sub-sequences a row, forward, backward host ms a layer and micro-batch) of perf_heldout72's rows that
    run the loop."""
    import perf_heldout72 as b  # noqa: PLC0415
    from trainsizer.estimate import step_time as st  # noqa: PLC0415

    got = []
    original = st._host_excess

    def spy(x, lt, tp):
        seqs = float(st._thd_rope_sequences(x))
        if seqs > 0:
            got.append((seqs, float(st._thd_rope_host(x)), float(st._thd_rope_backward_host_s(x))))
        return original(x, lt, tp)

    out = []
    st._host_excess = spy
    try:
        for r in b.rows():
            got.clear()
            b.BATCH.estimate([r])
            if got:
                seqs, f, bw = got[-1]
                out.append((r["id"], seqs, f * 1e3, bw * 1e3))
    finally:
        st._host_excess = original
    return out


def main() -> None:
    from trainsizer.estimate.calibration import load_constants  # noqa: PLC0415
    from trainsizer.estimate.compute import KERNELS  # noqa: PLC0415

    fwd, bwd = per_sequence()
    print("(1) kernels a packed sub-sequence adds to one call (PyTorch, CPU, dispatch mode):")
    print(f"  forward  {fwd:5.1f}  charged {KERNELS['rope_thd_host_per_sequence']} (rope_thd_host_per_sequence)")
    print(f"  backward {bwd:5.1f}  charged {KERNELS['rope_thd_backward_per_sequence']} "
          "(rope_thd_backward_per_sequence)")
    mf, mb = per_sequence(mla=True)
    print(f"  MLA's interleave: forward +{mf - fwd:3.1f}, backward +{mb - bwd:3.1f}  (charged "
          f"{KERNELS['rope_thd_mla_interleave_per_sequence']:.0f} / "
          f"{KERNELS['rope_thd_mla_interleave_backward_per_sequence']:.0f}: docs/known-gaps.md 325 (a))")
    f_all, b_all, names = counted(PACKS[0])
    print(f"  one call over {PACKS[0]} sub-sequences: forward {f_all}, backward {b_all}; backward ops {dict(names)}")
    hf, hb = host_per_sequence()
    print("\n(2) host a sub-sequence adds, CPU tensors (this machine; median):")
    print(f"  forward {hf * 1e6:6.1f} us ({hf * 1e6 / fwd:4.2f} a kernel)  backward {hb * 1e6:6.1f} us "
          f"({hb * 1e6 / bwd:4.2f} a kernel)  backward / forward {hb / hf:4.2f}")
    bare = bare_ops_s()
    print("  single ops on tiny CPU tensors, back to back (us): "
          + ", ".join(f"{k} {v * 1e6:.2f}" for k, v in bare.items()))
    glue_f, glue_b = hf / fwd - bare["add"], hb / bwd - bare["add"]
    print(f"  the loop's host beyond a bare add, a kernel (us): forward {glue_f * 1e6:.2f}, backward {glue_b * 1e6:.2f}"
          f"  (charged {load_constants().raw['eager_loop_glue']['rope_thd_s_per_kernel'] * 1e6:.2f}: eager_loop_glue "
          "rope_thd_s_per_kernel, on top of host_sync elementwise_op_s)")
    print("\n(3) perf_heldout72 rows running the loop: sub-sequences a row, host ms a layer and micro-batch "
          "(forward, exposed; backward, in the layer's soft maximum):")
    for rid, seqs, f, bw in row_charges():
        print(f"  {rid:58s} {seqs:5.1f}  forward {f:5.2f}  backward {bw:5.2f}")


if __name__ == "__main__":
    main()
