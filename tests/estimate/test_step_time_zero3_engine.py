"""DeepSpeed's ZeRO-3 engine under a stack that runs either engine (the hf style): module-wise gathers in prefetch
buckets and the re-gather past stage3_max_reuse_distance (step_time._deepspeed_engine_options,
_deepspeed_gathers_per_layer, _zero3_regathered_share)."""

from __future__ import annotations

import io
from typing import get_args

import pytest
from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import Calibration, load_constants, rates
from trainsizer.estimate.framework import deepspeed_zero3_buckets
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import deepspeed_zero3_kept_params
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.evaluate import evaluate
from trainsizer.names import FSDP_MODES, ZERO3_BUCKET_SIZES
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job
from trainsizer.spec.job import Fsdp, Zero3BucketSizes

from .test_perf_common import gpt, h100_cluster, llama8b

CAL = Calibration(busbw_intra_gb_s=360.0, busbw_inter_gb_s=80.0)  # 10 GB/s NIC rate per GPU


@pytest.fixture(autouse=True)
def _no_launch_wait(monkeypatch):
    """These tests count the schedule's own terms: the collectives' wait behind the running GEMM (known-gaps 144) is
    left out here; test_collective_launch_wait covers it."""
    monkeypatch.setattr(step_time, "_collective_launch_wait", lambda x, n_coll, layer_fwd_s: 0.0 * n_coll)


def _hf(model, fsdp: str, recompute: str = "selective", framework: str = "hf", buckets: str | None = None):
    st = Strategy(tp=1, dp=64, zero=3, fsdp=fsdp, micro_batch=2, framework=framework, recompute=recompute,
                  zero3_bucket_sizes=buckets)
    return estimate_time(model, Training(seq_len=4096, global_batch_seqs=256), h100_cluster(), st, CAL)


def _copies(m, layer_passes: float) -> float:
    """Seconds a micro-batch of DeepSpeed's reduce-stream passes over `m`'s bf16 gradients (step_time.
    _deepspeed_grad_copies): `layer_passes` reads and writes an element of the decoder's, 2 (the in-place pre-divide
    alone) of the input embedding and LM head, larger than the reduce bucket in these tests."""
    emb = 2 * m.vocab * m.hidden
    return 2.0 * (layer_passes * (m.params_total - emb) + 2.0 * emb) / rates(h100_cluster(), "bf16").hbm_bytes_s


def _predivide(m) -> float:
    """Seconds a micro-batch of torch FSDP1's in-place gradient pre-divide over `m`'s bf16 gradients (read + write,
    step_time._fsdp1_predivide_s), in the reduce-scatter's chain like DeepSpeed's copies."""
    return 2.0 * 2.0 * m.params_total / rates(h100_cluster(), "bf16").hbm_bytes_s


def _exposed(e, coll_s: float, ag_passes: float, calls: int, embedding_share: float = 0.0,
             copies_s: float = 0.0) -> float:
    """The prefetched schedule's exposed seconds a step for `calls` collectives a pass (as test_step_time's FSDP
    test): 64 ranks over 8 nodes pay 63 network latencies a collective. On DeepSpeed's engine (`embedding_share`, the
    input embedding's share of the parameters, > 0) a micro-batch's first fetch is the embedding's and its gradient's
    reduce-scatter, one latency, is exposed at its end (step_time._deepspeed_micro_batch_edges), and its reduce
    stream's gradient copies (`copies_s`) join the collectives the prefetch hides."""
    k = load_constants()
    z3_mb = (ag_passes + 1.0) * coll_s + (ag_passes + 1.0) * (calls - 1) * 63 * 5e-6 + copies_s
    micro = 256 // (64 * 2)
    compute_mb = e.breakdown_s["compute"] / micro
    edges = 0.0
    if embedding_share > 0.0:
        edges = max(embedding_share * coll_s - coll_s / calls, 0.0) + embedding_share * coll_s + 63 * 5e-6
    exposed = max(z3_mb - compute_mb, 0.0) + coll_s / calls + edges
    exposed += k.overlap_interference * max(z3_mb - exposed, 0.0)
    return micro * exposed


