"""The memory estimator on torchtitan's measured peaks (benchmarks/memory_modern.py).

Bound = what the estimator reaches today with a small margin (issue target: 12% MAPE per source). The two
H200 rows (2025 torchtitan) compile the loss, the December 2024 rows did not (benchmark docstring). Known misses:
the 405B 1F1B row (-11%) and the 405B CP 8 row (-8%) are under; the 8B CP 2-8 rows (+6-9%), whose peak is the
loss while the estimate adds the ring-attention buffers of a layer's backward to it, are over."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import memory_modern as mm  # noqa: E402


def test_torchtitan_peak_memory_mape():
    s = mm.summary(mm.cases())
    assert s["n"] == 20  # every torchtitan memory row, none skipped
    # reached: 4.55% (4.26 before compiled per-op SAC kept no w2 output, 2026-12-04; 3.8% before the FSDP root unit
    # was held, 2026-12-02)
    assert s["mape"] <= 5.0, s
    # reached: +12.3% (the CP 8 row, over-predicted before the root unit's embedding and head were held: +8.7%)
    assert abs(s["worst"][0][3]) <= 13.0, s["worst"]


def test_h200_rows_with_the_compiled_loss_within_7_percent():
    """torchtitan 2025 compiles its loss under --training.compile; with it the two H200 rows (+31-33% with the
    eager upcast loss) come within a few percent (reached -3.9 / -6.0%; +4.9 / +2.9% while compiled per-op SAC
    was counted with w2's output)."""
    h200 = [c for c in mm.cases() if "h200" in c.case]
    assert len(h200) == 2 and all(abs(c.error) < 0.07 for c in h200), h200


def test_compiling_the_per_op_sac_block_saves_what_the_paired_rows_measure():
    """The December 2024 8B rows on 8 and 128 GPUs measured eager and compiled at one layout (the loss eager in
    both): compile took 5.4 / 5.0 GiB off the peak. Compiled, the partitioner keeps no w2 output and no eager re-run of the block
    (docs/known-gaps.md 63): predicted 6.6 / 6.6 GiB (2.4 while w2's output was counted compiled too)."""
    c = {x.case: x for x in mm.cases()}
    for eager, compiled in (("t1_fsdp", "t1_compile"), ("t3_fsdp", "t3_compile")):
        e, k = c[f"torchtitan_mem_{eager}"], c[f"torchtitan_mem_{compiled}"]
        measured, predicted = e.measured_gib - k.measured_gib, e.predicted_gib - k.predicted_gib
        assert abs(predicted - measured) < 1.8, (eager, measured, predicted)


def test_per_op_sac_keeps_less_than_no_recompute_and_more_than_full():
    """torchtitan's selective AC sits between none and full (it was modelled as Megatron's selective = none)."""
    from trainsizer.estimate.activations import expanded_kv_bytes
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t1_compile")
    model, training, system, strategy = mm.configure(row)
    acts = [estimate_memory(model, training, system, strategy.with_(recompute=rc), check=False)
            .items_bytes["layer_activations"] for rc in ("none", "selective", "full")]
    assert acts[0] > acts[1] > acts[2]
    mega = estimate_memory(model, training, system, strategy.with_(framework="hf"), check=False)
    # hf's selective ~ none under flash; torchtitan's none also keeps K and V expanded to every query head
    expanded = model.layers * training.seq_len * strategy.micro_batch * expanded_kv_bytes(model, training)
    assert expanded > 0
    assert mega.items_bytes["layer_activations"] > 0.99 * (acts[0] - expanded)


def test_fsdp2_with_pipeline_holds_the_stage_unsharded():
    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t5_1f1b")
    from trainsizer.estimate.memory import estimate_memory

    model, training, system, strategy = mm.configure(row)
    titan = estimate_memory(model, training, system, strategy, check=False).items_bytes["framework_buffers"]
    one_stage = model.params_total / (8 * 8)
    assert titan > 0.9 * 6.0 * one_stage  # bf16 weights + fp32 accumulated gradients of the stage


def test_tp_rows_hold_the_gathered_inputs_and_the_loss_parallel_temporaries():
    """70B TP 8 x FSDP 32 (-19% before): DTensor SP saves the all-gathered block inputs whole in the re-run block,
    and loss_parallel's backward keeps three fp32 logit-sized temporaries."""
    from trainsizer.estimate.memory import estimate_memory

    two_d = [c for c in mm.cases() if c.case.startswith("torchtitan_mem_t4")]
    assert len(two_d) == 2 and all(abs(c.error) < 0.08 for c in two_d), two_d
    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t4_2d")
    model, training, system, strategy = mm.configure(row)
    strategy = strategy.with_(live_at_rerun="loss")  # both phases' items shown (known-gaps 214)
    e = estimate_memory(model, training, system, strategy, check=False)
    tokens = training.seq_len * strategy.micro_batch
    assert e.items_bytes["loss_backward_temporaries"] == 12 * tokens * model.vocab / strategy.tp
    mega = estimate_memory(model, training, system, strategy.with_(framework="megatron-core"), check=False)
    assert e.items_bytes["recompute_working_set"] > mega.items_bytes["recompute_working_set"]


def test_eager_per_op_sac_reruns_the_block_and_compile_does_not():
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t1_fsdp")
    model, training, system, strategy = mm.configure(row)
    assert estimate_memory(model, training, system, strategy, check=False).per_gpu_bytes > \
        estimate_memory(model, training, system, strategy.with_(torch_compile=True), check=False).per_gpu_bytes
    summed = strategy.with_(live_at_rerun="loss")  # the re-run block's item shown beside the loss (known-gaps 214)
    eager = estimate_memory(model, training, system, summed, check=False)
    compiled = estimate_memory(model, training, system, summed.with_(torch_compile=True), check=False)
    assert compiled.items_bytes["recompute_working_set"] == 0.0
    assert eager.items_bytes["recompute_working_set"] > 0.5 * eager.items_bytes["layer_activations"] / model.layers


def test_torchtitan_block_keeps_k_and_v_expanded_to_every_query_head():
    """torchtitan's attention calls repeat_kv before SDPA, so a block that keeps its activations (here the
    block re-run under full AC) holds K and V as wide as Q; the hf profile's flash attention keeps them kv-wide."""
    from trainsizer.estimate.activations import expanded_kv_bytes
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t2_cp1")
    model, training, system, strategy = mm.configure(row)
    summed = strategy.with_(live_at_rerun="loss")  # the re-run block's item shown (known-gaps 214)
    titan = estimate_memory(model, training, system, summed, check=False).items_bytes
    hf_summed = strategy.with_(framework="hf", live_at_rerun="loss")  # the hf style with the sum, as torchtitan's
    hf = estimate_memory(model, training, system, hf_summed, check=False).items_bytes
    tokens = training.seq_len * strategy.micro_batch
    per_token = expanded_kv_bytes(model, training)
    assert per_token == 2 * (2 * model.q_dim - model.kv_dim - model.v_dim) > 0  # Llama 3 8B: 32 query, 8 KV heads
    assert titan["recompute_working_set"] - hf["recompute_working_set"] == tokens * per_token


def test_enable_gqa_keeps_no_expanded_k_and_v_and_is_the_field_the_ring_reads():
    """strategy.repeat_kv false (torchtitan after #2259, 2026-01-27: enable_gqa to SDPA): the re-run block
    holds no expanded K / V, by exactly what repeat_kv added; unset is the torchtitan style's (true, repeat_kv)."""
    from trainsizer.estimate.activations import expanded_kv_bytes
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t2_cp1")
    model, training, system, strategy = mm.configure(row)
    by = {k: estimate_memory(model, training, system, strategy.with_(repeat_kv=k, live_at_rerun="loss"), check=False)
          for k in (None, True, False)}  # the loss phase summed in, so the re-run block's item shows (known-gaps 214)
    assert by[None].items_bytes == by[True].items_bytes
    tokens = training.seq_len * strategy.micro_batch
    kept = by[True].items_bytes["recompute_working_set"] - by[False].items_bytes["recompute_working_set"]
    assert kept == pytest.approx(tokens * expanded_kv_bytes(model, training))
    assert by[False].per_gpu_bytes < by[True].per_gpu_bytes


def test_ring_buffers_at_the_kv_heads_width_under_enable_gqa():
    """PyTorch's ring holds K / V as SDPA sees them: at the query width under repeat_kv, at the 8 K / V heads'
    width under enable_gqa (Llama 3 8B: 32 query heads), so its buffers shrink, and stay above zero."""
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t6_cp8")
    model, training, system, strategy = mm.configure(row)
    ring = {k: estimate_memory(model, training, system, strategy.with_(repeat_kv=k),
                               check=False).items_bytes["cp_ring_attention_buffers"] for k in (True, False)}
    assert model.kv_dim < model.q_dim and 0.0 < ring[False] < 0.5 * ring[True]


def test_context_parallel_ring_attention_buffers_grow_with_the_cp_degree():
    """PyTorch's ring attention backward (allgather rotater) holds every CP rank's K and V, so at the same local
    sequence the buffers grow with CP; none without CP and none for Megatron-Core's own CP."""
    from trainsizer.estimate.memory import estimate_memory

    rows = {r["id"]: r for r in mm.rows()}
    ring = []
    for cp in (1, 2, 4, 8):
        model, training, system, strategy = mm.configure(rows[f"torchtitan_mem_t6_cp{cp}"])
        items = estimate_memory(model, training, system, strategy, check=False).items_bytes
        ring.append(items.get("cp_ring_attention_buffers", 0.0))
    assert ring[0] == 0.0 and 0.0 < ring[1] < ring[2] < ring[3]
    # the same local tokens: each CP doubling adds one more all-gathered K and V per added rank
    model, training, system, strategy = mm.configure(rows["torchtitan_mem_t6_cp8"])
    local_tokens = training.seq_len * strategy.micro_batch / strategy.cp
    kv_copy = local_tokens * 2 * model.q_dim / strategy.tp * 2  # one rank's expanded K + V, 16-bit
    assert ring[3] - ring[2] == pytest.approx(4 * kv_copy)
    mega = estimate_memory(model, training, system, strategy.with_(framework="megatron-core", zero=1,
                                                                    distributed_optimizer=True), check=False)
    assert "cp_ring_attention_buffers" not in mega.items_bytes


def test_all_gather_context_parallelism_holds_the_whole_sequences_k_v_for_one_layer():
    """cp_comm_type all_gather (Megatron-Core / TE, Llama 3 s3.3.2): one layer's attention holds the whole
    sequence's K and V gathered from every CP rank and, in its backward, the whole sequence's dK / dV; at their GQA
    width, split by TP. p2p (the ring) holds neither; the step's other items do not change."""
    from trainsizer.estimate.memory import estimate_memory

    rows = {r["id"]: r for r in mm.rows()}
    model, training, system, strategy = mm.configure(rows["torchtitan_mem_t6_cp8"])
    mega = strategy.with_(framework="megatron-core", zero=1, distributed_optimizer=True)
    ring = estimate_memory(model, training, system, mega, check=False).items_bytes
    gathered = estimate_memory(model, training, system, mega.with_(cp_comm_type="all_gather"), check=False).items_bytes
    assert "cp_allgather_kv_buffers" not in ring
    whole_seq = training.seq_len * strategy.micro_batch  # tokens of the sequence every CP rank gathers
    kv = (model.kv_dim + model.v_dim) / min(strategy.tp, model.kv_heads) * 2  # K + V of one token, 16-bit
    assert gathered["cp_allgather_kv_buffers"] == pytest.approx(2 * whole_seq * kv)  # K / V, then dK / dV
    assert {k: v for k, v in gathered.items() if k not in ("cp_allgather_kv_buffers", "fragmentation")} == \
        pytest.approx({k: v for k, v in ring.items() if k != "fragmentation"})
