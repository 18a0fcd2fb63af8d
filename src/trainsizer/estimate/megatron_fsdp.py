"""Megatron-FSDP's wrapper on the host and its parameter-sync buckets (docs/known-gaps.md 306 (a), (b)).

Megatron-Core's `use_megatron_fsdp` wraps the model in MegatronFSDP (megatron/core/distributed/fsdp/src/megatron_fsdp/
megatron_fsdp.py and param_and_grad_buffer.py, read at NVIDIA/Megatron-LM 0d8e0714, the NeMo 25.11 pin). A job writes
it as fsdp full on the megatron-core style (data_parallel_sharding_strategy optim_grads_params, whose FSDP unit is
Megatron-Core's TransformerLayer: mcore_fsdp_adapter.py `fsdp_unit_modules = [TransformerLayer]`).

Host: every unit runs, each micro-batch, a forward pre-hook that all-gathers the next bucket of the prefetch window
and points its parameters' `.data` at the gathered bucket, a forward hook that frees the bucket, a hook on its output
that re-gathers it before its backward, and an autograd Function on its input whose backward frees the bucket again,
copies the norms' gradients into the main-gradient bucket and reduce-scatters it on a side stream. `unit_calls`
counts the calls into torch / CUDA those hooks make (perf_constants.yaml megatron_fsdp_hooks), charged as DeepSpeed
ZeRO-3's hooks are, at the launch-bound eager op (step_time._megatron_fsdp_host_s).

Memory: the optimizer step ends with start_param_sync (distrib_optimizer.py step_with_ready_grads under
use_megatron_fsdp), which all-gathers the model's first parameter's bucket and prefetches the following buckets into
unsharded temporary buckets that stay allocated into the next forward (`param_sync_bucket_params`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def layer_tensors(qk_norm: bool, norm_tensors: float, bias_tensors: float, is_moe: bool, local_experts: float,
                  shared_expert: bool) -> tuple[float, float]:
    """(parameter tensors, tensors whose gradient is copied into the main-gradient bucket) of one Megatron-Core
    TransformerLayer as its Transformer Engine spec builds it (gpt_layer_specs.py): linear_qkv and linear_fc1 are
    TELayerNormColumnParallelLinear (a weight and the fused norm's `norm_tensors`), linear_proj and linear_fc2
    TERowParallelLinear, q / k norms where the model has them, `bias_tensors` biases; an MoE layer's router weight, its
    own pre-MLP norm (TENorm), two TEGroupedLinear weights per local expert and the shared expert's two linears. The
    linears' weight gradients go into the main-gradient bucket from Transformer Engine's fused wgrad GEMM
    (get_main_grad, overwrite_main_grad); the norms', biases' and router's come back as .grad and are copied
    (_grad_acc)."""
    norms = norm_tensors * (2.0 + (2.0 if qk_norm else 0.0))
    attn = 2.0
    if is_moe:
        mlp = 1.0 + 2.0 * local_experts + (2.0 if shared_expert else 0.0)  # its pre-MLP norm one of `norms`
    else:
        mlp = 2.0
    router = 1.0 if is_moe else 0.0
    return attn + mlp + norms + bias_tensors, norms + bias_tensors + router


def unit_calls(c: dict[str, Any], tensors: Any, copied: Any, groups: Any, recompute_share: Any) -> Any:
    """Host calls of one unit a micro-batch (perf_constants.yaml megatron_fsdp_hooks `c`): the unit's own (the
    Function, the output hook's view and registration), each bucket group's gather, release, gradient bucket and
    reduce-scatter (`groups`: one, two on an MoE layer, whose experts' parameters gather over the expert-DP group),
    each parameter tensor's views into the gathered bucket (forward and backward) and into the gradient bucket,
    the copied gradients (`copied`), and a recomputed forward's hooks (`recompute_share` of the layer, whose
    gather and release are skipped in the PRE_BACKWARD state)."""
    fwd, bwd = c["unit_calls"]["forward"], c["unit_calls"]["backward"]
    return (fwd + bwd + groups * (c["group_calls"]["forward"] + c["group_calls"]["backward"])
            + tensors * (c["tensor_calls"]["forward"] + c["tensor_calls"]["backward"])
            + copied * c["copied_grad_calls"] + recompute_share * c["recompute_calls"])


def layer_modules(c: dict[str, Any], is_moe: bool, shared_expert: bool) -> tuple[float, float]:
    """(modules a Megatron-Core TransformerLayer calls a forward, those called with an input that requires grad) as
    perf_constants.yaml megatron_fsdp_module_hooks counts them (the TE spec, gpt_layer_specs.py at 0d8e0714)."""
    n = float(c["layer_modules"])
    if is_moe:
        n += float(c["moe_extra_modules"]) + (float(c["shared_expert_modules"]) if shared_expert else 0.0)
    return n, n - float(c["no_input_grad_modules"])


def module_calls(c: dict[str, Any], modules: Any, with_grad: Any, tensors: Any, copied: Any,
                 recompute_share: Any) -> Any:
    """Host calls of one layer a micro-batch under Megatron-FSDP's optim / optim_grads, whose hooks sit on every
    module (perf_constants.yaml megatron_fsdp_module_hooks `c`): each module's two forward pre-hooks, the Function
    applied to the inputs of the `with_grad` modules and its backward (_post_backward), every parameter tensor's main
    gradient view, the `copied` gradients' copy, and a recomputed forward's pre-hooks and Functions again
    (`recompute_share` of the layer)."""
    calls = c["module_calls"]
    forward = calls["pre_hooks"] * modules + calls["function"] * with_grad
    return (forward * (1.0 + recompute_share) + calls["backward"] * with_grad + tensors * c["tensor_calls"]
            + copied * c["copied_grad_calls"])


def param_sync_bucket_params(first_bucket: Any, layer: Any, layers: int, floor_params: float) -> Any:
    """Parameters (per GPU) start_param_sync leaves gathered after the optimizer step: the first parameter's bucket
    (`first_bucket`: the input embedding's, a bucket of its own as shared_embedding where tied, else with the final
    norm and the output layer: _get_parameter_groups) and the layer buckets its prefetch adds until they reach
    suggested_AG_prefetch_size = max(floor, 2 x a unit's mean parameters) // 2 (MegatronFSDP
    _init_fsdp_param_and_grad_buffer, `floor_params` the 1e9 floor; AllGatherPipeline.all_gather_params adds a bucket
    while the window is below it), `layer` parameters a unit, at most `layers`."""
    layer = np.maximum(np.asarray(layer, dtype=float), 1.0)
    window = np.maximum(floor_params, 2.0 * layer) // 2.0
    n = np.minimum(np.ceil(window / layer), float(layers))
    return first_bucket + n * layer


def embedding_bucket_params(vocab: int, hidden: int, tied: bool, tp: Any) -> Any:
    """The input embedding's bucket per TP rank (VocabParallelEmbedding): its own where tied, with the untied output
    layer otherwise (the final norm's few parameters left out)."""
    return float(vocab) * float(hidden) * (1.0 if tied else 2.0) / np.asarray(tp, dtype=float)

