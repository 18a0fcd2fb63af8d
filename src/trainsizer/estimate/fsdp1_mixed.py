"""Where the fsdp style's FSDP1 units keep the fp32 shard as their only persistent copy of the weights, and what that
changes in the model states and the loss phase (docs/known-gaps.md 281 (a)).

The fsdp style stands for loops that build the model in fp32 and shard it with torch FSDP1 under MixedPrecision with a
16-bit param_dtype: Composer's FSDP (composer/distributed/mosaic_parallelism.py get_mixed_precision: PURE and DEFAULT
give param_dtype = the autocast precision, keep_low_precision_grads False; mosaicml/composer at 640518880), as
llm-foundry runs it, and ATorch's fsdp_llama2.py (amp_native under fsdp turns on MixedPrecision(bf16), dlrover
3a442b728). What torch FSDP1 then holds (torch/distributed/fsdp/_flat_param.py and _runtime_utils.py, unchanged from
torch 2.1 to 2.13):
- Weights: the sharded flat parameter stays fp32, the optimizer's own copy (the master item). pre_unshard casts it to
  the 16-bit `_mp_shard` only for the all-gather (_use_low_precision_shard) and post_unshard frees that shard
  (_free_low_precision_sharded_param), so no 16-bit shard outlives a unit's all-gather: no weights item.
- Gradients: after each unit's reduce-scatter _cast_grad_to_param_dtype casts the sharded gradient to the flat
  parameter's dtype (no low-precision hook), so the sharded gradient is fp32 (the master's bytes a parameter).
- The loop frees them at the step: Composer's _train_microbatches runs optimizer.zero_grad(set_to_none=True) before a
  batch's first forward (trainer.py since aa19e2466, 2022-09), ATorch's loop optimizer.zero_grad() (set_to_none True by
  default from torch 2.0), and FSDP1 drops the flat gradient when every original one is None
  (_reset_flat_param_grad_info_if_needed, use_orig_params; else the optimizer holds the flat parameter itself). With
  one micro-batch a step (Composer syncs every micro-batch under FSDP: its no_sync is DDP's only) and no pipeline, the
  backward creates every gradient (grad_segments.fresh_gradients).
- Units at the loss: every decoder-layer unit is resharded after its forward (_post_forward_reshard under FULL_SHARD /
  HYBRID_SHARD), the root (embedding, final norm, LM head) is not, and the root's post-forward index is the last, so
  its pre-backward hook at the backward's start prefetches the last layer under BACKWARD_PRE
  (_exec_order_utils.get_handle_to_backward_prefetch: post-forward index - 1). No unsharded gradient exists before
  the LM head's backward; the root's flat gradient is made by autograd when the embedding's gradient arrives, at the
  end of the backward (its views share one split node). So the loss phase holds the root's 16-bit weights and one
  layer's, not two layers, a layer's gradient and the root's gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.fsdp1_no_sync import fsdp1_units

FSDP1_MIXED_STYLES = ("fsdp",)  # the styles whose loop is the one above (FSDP1 built in fp32, 16-bit MixedPrecision)


def fp32_shard_units(strategy: Any, name: str, mega: Any, titan: Any, z: Any, dpc: Any, training: Any) -> np.ndarray:
    """Where the job's FSDP1 units keep only the fp32 shard (module docstring), per strategy: a style in
    FSDP1_MIXED_STYLES, FSDP1 (fsdp full / hybrid, fsdp_version 1 or the style's: fsdp1_no_sync.fsdp1_units) sharded
    over more than one rank (zero >= 3, dpc > 1; one rank is NO_SHARD), 16-bit training (`training.precision`: fp32
    has no MixedPrecision) and the base weights trained (a LoRA's frozen base keeps its own dtype)."""
    if name not in FSDP1_MIXED_STYLES or training.precision == "fp32" or not training.trains_base_weights:
        return np.zeros(np.shape(mega), dtype=bool)
    fsdp1 = fsdp1_units(strategy, name, mega, titan)
    return np.asarray(fsdp1 & (np.asarray(z) >= 3) & (np.asarray(dpc) > 1), dtype=bool)


def sharded_grad_bytes(grads: Any, master: Any, units: Any) -> Any:
    """Bytes a parameter of the sharded gradient: the fp32 master's where `units` (_cast_grad_to_param_dtype), else
    the profile's `grads`."""
    return np.where(units, master, grads)


def loss_phase_units(units: Any, w_layer: Any, g_layer: Any, gathered_layers: float, grad_layers: float,
                     root_grad: Any) -> Any:
    """Change to the gathered units' bytes (two layers, a layer's gradient and the root with its gradient) in the loss
    phase where `units`: one layer's 16-bit weights (the last, prefetched at the backward's start) and the root without
    its gradient (module docstring); `w_layer` / `g_layer` a layer's weight / gradient bytes, `gathered_layers` /
    `grad_layers` the layers the other phases hold, `root_grad` the root's gradient bytes."""
    change = (1.0 - gathered_layers) * w_layer - grad_layers * g_layer - root_grad
    return np.where(units, change, 0.0)
