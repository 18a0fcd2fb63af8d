"""The gradients a loop frees at each step (zero_grad with set_to_none): what the next step's forward / backward holds
of them, and the caching-allocator segments they leave reserved (docs/known-gaps.md 242).

Which loops free them:
- torchtune's recipes: optimizer.zero_grad(set_to_none=True) after each step (recipes/*_single_device.py; with
  optimizer_in_bwd each parameter's in its hook).
- the HF Trainer (and TRL, LLaMA-Factory, Axolotl, fms-hf-tuning, built on it): `model.zero_grad()` after
  `self.optimizer.step()` and `self.lr_scheduler.step()` in _inner_training_loop (transformers
  src/transformers/trainer.py at 000945a9b7; the same call since 4.x), and nn.Module.zero_grad's set_to_none defaults
  to True from torch 2.0. Not under DeepSpeed's engine (ZeRO-1/2, or ZeRO-3 without fsdp): its optimizer keeps its
  own flat gradient partitions and buckets, which the Trainer's zero_grad does not free.
- the fsdp style's loops (Composer's _train_microbatches: optimizer.zero_grad(set_to_none=True) before a batch's
  first forward, mosaicml/composer trainer.py at 640518880; ATorch's fsdp_llama2.py optimizer.zero_grad() after the
  step) over FSDP1 units whose fp32 shard is their only weights (fsdp1_mixed: FSDP1 drops the flat gradient when every
  original one is None); not their DDP path, whose reducer keeps its buckets (not read here).
With one micro-batch a step and no pipeline each gradient is then created by this backward, as the activations it
needs are freed; with accumulation only a step's first micro-batch holds none, so the step's peak (a later
micro-batch) holds them all, as before.

What the allocator keeps (PyTorch's caching allocator, allocator_pool.py's rules: best fit, segments never merge, a
freed block is reused only by a request no larger than it): the backward creates the decoder layers' gradients after
the loss path's tensors are freed (the head's backward comes first), so a gradient takes a block the loss phase cut
(logit-sized: larger than any gradient) where one is free, and otherwise cuts a segment of its own. Those segments
are freed by zero_grad and stay reserved through the next step's loss phase: the next step's tensors find their
own previous step's blocks first (best fit: the same sizes), and its logit-sized tensors are larger than any
gradient's segment. So the reserved peak holds the freed gradients beyond what the loss phase's blocks could take.
Without recompute the backward also frees each decoder layer's saved activations as it leaves the layer (autograd
releases a node's saved tensors after it runs), before it creates the layers below's gradients: where a saved
token-row tensor is at least as large as a gradient of the same width (a token x f activation against an h x f
gradient: tokens x activation bytes >= h x gradient bytes) those blocks take the later layers' gradients too, so only
what one layer's gradients need beyond the blocks freed before them keeps a segment (docs/known-gaps.md 254 (a)).
Under full recompute the re-run layer's blocks go to the next re-run and the checkpoints are token x h: not counted.
Not modelled: the optimizer's states created lazily at the first step in whatever blocks are then free
(docs/known-gaps.md 213 (c) and 242 (b)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the loops that free every gradient after each step (module docstring)
SET_TO_NONE_STYLES = ("torchtune", "hf")


def fresh_gradients(name: str, hf_auto: Any, zero: Any, n_micro: Any, pp: Any, ds_engine: Any,
                    fsdp_units: Any = False) -> Any:
    """Where the backward creates every gradient (the loop freed them at the step), per strategy: torchtune without
    sharding or under FSDP (zero 0 or >= 3); the HF Trainer (framework hf, or auto where it resolves to hf: `hf_auto`)
    without a ZeRO stage or with FSDP's (zero >= 3 not on DeepSpeed's engine, `ds_engine`); the fsdp style's FSDP1
    units (`fsdp_units`: fsdp1_mixed.fp32_shard_units); one micro-batch a step and no pipeline (module docstring)."""
    z = np.asarray(zero)
    plain_or_fsdp = (z == 0) | (z >= 3)
    hf = (np.asarray(hf_auto, bool) if name == "auto" else np.asarray(name == "hf")) & ~np.asarray(ds_engine, bool)
    styles = np.asarray(name == "torchtune") | hf | (np.asarray(fsdp_units, bool) & (z >= 3))
    return styles & plain_or_fsdp & (np.asarray(n_micro) < 1.5) & (np.asarray(pp) <= 1)


def kept_gradient_segments(freed: Any, loss_blocks: Any, layer_blocks: Any = 0.0, n_layers: Any = 1.0) -> Any:
    """Reserved bytes of the freed gradients' own segments beside a phase that does not hold them: the gradients'
    bytes the phase lacks (`freed`) beyond what the loss phase's freed blocks (`loss_blocks`: the logits, the loss's
    temporaries and segments, the head input, the forward's layer segments) and the decoder layers' freed saves
    (`layer_blocks` a layer, `freed_layer_blocks`) could hold when the backward created them. The backward makes the
    gradients a layer at a time (`n_layers`, `freed` / n each) after the layers above freed theirs, so the most kept
    is at the first layer or at the last (module docstring)."""
    freed, loss = np.asarray(freed, float), np.asarray(loss_blocks, float)
    n = np.maximum(np.asarray(n_layers, float), 1.0)
    last = freed - loss - (n - 1.0) * np.asarray(layer_blocks, float)
    return np.maximum(np.maximum(freed / n - loss, last), 0.0)


def freed_layer_blocks(acts: Any, n_layers: Any, no_recompute: Any, tokens: Any, act_bytes: float, grad_rows: float,
                       grad_bytes: Any) -> Any:
    """Bytes a decoder layer's backward frees that the next layers' gradients can take (module docstring): without
    recompute its saved activations (`acts` over `n_layers`), where a token-row block holds a gradient of the same
    width (`tokens` x `act_bytes` >= `grad_rows` x `grad_bytes`; grad_rows the hidden size, 0 for rank-thin adapter
    gradients); under recompute none."""
    holds = np.asarray(no_recompute, bool) & (np.asarray(tokens, float) * act_bytes >= grad_rows * np.asarray(grad_bytes))
    return np.where(holds, np.asarray(acts, float) / np.maximum(np.asarray(n_layers, float), 1.0), 0.0)
