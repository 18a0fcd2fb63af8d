"""torchtune 0.1's QLoRA model init replayed on the caching allocator's large pool (a diagnostic; known-gaps 233).

The replay is the estimate's (src/trainsizer/estimate/nf4_init.py: what torchtune 0.1 at 0914d5cf and torchao 0.1 run,
read there): the template layer's build, the num_layers deep copies through torchtune's NF4 clone override, the
checkpoint load through its copy_ override, each weight quantised by torchao 0.1's unchunked to_nf4. Printed: the
large pool's peak reserved bytes, the bytes resident after init, and the closed form "resident + the largest weight's
working set" (its source copy and bf16 cast, the scaled blocks and quantize_tensor_nearest's (numel, 16) bf16 pair:
70 bytes an element), which leaves out the fragmentation the replay shows (each layer's persistent NF4 data is cut
from the cached transient segments, so later quantisations cudaMalloc new ones), against the QLoRA tutorial's 'Peak
memory reserved, model init' (9.13 GB; the training figure, 9.29 GB, is perf_heldout59's row). Llama 2 7B as the
tutorial's llama2/7B_qlora_single_device quantises it: every attention and MLP linear (LoRA on all of them), the
embedding and the output projection in bf16.

Run: python benchmarks/nf4_init_replay.py
"""

from __future__ import annotations

from trainsizer.estimate.nf4_init import BF16_BYTES, NEAREST_CODES, init_reserved_bytes

GIB = 1 << 30
# torchtune QLoRA tutorial at 0914d5cf: 'Peak memory reserved, model init' for QLoRA, GB of 1e9 bytes
TUTORIAL_INIT_RESERVED_B = 9.13e9
DIM, FFN, VOCAB, LAYERS = 4096, 11008, 32000, 32  # Llama 2 7B


def main() -> None:
    layer = (DIM * DIM,) * 4 + (FFN * DIM,) * 3  # q, k, v, output_proj; w1, w2, w3
    rest = (BF16_BYTES * VOCAB * DIM,) * 2  # tok_embeddings, output
    peak = init_reserved_bytes(layer, LAYERS, rest)
    resident = LAYERS * sum(n // 2 for n in layer) + sum(rest)
    closed = resident + max(layer) * (3 * BF16_BYTES + 2 * NEAREST_CODES * BF16_BYTES)
    meas = TUTORIAL_INIT_RESERVED_B
    print("torchtune 0.1 QLoRA init, Llama 2 7B, torchao 0.1 (large pool; the small pool not replayed), GiB:")
    print(f"  replayed peak reserved          {peak / GIB:6.2f} ({100 * (peak / meas - 1):+.1f}%)")
    print(f"  resident after init              {resident / GIB:6.2f}")
    print(f"  resident + one working set       {closed / GIB:6.2f} ({100 * (closed / meas - 1):+.1f}%)")
    print(f"  tutorial, model init (9.13 GB)   {meas / GIB:6.2f}")


if __name__ == "__main__":
    main()
