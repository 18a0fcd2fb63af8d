"""torchtune 0.1's QLoRA model init on the caching allocator: the reserved bytes torchao 0.1's unchunked NF4
quantisation leaves cached before the first step (docs/known-gaps.md 233).

What the init runs (pytorch/torchtune at 0914d5cf, v0.1.x, which pins torchao==0.1, ff288954, 2024-04-04):
(1) build: recipes/lora_finetune_single_device.py _setup_model instantiates the model under
    `utils.set_default_dtype(bf16), self._device` (on the GPU); lora_llama2 builds ONE decoder layer, each LoRALinear
    allocating its nn.Linear's bf16 weight and holding `to_nf4(linear.weight)` (torchtune/modules/peft/lora.py); then
    the bf16 embedding and output projection; TransformerDecoder's _get_clones deep-copies that layer num_layers times
    (torchtune/modules/transformer.py), each NF4 weight through torchtune's aten.clone override
    `to_nf4(get_original_weight())` (torchtune/utils/_register_nf4_dispatch_ops.py); the template layer is freed
    when the builder returns.
(2) load: model.load_state_dict of a state dict on the CPU (safe_torch_load, map_location="cpu"); each NF4 copy_ is
    torchtune's inplace_copy, `to_nf4(src.to(dest.device))`: the checkpoint tensor on the GPU, its bf16 cast where
    the checkpoint is not bf16, quantised; the old NF4 data freed.
torchao 0.1's to_nf4 (torchao/dtypes/nf4tensor.py at v0.1): get_block_absmax twice (`blocks.abs()` a bf16 copy,
`.max(dim=1)` values and int64 indices a block); convert_to_norm_float_weight's scaled blocks (bf16) and
quantize_tensor_nearest's `(value.unsqueeze(-1) - nf4).abs()`: two (numel, 16) bf16 tensors alive across the abs (not
chunked before torchao 6081796b, #196, 2024-05-01, first released in 0.2.0: 1M-element chunks), then `.min(dim=-1)`
(bf16 values, int64 indices) and the packing `q[::2] << 4 | q[1::2]` (two int64 half-size tensors, uint8 result).
The persistent NF4 data of each new weight takes the best-fitting free block, which after the first quantisation is
a cached transient segment, so later quantisations cut new ones: the reserved bytes grow across the clones.

Replayed on the large pool (estimate.allocator_pool); requests of 1 MiB or less (norms, adapters, the
double-quantised scalers) are not replayed. benchmarks/nf4_init_replay.py prints the replay against the QLoRA
tutorial's 'Peak memory reserved, model init'.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from trainsizer.estimate.allocator_pool import Pool
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import lora_dense_linears
from trainsizer.models.arch import ModelArch

BF16_BYTES = 2
NEAREST_CODES = 16  # the NF4 code book quantize_tensor_nearest compares every element with


def _block_absmax(pool: Pool, n: int) -> int:
    """get_block_absmax (64-element blocks): the abs copy and max's int64 indices freed, the bf16 maxima returned."""
    ab = pool.malloc(BF16_BYTES * n)
    vals, idx = pool.malloc(n // 32), pool.malloc(n // 8)
    pool.release(idx)
    pool.release(ab)
    return vals


def to_nf4(pool: Pool, n: int) -> int:
    """torchao 0.1's NF4Tensor.from_tensor on a bf16 tensor of n elements on the GPU: the packed uint8 data's block
    (the double-quantised scalers are small-pool)."""
    pool.release(_block_absmax(pool, n))  # double_quantize_scalers
    scales = _block_absmax(pool, n)
    scaled = pool.malloc(BF16_BYTES * n)
    sub = pool.malloc(NEAREST_CODES * BF16_BYTES * n)
    diff = pool.malloc(NEAREST_CODES * BF16_BYTES * n)
    pool.release(sub)
    min_vals, min_idx = pool.malloc(BF16_BYTES * n), pool.malloc(8 * n)
    pool.release(min_vals)
    pool.release(diff)
    shifted = pool.malloc(4 * n)
    packed64 = pool.malloc(4 * n)
    pool.release(shifted)
    data = pool.malloc(n // 2)
    for bid in (packed64, min_idx, scaled, scales):
        pool.release(bid)
    return data


def get_original_weight(pool: Pool, n: int) -> int:
    """NF4Tensor.get_original_weight (v0.1): two int64 code tensors, two bf16 look-ups, two scaled halves, then the
    stacked bf16 weight (returned)."""
    tmp = [pool.malloc(4 * n), pool.malloc(4 * n), pool.malloc(n), pool.malloc(n), pool.malloc(n), pool.malloc(n)]
    out = pool.malloc(BF16_BYTES * n)
    for bid in tmp:
        pool.release(bid)
    return out


@lru_cache(maxsize=64)
def init_reserved_bytes(layer_linears: tuple[int, ...], layers: int, rest_bytes: tuple[int, ...],
                        checkpoint_cast: bool = True) -> int:
    """Peak reserved bytes of the large pool over torchtune 0.1's QLoRA init (module docstring): `layer_linears` the
    element counts of one layer's quantised linears in build order, `rest_bytes` the bf16 tensors built after the
    template layer (embedding, output projection), `checkpoint_cast` whether to_nf4's bf16 cast copies the loaded
    checkpoint tensor (a 16-bit checkpoint not in bf16: Llama 2's HF checkpoint is fp16; the peak is the clones' for
    Llama 2 7B either way: tests/estimate/test_nf4_init.py)."""
    pool = Pool()

    def quantise(n: int, source: list[int]) -> int:
        data = to_nf4(pool, n)
        for bid in source:
            pool.release(bid)
        return data

    template = [quantise(n, [pool.malloc(BF16_BYTES * n)]) for n in layer_linears]
    for b in rest_bytes:
        pool.malloc(b)
    model = [quantise(n, [get_original_weight(pool, n)]) for _ in range(layers) for n in layer_linears]
    for bid in template:
        pool.release(bid)
    for i, n in enumerate(layer_linears * layers):
        src = [pool.malloc(BF16_BYTES * n)] + ([pool.malloc(BF16_BYTES * n)] if checkpoint_cast else [])
        new = quantise(n, src[::-1])
        pool.release(model[i])
        model[i] = new
    return pool.peak_reserved


def applies(training: Training, strategy: Strategy, framework: str) -> bool:
    """Whether the job's init is torchtune 0.1's (strategy.nf4_quantize_unchunked under torchtune QLoRA)."""
    stated = bool(getattr(strategy, "nf4_quantize_unchunked", None))
    return stated and training.method == "qlora" and framework == "torchtune"


def init_floor_bytes(model: ModelArch, training: Training, strategy: Strategy, framework: str) -> float:
    """The caching allocator's reserved bytes after torchtune 0.1's QLoRA init (`init_reserved_bytes` on the model's
    quantised linears: the adapted ones, as torchtune quantises the base of every LoRALinear; the embedding and the
    untied output projection in 16 bit); 0 where `applies` is false. A dense model's layers (torchtune 0.1 had no
    MoE); one GPU's whole model (torchtune 0.1's QLoRA recipe is single-device)."""
    if not applies(training, strategy, framework):
        return 0.0
    linears: list[int] = []
    for d_in, d_out, copies in lora_dense_linears(model, training):
        linears.extend([int(d_in * d_out)] * max(1, round(copies)))
    table = 2 * model.vocab * model.hidden
    rest = (table,) if model.tied_embeddings else (table, table)
    return float(init_reserved_bytes(tuple(linears), int(model.layers), rest))


def floor_on_device(floor: Any, items: dict[str, float]) -> float:
    """The init floor with what sits outside the caching allocator (CUDA context, NCCL buffers), as the estimate's
    on-device peak counts them; 0 where there is no floor."""
    return float(floor) + items.get("cuda_context", 0.0) + items.get("nccl_buffers", 0.0) if floor > 0 else 0.0