def test_deepspeed_gathers_a_llama_layer_in_three_prefetch_buckets():
    m = llama8b()
    e = _hf(m, "none", buckets="deepspeed")  # the config leaves the buckets out: DeepSpeed's 5e7
    coll_s = 63 / 64 * m.params_total * 2 / 80e9 + 63 * 5e-6
    # q 16.8M + k 4.2M + v 4.2M + o 16.8M = 42M < 5e7, closed by gate (58.7M); up; down: 3 all-gathers a layer, 32
    # layers; no re-gather without full recompute
    emb = m.vocab * m.hidden / m.params_total
    # reduce_bucket_size 5e8 holds two layers' gradients: each bucket copied in, interleaved and pre-divided
    assert e.breakdown_s["dp_comm"] == pytest.approx(_exposed(e, coll_s, 2.0, 3 * 32, emb, _copies(m, 6.0)),
                                                     rel=1e-9)
    # FSDP's engine under the same stack: one unit a decoder layer, each unit's gradient pre-divided in place, and
    # the views' gradients concatenated into each flat gradient on the compute stream (read + write, exposed, each
    # of the 2 micro-batches)
    assert _hf(m, "full").breakdown_s["dp_comm"] == pytest.approx(
        _exposed(e, coll_s, 2.0, 32, copies_s=_predivide(m)) + 2 * _predivide(m), rel=1e-9)


def test_deepspeed_gathers_again_what_the_reuse_distance_releases_under_full_recompute():
    m = gpt(layers=8, hidden=8192, heads=64)  # 805M a layer: more than stage3_max_reuse_distance / 2 (5e8)
    layer = m.layer_params(0).total
    # q, k, v, o 67M each, fc1, fc2 268M: between fc1's recompute and its backward the trace holds fc2 twice (537M <
    # 1e9), between o's 4 x 268M: fc1 and fc2 stay gathered, q, k, v and o are gathered again
    kept = deepspeed_zero3_kept_params(m, 1, layer, 1.0e9, split=True)
    assert kept == pytest.approx(2 * 4 * 8192**2, rel=1e-12)
    share = 4 * 8192**2 / layer  # the norms and biases persist: never gathered again
    e = _hf(m, "none", recompute="full")
    coll_s = 63 / 64 * m.params_total * 2 / 80e9 + 63 * 5e-6
    # the hf style's projections apart (q, k, v, o 67M each), fc1 and fc2 268M: each closes a bucket; LayerNorms
    # (8,192 + biases) persist
    emb = m.vocab * m.hidden / m.params_total
    # the hf stack's "auto" reduce bucket, h^2: fc2 and fc1 (4 h^2) each reduced alone, in place (2 passes); o, v, k
    # and q (h^2 each) each fill a bucket alone, copied in and pre-divided (4): (2 x 8 + 4 x 4) / 12 a layer's element
    assert e.breakdown_s["dp_comm"] == pytest.approx(
        _exposed(e, coll_s, 2.0 + share, 6 * 8, emb, _copies(m, 32.0 / 12.0)), rel=1e-9)
    assert _hf(m, "full", recompute="full").breakdown_s["dp_comm"] == pytest.approx(
        _exposed(e, coll_s, 2.0, 8, copies_s=_predivide(m)) + 2 * _predivide(m), rel=1e-9)  # + FSDP1's view cat


def test_only_a_stack_that_runs_either_engine_changes_with_it():
    m = llama8b()
    for framework in ("torchtitan", "fsdp"):
        ds, fs = _hf(m, "none", framework=framework), _hf(m, "full", framework=framework)
        assert ds.breakdown_s["dp_comm"] == fs.breakdown_s["dp_comm"]
    assert perf_style("hf").zero3_runs_deepspeed and not perf_style("torchtitan").zero3_runs_deepspeed


