"""Reverse questions: the answer fits, one more does not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.estimate.fit import max_layers, max_micro_batch, max_params, max_seq_len
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models.arch import ModelArch

LLAMA8 = ModelArch(name="llama-3.1-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                   ffn=14336, vocab=128256)
H100 = System(accelerator="h100-sxm", gpus=8, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 989.0},
              hbm_gb_s=3350.0, intra_node_gb_s=450.0)
TRAIN = Training(seq_len=8192, global_batch_seqs=512)
ST = Strategy(tp=2, dp=4, zero=1, recompute="selective")


def test_max_micro_batch_is_tight() -> None:
    r = max_micro_batch(LLAMA8, TRAIN, H100, ST)
    assert r.value >= 1 and r.estimate.fits
    assert not estimate_memory(LLAMA8, TRAIN, H100, replace(ST, micro_batch=r.value + 1), check=False).fits


def test_max_seq_len_is_tight() -> None:
    r = max_seq_len(LLAMA8, TRAIN, H100, ST, granularity=256)
    assert r.value % 256 == 0 and r.estimate.fits
    assert not estimate_memory(LLAMA8, replace(TRAIN, seq_len=r.value + 256), H100, ST, check=False).fits
    r_cp = max_seq_len(LLAMA8, TRAIN, H100, replace(ST, dp=2, cp=2), granularity=128)
    assert r_cp.value % 128 == 0 and r_cp.value > r.value  # CP splits the sequence



def test_max_seq_len_is_a_length_the_rules_take() -> None:
    """Under sequence parallelism the length divides by tp x cp (rule sp_divides_seq): TP 6 over granularity 128
    steps by 384 (the smallest length tried where nothing fits says so); without sequence parallelism by 128."""
    st = Strategy(tp=6, dp=1, zero=1, recompute="full")
    model = LLAMA8.with_(heads=48, kv_heads=6, ffn=14592)
    h6 = replace(H100, gpus=6)
    r = max_seq_len(model, TRAIN, h6, st, granularity=128)
    assert r.value > 0 and r.value % 384 == 0 and r.estimate.fits
    assert not estimate_memory(model, replace(TRAIN, seq_len=r.value + 384), h6, st, check=False).fits
    tiny = replace(h6, memory_gib=1.0)
    assert max_seq_len(model, TRAIN, tiny, st, granularity=128).smallest == 384
    assert max_seq_len(model, TRAIN, tiny, replace(st, sequence_parallel=False), granularity=128).smallest == 128


def test_max_layers_and_params() -> None:
    r = max_layers(LLAMA8, TRAIN, H100, ST)
    assert r.value > 32 and r.estimate.fits
    assert not estimate_memory(LLAMA8.with_(layers=r.value + 1), TRAIN, H100, ST).fits
    params, arch = max_params(LLAMA8, TRAIN, H100, ST)
    assert arch.layers == r.value and params == arch.params_total


def test_nothing_fits_returns_zero() -> None:
    tiny = replace(H100, memory_gib=1.0)
    assert max_micro_batch(LLAMA8, TRAIN, tiny, ST).value == 0
    assert max_seq_len(LLAMA8, TRAIN, tiny, ST).value == 0
    assert max_layers(LLAMA8, TRAIN, tiny, ST).value == 0
    assert max_params(LLAMA8, TRAIN, tiny, ST) == (0, None)


@pytest.mark.parametrize("memory_gib", [40.0, 80.0, 141.0])
def test_more_memory_never_less(memory_gib: float) -> None:
    small = max_micro_batch(LLAMA8, TRAIN, replace(H100, memory_gib=memory_gib), ST).value
    big = max_micro_batch(LLAMA8, TRAIN, replace(H100, memory_gib=memory_gib * 2), ST).value
    assert big >= small
