"""Checkpoint saves inside a run's wall-clock (job `checkpoint_saves`, Training.save_count / save_sharded).

Hugging Face's Trainer saves inside its training loop (save_strategy epoch / steps: Trainer._inner_training_loop
calls _maybe_log_save_evaluate, transformers 4.40), so the train_runtime that train_samples_per_second divides holds
every save. Trainer._save_checkpoint writes the model (save_model) and, unless save_only_model, the optimizer and
scheduler (_save_optimizer_and_scheduler: optimizer.pt): the training state without gradients. Its bytes are the
model-state bytes the memory estimate holds for each trainable parameter, weights + master copy + optimizer states
(estimate.model_states.state_bytes; a LoRA / QLoRA job's adapters only: PEFT's save_pretrained writes the adapter
state dict). A save takes bytes / storage bandwidth (estimate.reliability.checkpoint_write_s, the goodput model's
write time): one node's bandwidth where one process writes the whole state, every node's where each writes its
shard. The step does not overlap a save (the Trainer saves synchronously between steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.framework import auto_index_of, memory_profile
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.model_states import lora_trainable_params, state_bytes
from trainsizer.estimate.reliability import checkpoint_write_s
from trainsizer.models.arch import ModelArch


def checkpoint_save_bytes(model: ModelArch, training: Training, strategy: Strategy) -> float:
    """Bytes one save writes: every trainable parameter's weights, master copy and optimizer states under the job's
    framework profile (hf / megatron; "auto" resolved per strategy as the memory estimate does)."""
    profile = memory_profile(getattr(strategy, "framework", "auto") or "auto")
    if profile is None:
        pretraining = training.method in ("pretrain", "cpt")
        profile = "megatron" if bool(np.asarray(auto_index_of(strategy, pretraining) == 0).reshape(-1)[0]) else "hf"
    sb = state_bytes(training, model, profile)
    params = float(model.params_total) if training.trains_base_weights else lora_trainable_params(model, training)
    return params * (sb.weights + sb.master + sb.optimizer)


def save_s(model: ModelArch, training: Training, system: System, strategy: Strategy, **_: Any) -> float:
    """Seconds of one save (0 without saves): its bytes at the storage bandwidth of the nodes that write (all the
    job's nodes when sharded, else one)."""
    if training.save_count <= 0:
        return 0.0
    nodes = system.nodes if training.save_sharded else 1
    return float(checkpoint_write_s(checkpoint_save_bytes(model, training, strategy), nodes))


def checkpoint_saves_s(model: ModelArch, training: Training, system: System, strategy: Strategy, **_: Any) -> float:
    """Seconds of the run's checkpoint saves (Training.save_count of save_s each; 0 without saves)."""
    if training.save_count <= 0:
        return 0.0
    return training.save_count * save_s(model, training, system, strategy)
