"""Evaluation passes inside a run's wall-clock (job `evaluation`, Training.eval_*).

Hugging Face's Trainer evaluates inside its training loop (eval_strategy epoch / steps: Trainer._inner_training_loop
calls _maybe_log_save_evaluate, transformers 4.40), so the train_runtime that train_samples_per_second divides holds
every evaluation pass. A pass is forward only: Trainer.evaluate runs prediction_step under torch.no_grad (no backward,
no optimizer step, no recompute: gradient checkpointing re-runs a layer only in the backward) and, with no
compute_metrics, prediction_loss_only (the loss, no gathered logits). Its sequences are split over the data-parallel
ranks in micro-batches of per_device_eval_batch_size (accelerate's prepared DataLoader, even_batches: every rank
runs ceil(batches / dp)), each the forward the step's time model already has: step_time_arrays' `forward_compute`
(decoder layers with their LoRA adapters run once in eval mode, no dropout, and the LM head with the loss, on the
slowest pipeline stage; docs/known-gaps.md 298 (b)). Under pipelining the pass fills the
pipeline once (p - 1 more stage forwards). FSDP / ZeRO-3's forward all-gathers are taken as hidden under the forward
they prefetch for (the step's own prefetch; docs/known-gaps.md 171 (b)).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models.arch import ModelArch


def _one(value: Any) -> float:
    return float(np.asarray(value).reshape(-1)[0])


def eval_pass_s(model: ModelArch, training: Training, system: System, strategy: Strategy, **style: Any) -> float:
    """Seconds of one evaluation pass on the busiest data-parallel rank (0 without evaluation): ceil(ceil(samples /
    micro_batch) / dp) forward micro-batches, plus pp - 1 to fill the pipeline. `style`: step_time_arrays' keyword
    arguments (calibration, framework_style, constants)."""
    if training.eval_samples <= 0:
        return 0.0
    b = training.eval_micro_batch or int(_one(strategy.micro_batch))
    dp = max(int(round(_one(strategy.dp))), 1)
    per_rank = math.ceil(math.ceil(training.eval_samples / b) / dp)
    # one step of `per_rank` micro-batches of b on each rank: its forward_compute is the pass's forwards
    batch = dataclasses.replace(training, global_batch_seqs=b * dp * per_rank)
    out = step_time_arrays(model, batch, system, dataclasses.replace(strategy, micro_batch=b, local_batch=None), **style)
    forwards = _one(out["forward_compute"])
    fill = (_one(strategy.pp) - 1.0) * forwards / per_rank
    return forwards + fill


def evaluation_s(model: ModelArch, training: Training, system: System, strategy: Strategy, **style: Any) -> float:
    """Seconds of the run's evaluation passes (Training.eval_passes of eval_pass_s each; 0 without evaluation)."""
    if training.eval_passes <= 0:
        return 0.0
    return training.eval_passes * eval_pass_s(model, training, system, strategy, **style)
