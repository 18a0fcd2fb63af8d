"""LoRA adapters inside a torch.compile'd layer (perf_constants.yaml lora.compiled): Inductor fuses the scaling and the
add into the kernel that consumes the linear's output and the input-gradient sum into one kernel, so a compiled
adapter streams less than an eager one; the summed output of the MLP input projections is still written (their
activation's backward reads it); a style with its own fused kernels (Megatron-Core) keeps its adapters eager whatever
torch_compile says, and an implementation without compiled counts (AutoModel's Triton kernels) keeps its own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate import step_time
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import MLP_INPUT_LINEARS, lora_adapted_widths
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import h100_cluster, llama8b

ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TOKENS = 2 * 2048
LAYERS = 32


def _training(impl: str = "automodel", targets=ALL, dropout: float = 0.0) -> Training:
    return Training(method="lora", seq_len=2048, global_batch_seqs=2, lora_rank=16, lora_targets=targets,
                    lora_impl=impl, lora_dropout=dropout)


def _adapters(training: Training, compiled: bool, framework: str = "torchtitan", recompute: str = "none") -> tuple:
    """(seconds of one layer's adapters per micro-batch, the job's rates), read through a spy on
    step_time._lora_adapters."""
    seen = []
    real = step_time._lora_adapters

    def spy(x, **kw):  # the training step's call; forward_compute's eval-mode one (eval_forward) not recorded
        v = real(x, **kw)
        if not kw:
            seen.append((float(v), x.r))
        return v

    st_ = Strategy(dp=1, micro_batch=2, recompute=recompute, framework=framework, torch_compile=compiled)
    step_time._lora_adapters = spy
    try:
        estimate_time(llama8b(), training, h100_cluster(1), st_)
    finally:
        step_time._lora_adapters = real
    return seen[0]


def test_a_compiled_automodel_adapter_drops_the_add_and_the_gradient_sum():
    eager, rates = _adapters(_training(), compiled=False)
    compiled, _ = _adapters(_training(), compiled=True)
    w_in, w_out, _, _, n = lora_adapted_widths(llama8b(), _training())
    mlp_out = lora_adapted_widths(llama8b(), _training(), only=MLP_INPUT_LINEARS)[1]
    # forward: the add's 3 d_out become the consumer's 1 read (-2 d_out), the MLP inputs' sums written (+1 each);
    # backward: the gradient add's 3 d_in become one read (-2 d_in); one kernel fewer each way per adapted linear
    saved_elems = TOKENS * (2 * w_out + 2 * w_in - mlp_out)
    saved_s = saved_elems * 2 / rates.hbm_bytes_s + 2 * n * rates.kernel_fixed_s
    assert eager - compiled == pytest.approx(saved_s, rel=1e-6)


def test_a_compiled_peft_adapter_also_drops_its_output_wide_scaling():
    auto = [_adapters(_training("automodel"), c)[0] for c in (False, True)]
    peft = [_adapters(_training("peft"), c)[0] for c in (False, True)]
    assert peft[1] < peft[0]
    assert peft[0] - peft[1] > auto[0] - auto[1]  # peft's d_out-wide scaling (2 d_out) is fused away too


def test_full_recompute_runs_the_compiled_forward_again():
    once = _adapters(_training(), compiled=True)[0]
    again = _adapters(_training(), compiled=True, recompute="full")[0]
    assert again > once


@pytest.mark.parametrize("framework", ["megatron-core", "megatron"])
def test_styles_with_their_own_fused_kernels_keep_the_adapters_eager(framework):
    assert _adapters(_training("peft"), True, framework)[0] == _adapters(_training("peft"), False, framework)[0]


def test_an_implementation_without_compiled_counts_keeps_its_own():
    tr = _training("automodel-triton")
    assert _adapters(tr, True)[0] == _adapters(tr, False)[0]


@settings(max_examples=25, deadline=None)
@given(impl=st.sampled_from(["peft", "automodel"]), dropout=st.sampled_from([0.0, 0.1]),
       targets=st.lists(st.sampled_from(ALL), min_size=1, max_size=7, unique=True))
def test_compiling_never_makes_the_adapters_slower(impl, dropout, targets):
    tr = _training(impl, tuple(targets), dropout)
    assert _adapters(tr, True)[0] <= _adapters(tr, False)[0]
