from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.batch import KEYS, evaluate_batch
from trainsizer.estimate.inputs import RECOMPUTE, Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import valid_mask
from trainsizer.models.shipped import load_preset

from .test_perf_common import b200_cluster, h100_cluster, llama8b, mixtral

GPUS = 64


def _grid(n: int, seed: int, moe: bool) -> Strategy:
    """Random strategies for a 64-GPU system; about half break a rule (GPU count, divisibility, ...)."""
    rng = np.random.default_rng(seed)
    tp = rng.choice([1, 2, 4, 8], n)
    pp = rng.choice([1, 2, 4], n)
    cp = rng.choice([1, 1, 2], n)
    dp = np.where(rng.random(n) < 0.85, np.maximum(GPUS // (tp * pp * cp), 1), rng.choice([3, 8], n))
    return Strategy(tp=tp, pp=pp, vpp=rng.choice([1, 1, 2], n), dp=dp, cp=cp,
                    ep=rng.choice([1, 2, 4, 8], n) if moe else np.ones(n, int),
                    zero=rng.choice([0, 1, 2, 3], n), shard_group=rng.choice([0, 0, 8], n),
                    micro_batch=rng.choice([1, 2, 4], n), recompute=rng.integers(0, 3, n),
                    offload=rng.choice([0, 0, 0, 1, 2], n), sequence_parallel=rng.choice([0, 1], n),
                    distributed_optimizer=rng.choice([0, 1], n))


def _one(st: Strategy, i: int) -> Strategy:
    return Strategy(tp=int(st.tp[i]), pp=int(st.pp[i]), vpp=int(st.vpp[i]), dp=int(st.dp[i]), cp=int(st.cp[i]),
                    ep=int(st.ep[i]), zero=int(st.zero[i]), shard_group=int(st.shard_group[i]),
                    micro_batch=int(st.micro_batch[i]), recompute=RECOMPUTE[int(st.recompute[i])],
                    offload=("none", "optimizer", "optimizer+params")[int(st.offload[i])],
                    sequence_parallel=bool(st.sequence_parallel[i]),
                    distributed_optimizer=bool(st.distributed_optimizer[i]), framework=st.framework)


CASES = [
    ("dense", llama8b(), Training(seq_len=4096, global_batch_seqs=256), "auto"),
    ("moe", mixtral(), Training(seq_len=4096, global_batch_seqs=256), "auto"),
    ("lora", llama8b(), Training(method="lora", lora_rank=16, seq_len=2048, global_batch_seqs=128), "hf"),
    ("qlora-megatron-core", llama8b(), Training(method="qlora", lora_rank=8, seq_len=2048,
                                                  global_batch_seqs=128), "megatron-core"),
    # FP8 per-tensor casts on Blackwell differ by style under auto (Transformer Engine's write no transpose)
    ("fp8-blackwell", llama8b(), Training(seq_len=4096, global_batch_seqs=256, precision="fp8",
                                          fp8_recipe="tensorwise"), "auto"),
    # Llama 4 under auto: the strategies that resolve to hf run every expert on every token, the others route
    # (framework.dense_all_split: the batch in two parts)
    ("llama4-auto", load_preset("llama-4-scout-17b-16e"), Training(method="full", seq_len=2048,
                                                                   global_batch_seqs=256), "auto"),
]
SYSTEMS = {"fp8-blackwell": b200_cluster}


@pytest.mark.parametrize("name, model, training, fw", CASES, ids=[c[0] for c in CASES])
def test_batch_agrees_with_the_scalar_estimators(name, model, training, fw) -> None:
    system = SYSTEMS.get(name, h100_cluster)(GPUS)
    st = _grid(120, seed=len(name), moe=model.is_moe).with_(framework=fw)
    out = evaluate_batch(model, training, system, st, chunk=37, threads=2)  # odd chunks, threads: same answer
    assert set(KEYS) <= set(out) and all(v.shape == (120,) for v in out.values())
    assert 10 < out["valid"].sum() < 120  # the grid holds both kinds
    np.testing.assert_array_equal(out["valid"], valid_mask(model, training, system, st))
    for i in range(120):
        one = _one(st, i)
        if not out["valid"][i]:
            assert not out["fits"][i] and np.isnan(out["step_s"][i]) and np.isnan(out["mem_bytes"][i])
            with pytest.raises(StrategyError):
                estimate_memory(model, training, system, one)
            with pytest.raises(StrategyError):
                estimate_time(model, training, system, one)
            continue
        mem = estimate_memory(model, training, system, one)
        tim = estimate_time(model, training, system, one)
        assert out["mem_bytes"][i] == pytest.approx(mem.per_gpu_bytes, rel=1e-12)
        assert bool(out["fits"][i]) == mem.fits
        for key in ("step_s", "tokens_per_s", "mfu", "hfu"):
            assert out[key][i] == pytest.approx(getattr(tim, key), rel=1e-12), key
        for key, val in tim.breakdown_s.items():
            assert out[key][i] == pytest.approx(val, rel=1e-12, abs=1e-300), key


def test_chunking_and_threads_do_not_change_answers() -> None:
    model, training, system = mixtral(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster(GPUS)
    st = _grid(3000, seed=7, moe=True)
    a = evaluate_batch(model, training, system, st, threads=1, chunk=10**6)
    b = evaluate_batch(model, training, system, st, threads=2, chunk=257)
    for key in KEYS:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_shapes_follow_broadcasting() -> None:
    out = evaluate_batch(llama8b(), Training(), h100_cluster(GPUS),
                         Strategy(tp=np.array([[1, 2], [4, 8]]), dp=np.array([[64], [16]])))
    assert out["step_s"].shape == (2, 2)
    assert out["valid"].tolist() == [[True, False], [True, False]]
    empty = evaluate_batch(llama8b(), Training(), h100_cluster(GPUS), Strategy(tp=np.array([], int)))
    assert empty["valid"].shape == (0,)


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.integers(-3, 70), min_size=9, max_size=9), hs.integers(-1, 5), hs.integers(-1, 4))
def test_nonsense_strategies_are_masked_not_raised(vals, rec, off) -> None:
    tp, pp, vpp, dp, cp, ep, zero, sg, mb = vals
    st = Strategy(tp=np.array([tp, 8]), pp=np.array([pp, 1]), vpp=np.array([vpp, 1]), dp=np.array([dp, 8]),
                  cp=np.array([cp, 1]), ep=np.array([ep, 8]), zero=np.array([zero, 1]),
                  shard_group=np.array([sg, 0]), micro_batch=np.array([mb, 1]), recompute=np.array([rec, 1]),
                  offload=np.array([off, 0]))
    out = evaluate_batch(mixtral(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster(GPUS), st)
    assert out["valid"][1]  # the sane neighbour is unaffected
    assert np.isfinite(out["step_s"][1]) and out["step_s"][1] > 0
    if not out["valid"][0]:
        assert np.isnan(out["step_s"][0]) and not out["fits"][0]
    else:
        assert np.isfinite(out["step_s"][0]) and np.isfinite(out["mem_bytes"][0])


def test_bad_input_that_is_not_the_strategy_still_raises() -> None:
    with pytest.raises(SpecError):
        evaluate_batch(llama8b(), Training(), h100_cluster(GPUS), Strategy(dp=np.array([64]), recompute="sometimes"))
    with pytest.raises(SpecError):
        evaluate_batch(llama8b(), Training(), h100_cluster(GPUS), Strategy(dp=np.array([64]), framework="jax"))


def test_stated_end_stage_layers_one_implementation_for_batch_and_scalar() -> None:
    """strategy.pp_last_stage_layers moves layers to the middle ranks in both paths alike: 32 layers at PP 4 with
    5 on the last rank leave 9 a middle rank. Llama 3 8B's LM head (128,256 x 4,096, over two layers of GEMM) and
    loss sit on the last rank, so 9 layers pace the step where 8 + the head did: faster than the even split."""
    model, training = llama8b(), Training(seq_len=4096, global_batch_seqs=256)
    system = h100_cluster(GPUS)
    tp, mb = np.array([1, 2, 4, 8, 2]), np.array([1, 1, 2, 1, 2])
    st = Strategy(tp=tp, pp=np.full(5, 4), dp=GPUS // (4 * tp), micro_batch=mb, distributed_optimizer=np.ones(5),
                  framework="megatron-core", pp_last_stage_layers=5)
    out = evaluate_batch(model, training, system, st, chunk=2, threads=1)
    assert out["valid"].all()
    for i in range(5):
        one = Strategy(tp=int(tp[i]), pp=4, dp=GPUS // (4 * int(tp[i])), micro_batch=int(mb[i]),
                       distributed_optimizer=True, framework="megatron-core", pp_last_stage_layers=5)
        assert out["mem_bytes"][i] == pytest.approx(estimate_memory(model, training, system, one).per_gpu_bytes,
                                                    rel=1e-12)
        assert out["step_s"][i] == pytest.approx(estimate_time(model, training, system, one).step_s, rel=1e-12)
        even = estimate_time(model, training, system, one.with_(pp_last_stage_layers=None)).step_s
        assert out["step_s"][i] < even