def test_the_prefetch_bucket_sets_the_gathers_a_layer():
    ds = perf_style("deepspeed")
    assert (ds.zero3_prefetch_bucket_params, ds.zero3_persistence_threshold_params) == (5.0e7, 1.0e5)
    # HF Trainer's "auto" bucket (the hf stack's default), 0.9 h^2 = 15.1M at h 4,096: q (16.8M) alone; k + v + o
    # (25.2M); gate; up; down
    assert deepspeed_zero3_buckets("auto", 4096) == (int(0.9 * 4096**2), 40960, 4096**2)
    assert deepspeed_zero3_buckets("deepspeed", 4096) == (5.0e7, 1.0e5, 5.0e8)
    m = llama8b()
    coll_s = 63 / 64 * m.params_total * 2 / 80e9 + 63 * 5e-6
    # the reduce bucket h^2 = 16.8M: down, up and gate (58.7M) reduced alone (2 passes an element); o and q fill one
    # each (4); v + k share one (6)
    h, kv, ffn = 4096, 1024 * 4096, 14336 * 4096
    layer_passes = (3 * ffn * 2 + 2 * h * h * 4 + 2 * kv * 6) / (3 * ffn + 2 * h * h + 2 * kv)
    for buckets in (None, "auto"):
        e = _hf(m, "none", buckets=buckets)
        assert e.breakdown_s["dp_comm"] == pytest.approx(
            _exposed(e, coll_s, 2.0, 5 * 32, m.vocab * m.hidden / m.params_total, _copies(m, layer_passes)), rel=1e-9)
    # the deepspeed style keeps its Megatron module count (zero3_fetch_units_per_layer) whatever the option says
    assert perf_style("deepspeed").zero3_bucket_sizes == "deepspeed"


def test_a_bad_bucket_mode_is_refused_with_the_choices():
    with pytest.raises(SpecError) as err:
        _hf(llama8b(), "none", buckets="hf")
    assert err.value.where == "strategy.zero3_bucket_sizes"
    assert "auto" in str(err.value) and "deepspeed" in str(err.value)
    assert set(get_args(Zero3BucketSizes)) == set(ZERO3_BUCKET_SIZES)


JOB = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e8}, "seq_len": 2048,
       "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}


def test_the_estimate_says_which_engine_it_assumed_in_json_and_table():
    cat = load_catalog()
    for strategy, engine, en, zh in (
            ({"zero": 3, "framework": "hf"}, "deepspeed", "ZeRO-3 engine assumed: DeepSpeed stage 3",
             "假定的 ZeRO-3 分片引擎：DeepSpeed stage 3"),
            ({"fsdp": "full", "framework": "hf"}, "fsdp", "ZeRO-3 engine assumed: PyTorch FSDP",
             "假定的 ZeRO-3 分片引擎：PyTorch FSDP")):
        res = evaluate(resolve_job({**JOB, "strategy": strategy}, cat), cat)
        assert res["framework"]["zero3_engine"]["assumed"] == engine
        for lang, label in (("en", en), ("zh", zh)):
            buf = io.StringIO()
            print_estimate(res, lang, Console(file=buf, width=250))
            assert label in buf.getvalue()
    # not said where nothing is sharded, or where the stack runs one engine only
    for strategy in ({"zero": 1, "framework": "hf"}, {"fsdp": "full", "framework": "torchtitan"}):
        assert "zero3_engine" not in evaluate(resolve_job({**JOB, "strategy": strategy}, cat), cat)["framework"]


