"""transformers' device_map "auto" for training: one process spreads the model's layers over the GPUs of one host.

What ms-swift 1.5 (modelscope/ms-swift 97e4d198b, swift/llm/sft.py: device_map 'auto' unless launched distributed),
LLaMA-Factory and most QLoRA scripts run on 2-8 cards. Read in:
- transformers' from_pretrained device_map branch (modeling_utils.py in the 4.3x releases, today
  integrations/accelerate.py _get_device_map, read at 040ba146): "auto" and "balanced" call accelerate's
  get_balanced_memory (low_zero False), then infer_auto_device_map with the model's _no_split_modules (a decoder layer);
- accelerate v0.25.0 (2023-12-01) src/accelerate/utils/modeling.py:
  - get_balanced_memory: per_gpu = model bytes // k + buffer, buffer = int(1.25 x max(the first no-split block's size,
    the mean leaf module's)); every GPU but the last gets max_memory per_gpu, the last keeps its whole memory;
  - infer_auto_device_map walks the modules in order (the embedding, the decoder layers, the final norm, the LM head),
    filling a GPU up to its max_memory and, on GPU 0 (a "main device"), up to max_memory less the largest layer
    still to place; a decoder layer that does not fit goes whole to the next GPU;
- accelerate big_modeling.py dispatch_model / hooks.py AlignDevicesHook: each placed module's inputs are moved to its
  GPU before it runs, so the hidden state crosses each boundary once forward and its gradient once backward, and the
  cards run one after another (step_time._device_map_step).

Sizes are bytes as accelerate counts them: the dtype the weights load in for every module (under bitsandbytes 4-bit,
transformers' target dtype INT4, 0.5 B, for every module but the LM head it keeps unquantised); a tied LM head counts
nothing (its weight is the embedding's). The GPUs' own memory does not enter: the model is assumed to fit (the memory
estimate says whether it does), so per_gpu is below every card's capacity. The mean leaf module (a linear layer or a
norm) is always below a decoder layer, which holds several, so the buffer is 1.25 decoder layers.
"""

from __future__ import annotations

from trainsizer.models.arch import ModelArch

BUFFER_LAYERS = 1.25  # get_balanced_memory: buffer = int(1.25 * max(no-split block, mean leaf)) (accelerate v0.25.0)


def _module_bytes(model: ModelArch, weight_bytes: float, head_bytes: float) -> tuple[float, list[float], float]:
    """(embedding, each decoder layer, final norm + LM head) in accelerate's bytes (module docstring)."""
    layers = [model.layer_params(i).total * weight_bytes for i in range(model.layers)]
    tail = model.final_norm_params * weight_bytes + model.lm_head_params * head_bytes
    return model.embedding_params * weight_bytes, layers, tail


def balanced_split(model: ModelArch, gpus: int, weight_bytes: float = 2.0, head_bytes: float = 2.0) -> tuple[int, ...]:
    """Decoder layers on each GPU that holds any, in order, as accelerate's balanced device map places them on
    `gpus` GPUs (module docstring); GPUs it leaves without a decoder layer (the last ones of a small model on many
    cards, holding the LM head or nothing) are not listed."""
    if gpus <= 1:
        return (model.layers,)
    emb, layers, tail = _module_bytes(model, weight_bytes, head_bytes)
    sizes = [emb, *layers, tail]  # in the order infer_auto_device_map places them
    per_gpu = sum(sizes) // gpus + int(BUFFER_LAYERS * layers[0])
    card, used, counts = 0, 0.0, [0] * gpus
    for i, size in enumerate(sizes):
        # GPU 0 holds back room for the largest module still to place after this one
        room = per_gpu - (max(sizes[i + 1:], default=0.0) if card == 0 else 0.0)
        while card < gpus - 1 and used + size > room:  # a module that does not fit goes whole to the next GPU
            card, used, room = card + 1, 0.0, per_gpu
        used += size
        if 0 < i <= len(layers):
            counts[card] += 1
    return tuple(n for n in counts if n)


def weight_bytes_for(method: str, precision: str) -> tuple[float, float]:
    """(bytes a decoder layer's or the embedding's parameter counts, bytes an LM-head parameter counts) as
    transformers sizes the modules it places: 0.5 under bitsandbytes 4-bit (its INT4 target dtype; the LM head kept
    in the model's dtype), the 16-bit dtype otherwise (fp32 weights: 4). The split depends on their ratio only."""
    full = 4.0 if precision == "fp32" else 2.0
    return (0.5, full) if method == "qlora" else (full, full)


def card_shares(model: ModelArch, counts: tuple[int, ...]) -> tuple[float, ...]:
    """Each card's share of the model's parameters (the embedding on the first, the final norm and LM head on the
    last): what its optimizer step runs over."""
    emb, layers, tail = _module_bytes(model, 1.0, 1.0)
    total = emb + sum(layers) + tail
    out, start = [], 0
    for j, n in enumerate(counts):
        held = sum(layers[start:start + n]) + (emb if j == 0 else 0.0) + (tail if j == len(counts) - 1 else 0.0)
        out.append(held / total)
        start += n
    return tuple(out)
