"""Where a rank holds its FSDP units' unsharded gradients across a step's micro-batches, and in which dtype
(docs/known-gaps.md 250 (a)).

torch FSDP1 (FullyShardedDataParallel) under `no_sync()` skips the reduce-scatter in each unit's post-backward hook
and keeps the unit's gradient unsharded in `flat_param.grad`: "FSDP will accumulate the full model gradients (instead
of gradient shards) until the eventual sync" (torch/distributed/fsdp/fully_sharded_data_parallel.py no_sync;
_runtime_utils.py _post_backward_hook returns after _post_backward_reshard when not state._sync_gradients;
_flat_param.py prepare_gradient_for_backward keeps a gradient of _padded_unsharded_size; the same from torch 2.1 to
2.13). The gradient is autograd's against the unsharded flat parameter, so it is in the compute dtype (MixedPrecision
param_dtype, else the parameters' own dtype), not a reduce dtype.

The HF Trainer runs every micro-batch of a step under `accelerator.accumulate(model)` (transformers 4.44.2
trainer.py _inner_training_loop), and accelerate's accumulate enters `no_sync(model)` on every micro-batch but a
step's last unless GradientAccumulationPlugin's sync_each_batch is set (accelerate 0.33.0 accelerator.py accumulate,
sync_each_batch since v0.29, PR #2531); its no_sync is the model's own, i.e. FSDP1's (transformers 4.46+ call
accelerator.no_sync directly for the same micro-batches). FSDP2 modules have no `no_sync`: accelerate ran them synced
until v1.11.0 (PR #3762, 2025-09-07, set_requires_gradient_sync(False)), so the style's default is FSDP1's only; an
FSDP2 job on a later accelerate states strategy.fsdp_no_sync.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate import pipeline
from trainsizer.estimate.framework import AUTO_CHOICES, style_option

# the style keys (perf_constants.yaml frameworks:): the style's loop skips the gradient sync on all but a step's last
# micro-batch under FSDP1; the style's FSDP is FSDP1 where a job states no fsdp_version
_LOOP_KEY = "fsdp1_accumulate_no_sync"
_FSDP1_KEY = "fsdp1_grad_predivide"


def _style(name: str, mega: Any, titan: Any, key: str) -> np.ndarray:
    """A boolean style option per strategy; "auto" per strategy by what it resolved to (memory._profiles)."""
    if name != "auto":
        return np.broadcast_to(np.asarray(style_option(name, key)), np.shape(mega))
    mc, tt, hf = (style_option(n, key) for n in AUTO_CHOICES)
    return np.where(mega, mc, np.where(titan, tt, hf))


def fsdp1_units(strategy, name: str, mega: Any, titan: Any) -> np.ndarray:
    """Where the job shards with torch FSDP1: fsdp full / hybrid and fsdp_version 1, or no version on a style whose
    FSDP is FSDP1 (hf, fsdp: the styles with fsdp1_grad_predivide, as step_time._fsdp_version_option resolves it)."""
    if getattr(strategy, "fsdp", None) not in ("full", "hybrid"):
        return np.zeros(np.shape(mega), dtype=bool)
    version = getattr(strategy, "fsdp_version", None)
    if version is not None:
        return np.full(np.shape(mega), int(version) == 1)
    return _style(name, mega, titan, _FSDP1_KEY)


def no_sync_hold(strategy, name: str, mega: Any, titan: Any, z: Any, n_micro: Any) -> tuple[np.ndarray, np.ndarray]:
    """(where a rank holds its units' unsharded gradients across the step's micro-batches, where that hold is FSDP1's)
    per strategy. Held with more than one micro-batch a step where the model is fully sharded (zero >= 3) and
    strategy.fsdp_no_sync is true, fsdp_reshard is step (FSDP2), or fsdp_no_sync is unstated on a style whose loop
    runs FSDP1's no_sync (the hf style: this module's docstring); fsdp_no_sync false = synced every micro-batch
    (accelerate's sync_each_batch)."""
    fsdp1 = fsdp1_units(strategy, name, mega, titan)
    stated = getattr(strategy, "fsdp_no_sync", None)
    on = bool(stated) | (getattr(strategy, "fsdp_reshard", None) == "step")
    if stated is None:
        on = on | (fsdp1 & _style(name, mega, titan, _LOOP_KEY))
    hold = np.asarray(on & (np.asarray(z) >= 3) & (np.asarray(n_micro) > 1), dtype=bool)
    return hold, hold & fsdp1


def _default_reason(strategy, name: str, fsdp1: bool) -> str:
    """The i18n key of where an unstated fsdp_no_sync's answer comes from (`assumed`)."""
    if getattr(strategy, "fsdp_reshard", None) == "step":
        return "fsdp_no_sync_default_reshard_step"
    if style_option(name, _LOOP_KEY):  # the HF Trainer's loop: FSDP1 held, FSDP2 synced by accelerate before v1.11
        if not fsdp1:
            return "fsdp_no_sync_default_fsdp2_accelerate"
        return "fsdp_no_sync_default_auto" if getattr(strategy, "framework", None) == "auto" else "fsdp_no_sync_default_hf"
    return "fsdp_no_sync_default_synced"


def assumed(strategy, name: str, global_batch_seqs: float) -> dict[str, Any]:
    """{"fsdp_no_sync": {"requested" (None = the stack's), "assumed" (unsharded gradients held across the step's
    micro-batches), "fsdp_version", "reason" (the i18n key of the unstated default's origin, None where stated)}} for
    one scalar strategy on resolved framework `name` that shards fully with torch FSDP (fsdp full / hybrid, or a
    stated fsdp_no_sync / fsdp_reshard step on zero 3) over more than one micro-batch a step, as the memory estimate
    resolves it (`no_sync_hold`); {} elsewhere (one micro-batch a step, DeepSpeed's engine, no full sharding)."""
    stated = getattr(strategy, "fsdp_no_sync", None)
    fsdp = getattr(strategy, "fsdp", None) in ("full", "hybrid")
    reshard_step = getattr(strategy, "fsdp_reshard", None) == "step"
    n_micro = float(pipeline.micro_batches(global_batch_seqs, strategy.dp, strategy.micro_batch))
    if strategy.zero < 3 or n_micro <= 1.0 or not (fsdp or stated is not None or reshard_step):
        return {}
    off = np.zeros((), dtype=bool)
    hold, fsdp1 = no_sync_hold(strategy, name, off, off, strategy.zero, n_micro)
    version = (1 if bool(fsdp1_units(strategy, name, off, off)) else 2) if fsdp else None  # None: DeepSpeed's engine
    reason = None if stated is not None else _default_reason(strategy, name, version == 1)
    return {"fsdp_no_sync": {"requested": stated, "assumed": bool(hold), "fsdp_version": version, "reason": reason}}