def test_a_bad_fsdp_mode_is_refused_with_the_choices():
    st = Strategy(tp=1, dp=64, zero=3, fsdp="ful", micro_batch=2, framework="hf")
    with pytest.raises(SpecError) as err:
        estimate_time(llama8b(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster(), st, CAL)
    assert err.value.where == "strategy.fsdp"
    assert "full" in str(err.value) and "hybrid" in str(err.value)
    # the job spec takes the same modes (names.FSDP_MODES)
    assert set(get_args(Fsdp)) == set(FSDP_MODES)


def test_the_estimate_says_which_bucket_sizes_it_assumed_in_json_and_table():
    cat = load_catalog()
    for stated, mode, prefetch, en, zh in (
            (None, "auto", 15099494.0, "auto (the HF Trainer / accelerate fill", "（未设置："),
            ("deepspeed", "deepspeed", 5.0e7, "deepspeed (the config leaves them out", "取 DeepSpeed 默认值")):
        strategy = {"zero": 3, "framework": "hf"} | ({"zero3_bucket_sizes": stated} if stated else {})
        res = evaluate(resolve_job({**JOB, "strategy": strategy}, cat), cat)
        b = res["framework"]["zero3_engine"]["bucket_sizes"]
        assert (b["requested"], b["assumed"], b["prefetch_bucket_params"]) == (stated, mode, prefetch)
        for lang, label in (("en", en), ("zh", zh)):
            buf = io.StringIO()
            print_estimate(res, lang, Console(file=buf, width=400))
            assert label in buf.getvalue()
    # FSDP reads none of them: refused beside fsdp, and on a stack that writes its own DeepSpeed config
    with pytest.raises(TrainsizerError, match="zero3_bucket_sizes"):
        resolve_job({**JOB, "strategy": {"fsdp": "full", "framework": "hf", "zero3_bucket_sizes": "auto"}}, cat)
    with pytest.raises(TrainsizerError, match="zero3_bucket_sizes"):
        job = resolve_job({**JOB, "strategy": {"zero": 3, "framework": "deepspeed", "zero3_bucket_sizes": "auto"}}, cat)
        evaluate(job, cat)


def _ds_comm(style, micro_batches: int, dp: int = 64) -> float:
    st = Strategy(tp=1, dp=dp, zero=3, micro_batch=1, recompute="full")
    training = Training(seq_len=4096, global_batch_seqs=dp * micro_batches)
    return estimate_time(llama8b(), training, h100_cluster(dp), st, CAL, framework_style=style).breakdown_s["dp_comm"]


def test_deepspeed_micro_batch_edges_per_micro_batch_on_its_prefetched_engine_only():
    """DeepSpeed's engine synchronizes at both ends of every micro-batch (ThroughputTimer, the gradient epilogue), so
    each micro-batch pays the input embedding's gather as its first fetch and its gradient's reduce-scatter at its
    end: a fixed cost a micro-batch (4 micro-batches pay 4 times one's), none on the v0.3 path (zero3_prefetch false)
    or with the syncs off, and an hf job keeps it on DeepSpeed's engine only (fsdp none)."""
    import dataclasses

    from trainsizer.estimate.step_time import _deepspeed_engine_options

    on = perf_style("deepspeed")
    assert on.zero3_microbatch_syncs and not perf_style("hf").zero3_microbatch_syncs
    off = dataclasses.replace(on, zero3_microbatch_syncs=False)
    one, four = (_ds_comm(on, m) - _ds_comm(off, m) for m in (1, 4))
    assert one > 0.0 and four == pytest.approx(4 * one, rel=1e-9)
    v03 = dataclasses.replace(on, zero3_prefetch=False)
    assert _ds_comm(v03, 2) == pytest.approx(_ds_comm(dataclasses.replace(v03, zero3_microbatch_syncs=False), 2),
                                             rel=1e-12)
    hf = perf_style("hf")
    assert _deepspeed_engine_options(Strategy(zero=3, fsdp="none"), hf)["zero3_microbatch_syncs"] is True
    assert _deepspeed_engine_options(Strategy(zero=3, fsdp="full"), hf) == {}


def test_deepspeed_copies_each_gradient_on_its_reduce_stream_by_how_it_buckets():
    """DeepSpeed's reduce stream (v0.16.6 stage3.py / coalesced_collectives.py) copies a gradient into its bucket,
    interleaves a bucket of several tensors and pre-divides it, in place for one larger than the bucket: 6, 4 (one
    copied tensor) or 2 passes an element, buckets closed greedily in arrival order; the middle of three layers is
    counted. Only on DeepSpeed's prefetched engine: not on FSDP, not on the v0.3 path."""
    import dataclasses

    import numpy as np

    from trainsizer.estimate.step_time import _deepspeed_engine_options, _grad_bucket_passes

    # bucket 10, the middle layer of [4, 4, 5, 12, 3] x 3: its first 4 joins the first layer's 3 (closed by its second
    # 4: 6 passes), [4, 5] closed by 12 (6), [12] alone (2), its 3 joins the third layer's first 4 (6)
    elems, passes = _grad_bucket_passes([4.0, 4.0, 5.0, 12.0, 3.0] * 3, np.asarray(10.0), 5, 10)
    assert float(elems) == 28.0
    assert float(passes) == 6 * 4 + 6 * 9 + 2 * 12 + 6 * 3
    # a tensor alone in its bucket and copied is pre-divided without the interleave: 4
    assert float(_grad_bucket_passes([6.0] * 3, np.asarray(10.0), 1, 2)[1]) == 4 * 6
    hf = perf_style("hf")
    assert _deepspeed_engine_options(Strategy(zero=3, fsdp="none"), hf)["zero3_grad_copies"] is True
    assert not hf.zero3_grad_copies and perf_style("deepspeed").zero3_grad_copies
    on = perf_style("deepspeed")
    off = dataclasses.replace(on, zero3_grad_copies=False)
    assert _ds_comm(on, 1) > _ds_comm(off, 1)
    v03 = dataclasses.replace(on, zero3_prefetch=False)
    assert _ds_comm(v03, 1) == _ds_comm(dataclasses.replace(v03, zero3_grad_copies=False), 1)


def test_fsdp1_pre_divides_each_gradient_in_place_before_its_reduce_scatter():
    """torch FSDP1's _reduce_grad divides each unit's unsharded gradient by the predivide factor before the
    reduce-scatter: the FSDP1 styles (fsdp, hf on FSDP) pay a read and a write of the gradients a micro-batch in the
    reduce chain; FSDP2 (torchtitan) and DeepSpeed's engine do not."""
    import dataclasses

    m = llama8b()
    assert perf_style("fsdp").fsdp1_grad_predivide and perf_style("hf").fsdp1_grad_predivide
    assert not perf_style("torchtitan").fsdp1_grad_predivide and not perf_style("deepspeed").fsdp1_grad_predivide
    st = Strategy(tp=1, dp=64, zero=3, fsdp="full", micro_batch=2, recompute="selective")
    tr = Training(seq_len=4096, global_batch_seqs=256)
    on = perf_style("fsdp")
    off = dataclasses.replace(on, fsdp1_grad_predivide=False)
    comm_on, comm_off = (estimate_time(m, tr, h100_cluster(), st, CAL, framework_style=s).breakdown_s["dp_comm"]
                         for s in (on, off))
    # the fsdp style's compute hides its collectives here: the pre-divide, hidden with them, costs the interference
    # share, each of the 2 micro-batches
    assert comm_on - comm_off == pytest.approx(2 * load_constants().overlap_interference * _predivide(m), rel=1e-6)
    # an hf job on DeepSpeed's engine takes DeepSpeed's reduce path, not FSDP1's
    ds = _hf(m, "none", buckets="deepspeed")
    ds_off = estimate_time(m, tr, h100_cluster(), Strategy(tp=1, dp=64, zero=3, fsdp="none", micro_batch=2,
                                                           framework="hf", recompute="selective",
                                                           zero3_bucket_sizes="deepspeed"),
                           CAL, framework_style=None)
    assert ds.breakdown_s["dp_comm"] == ds_off.breakdown_s["dp_comm"]


def test_fsdp1_concatenates_each_units_weight_gradients_on_the_compute_stream():
    """torch FSDP1's modules compute with views of the flat parameter, so every micro-batch's backward concatenates
    the views' gradients into the flat gradient (SplitWithSizesBackward): the FSDP1 styles (fsdp, hf on FSDP) pay a
    read and a write of the bf16 gradients a micro-batch, exposed on the compute stream, on top of whatever the
    collectives hide; FSDP2 (torchtitan) and DeepSpeed's engine do not, and a frozen base adds nothing."""
    import dataclasses

    m = llama8b()
    assert perf_style("fsdp").fsdp1_view_grad_cat and perf_style("hf").fsdp1_view_grad_cat
    assert not perf_style("torchtitan").fsdp1_view_grad_cat and not perf_style("deepspeed").fsdp1_view_grad_cat
    st = Strategy(tp=1, dp=64, zero=3, fsdp="full", micro_batch=2, recompute="selective")
    tr = Training(seq_len=4096, global_batch_seqs=256)
    on = perf_style("fsdp")
    off = dataclasses.replace(on, fsdp1_view_grad_cat=False)
    comm_on, comm_off = (estimate_time(m, tr, h100_cluster(), st, CAL, framework_style=s).breakdown_s["dp_comm"]
                         for s in (on, off))
    assert comm_on - comm_off == pytest.approx(2 * _predivide(m), rel=1e-6)  # 2 micro-batches, bf16 read + write
    lora = Training(seq_len=4096, global_batch_seqs=256, method="lora", lora_rank=16)
    lora_on, lora_off = (estimate_time(m, lora, h100_cluster(), st, CAL, framework_style=s).breakdown_s["dp_comm"]
                         for s in (on, off))
    assert lora_on - lora_off < 0.01 * (comm_on - comm_off)
    # an hf job on DeepSpeed's engine takes DeepSpeed's reduce path: no flat parameter, no views
    ds_st = Strategy(tp=1, dp=64, zero=3, fsdp="none", micro_batch=2, framework="hf", recompute="selective",
                     zero3_bucket_sizes="deepspeed")
    engine = dataclasses.replace(perf_style("hf"), **step_time._deepspeed_engine_options(ds_st, perf_style("hf")))
    ds_on, ds_off = (estimate_time(m, tr, h100_cluster(), ds_st, CAL, framework_style=s).breakdown_s["dp_comm"]
                     for s in (engine, dataclasses.replace(engine, fsdp1_view_grad_cat=False)))
    assert ds_on == ds_off


def test_dp_comm_serial_is_the_chain_in_full_whatever_the_compute_hides():
    """step_time_arrays' dp_comm_serial (a diagnostic, not a term of the step): ZeRO-3's collectives a step with none
    hidden behind compute. DeepSpeed's chain (gathers, reduce-scatters, ring latencies, reduce-stream copies) does not
    depend on the tokens a micro-batch, so the serial figure stays put as the sequence doubles while the exposed part
    falls behind the longer compute; it exceeds the exposed part where compute hides some of the chain; under ZeRO-1
    there is no chain to read and it is dp_comm itself."""
    m = llama8b()

    def arrays(seq: int, zero: int = 3) -> dict:
        st = Strategy(tp=1, dp=64, zero=zero, micro_batch=2, framework="hf", recompute="selective",
                      zero3_bucket_sizes="deepspeed" if zero == 3 else None)
        return step_time.step_time_arrays(m, Training(seq_len=seq, global_batch_seqs=256), h100_cluster(), st,
                                          calibration=CAL)

    short, long_ = arrays(2048), arrays(8192)
    assert float(short["dp_comm_serial"]) == pytest.approx(float(long_["dp_comm_serial"]))
    assert float(long_["dp_comm"]) < float(short["dp_comm"])
    assert float(long_["dp_comm_serial"]) > 2.0 * float(long_["dp_comm"]) > 0.0
    assert float(long_["step_s"]) < float(long_["step_s"] - long_["dp_comm"] + long_["dp_comm_serial"])
    z1 = arrays(4096, zero=1)
    assert float(z1["dp_comm_serial"]) == float(z1["dp_comm"])
