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
Not modelled: the optimizer's states created lazily at the first step in whatever blocks are then free
(docs/known-gaps.md 213 (c) and 242 (b)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the loops that free every gradient after each step (module docstring)
SET_TO_NONE_STYLES = ("torchtune", "hf")


def fresh_gradients(name: str, hf_auto: Any, zero: Any, n_micro: Any, pp: Any, ds_engine: Any) -> Any:
    """Where the backward creates every gradient (the loop freed them at the step), per strategy: torchtune without
    sharding or under FSDP (zero 0 or >= 3); the HF Trainer (framework hf, or auto where it resolves to hf: `hf_auto`)
    without a ZeRO stage or with FSDP's (zero >= 3 not on DeepSpeed's engine, `ds_engine`); one micro-batch a step and
    no pipeline (module docstring)."""
    z = np.asarray(zero)
    plain_or_fsdp = (z == 0) | (z >= 3)
    hf = (np.asarray(hf_auto, bool) if name == "auto" else np.asarray(name == "hf")) & ~np.asarray(ds_engine, bool)
    styles = np.asarray(name == "torchtune") | hf
    return styles & plain_or_fsdp & (np.asarray(n_micro) < 1.5) & (np.asarray(pp) <= 1)


def kept_gradient_segments(freed: Any, loss_blocks: Any) -> Any:
    """Reserved bytes of the freed gradients' own segments beside a phase that does not hold them: the gradients'
    bytes the phase lacks (`freed`) beyond what the loss phase's freed blocks (`loss_blocks`: the logits, the loss's
    temporaries and segments, the head input, the forward's layer segments) could hold when the backward created
    them (module docstring)."""
    return np.maximum(np.asarray(freed, float) - np.asarray(loss_blocks, float), 0.0)
