"""torchtune 0.1's QLoRA init on the caching allocator (estimate.nf4_init, known-gaps 233): torchao 0.1's unchunked
to_nf4 leaves cached segments that set the reserved peak, under strategy.nf4_quantize_unchunked only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.allocator_pool import Pool
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.nf4_init import NEAREST_CODES, init_reserved_bytes, to_nf4
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b

GIB = 1 << 30
ALL_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LLAMA2_7B = ((4096 * 4096,) * 4 + (11008 * 4096,) * 3, 32, (2 * 32000 * 4096,) * 2)


def test_one_quantisation_reserves_the_nearest_code_pair():
    """A single to_nf4 on a fresh pool reserves at least the two (numel, 16) bf16 tensors quantize_tensor_nearest
    holds across its abs, and keeps only the packed half-byte data allocated."""
    n = 11008 * 4096
    pool = Pool()
    data = to_nf4(pool, n)
    assert pool.peak_reserved >= 2 * NEAREST_CODES * 2 * n
    assert pool.blocks[data][2] == n // 2
    assert sum(b[2] for b in pool.blocks.values() if not b[3]) == n // 2


def test_the_persistent_data_fragment_the_cached_segments():
    """Llama 2 7B: the whole init reserves more than the resident model plus one weight's working set (each layer's
    NF4 data is cut from the cached transient segments, so later quantisations cudaMalloc new ones); the checkpoint's
    bf16 cast does not move the peak (the clones set it)."""
    layer, layers, rest = LLAMA2_7B
    resident = layers * sum(n // 2 for n in layer) + sum(rest)
    working = max(layer) * (2 + 2 + 2 * NEAREST_CODES * 2)
    peak = init_reserved_bytes(layer, layers, rest)
    assert peak > resident + working + GIB
    assert init_reserved_bytes(layer, layers, rest, False) == peak


@settings(max_examples=8, deadline=None)
@given(hs.integers(1, 12))
def test_more_layers_never_reserve_less(layers):
    layer, _, rest = LLAMA2_7B
    assert init_reserved_bytes(layer, layers + 1, rest) >= init_reserved_bytes(layer, layers, rest)


def test_the_floor_applies_to_torchtune_qlora_when_stated():
    """Unset (torchao >= 0.2's chunked to_nf4): no init floor, the reserved peak as before; stated under torchtune
    QLoRA: the reserved peak is the init's, above the step's, the allocated peak unchanged; LoRA has no NF4 base."""
    m, s = llama8b(), h100_cluster(1)
    tr = Training(method="qlora", seq_len=512, global_batch_seqs=2, lora_rank=8, lora_targets=ALL_LINEARS)
    st = Strategy(dp=1, micro_batch=2, recompute="full", framework="torchtune")
    base = estimate_memory(m, tr, s, st)
    on = estimate_memory(m, tr, s, st.with_(nf4_quantize_unchunked=True))
    assert base.init_reserved_bytes == 0.0
    assert on.per_gpu_bytes == base.per_gpu_bytes
    assert on.reserved_peak_bytes == on.init_reserved_bytes > base.reserved_peak_bytes
    lora = Training(method="lora", seq_len=512, global_batch_seqs=2, lora_rank=8, lora_targets=ALL_LINEARS)
    assert estimate_memory(m, lora, s, st.with_(nf4_quantize_unchunked=True)).init_reserved_bytes == 0.0


def test_the_option_is_torchtunes_only():
    m, s = llama8b(), h100_cluster(1)
    tr = Training(method="qlora", seq_len=512, global_batch_seqs=2, lora_rank=8)
    with pytest.raises(StrategyError) as err:
        estimate_memory(m, tr, s, Strategy(dp=1, micro_batch=2, framework="hf", nf4_quantize_unchunked=True))
    assert err.value.rule == "nf4_quantize_unchunked_framework" and "torchtune" in str(err.value)
    job = {"model": "llama-3.1-8b", "method": "qlora", "data": {"tokens": 1e6}, "seq_len": 512,
           "global_batch": {"sequences": 2}, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": 2, "framework": "torchtune", "nf4_quantize_unchunked": True}}
    assert resolve_job(job, load_catalog()).strategy.nf4_quantize_unchunked is True
    with pytest.raises(SpecError, match="nf4_quantize_unchunked"):
        resolve_job({**job, "strategy": {**job["strategy"], "nf4_quantize_unchunked": "sometimes"}}, load_catalog())
