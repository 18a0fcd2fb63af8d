"""strategy.device_map auto: transformers' from_pretrained(device_map="auto") spreads the layers over the GPUs of one
host by accelerate's balanced split (get_balanced_memory + infer_auto_device_map, accelerate v0.25.0), and each
micro-batch passes through the cards one at a time (estimate.device_map, step_time._device_map_step)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError, TrainsizerError
from trainsizer.estimate.device_map import balanced_split, card_shares, weight_bytes_for
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job, resolve_model

# Qwen-72B's shape (Qwen/Qwen-72B config.json: 80 x 8192, FFN 24576 a branch, 64 heads, vocab 152064, c_attn bias,
# untied), as benchmarks/data/heldout_models.yaml qwen1.5-72b holds it
QWEN72 = {"name": "qwen-72b", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 64, "ffn": 24576,
          "vocab": 152064, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False,
          "qkv_bias": True, "out_bias": False, "mlp_bias": False, "max_position": 8192}
JOB = {"model": "llama-2-70b", "method": "lora", "lora": {"rank": 8}, "data": {"tokens": 2e7}, "seq_len": 2048,
       "global_batch": {"sequences": 16}}


def _scenario(count: int = 2, model=None, **strategy):
    job = {**JOB, "hardware": {"accelerator": "a100-sxm-80gb", "count": count},
           "strategy": {"micro_batch": 1, "recompute": "full", **strategy}}
    if model is not None:
        job["model"] = model
    return resolve_job(job, load_catalog())


def _time(sc) -> dict[str, float]:
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s


def test_qwen72b_split_as_accelerate_places_it():
    """Worked by hand from accelerate v0.25.0: 72.26e9 parameters x 2 B; a decoder layer 0.872e9 x 2 B; per_gpu =
    total / 2 + 1.25 layers = 36.13e9 + 1.09e9 parameters' bytes; GPU 0 holds back the LM head (1.246e9, larger
    than a layer), so it takes the embedding (1.246e9) and 39 layers (35.25e9 <= 35.98e9; a 40th makes 36.12e9),
    GPU 1 the other 41, the final norm and the head."""
    m = resolve_model(QWEN72, "test")
    assert balanced_split(m, 2) == (39, 41)
    assert balanced_split(m, 1) == (80,)
    first, last = card_shares(m, (39, 41))
    assert first + last == pytest.approx(1.0)
    assert last > first  # the head's 1.25e9 and two more layers against the embedding


def test_a_large_vocabulary_small_model_lands_on_the_last_card():
    """accelerate never revisits a GPU: where the embedding is larger than every GPU's share but the last's
    (Qwen-1.8B's 0.31e9 embedding over 8 GPUs: per_gpu 0.29e9 + 1.25 layers), it and everything after it go to the
    last GPU, which keeps its whole memory."""
    m = resolve_model({"name": "q18", "layers": 24, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn": 5504,
                       "vocab": 151936, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope",
                       "tied_embeddings": False}, "test")
    assert balanced_split(m, 8) == (24,)
    assert balanced_split(m, 2) == (7, 17)


def test_qlora_counts_the_quantised_layers_at_half_a_byte():
    assert weight_bytes_for("qlora", "bf16") == (0.5, 2.0)
    assert weight_bytes_for("lora", "bf16") == (2.0, 2.0)
    m = resolve_model(QWEN72, "test")
    # the 16-bit head weighs four quantised layers' worth more: GPU 0 holds back more room, so it takes fewer layers
    assert balanced_split(m, 2, 0.5, 2.0)[0] < balanced_split(m, 2)[0]


def test_one_card_is_the_plain_single_gpu_job():
    """device_map auto on one GPU (every single-card ms-swift run) estimates exactly as no device map."""
    dm, plain = _scenario(1, device_map="auto"), _scenario(1)
    assert dm.strategy.pp == 1 and dm.strategy.local_batch is None
    a = estimate_memory(dm.model, dm.training, dm.system, dm.strategy, check=False)
    b = estimate_memory(plain.model, plain.training, plain.system, plain.strategy, check=False)
    assert a.per_gpu_bytes == b.per_gpu_bytes
    assert _time(dm) == _time(plain)


def test_two_cards_hold_the_model_between_them():
    """Llama-2-70B (80 layers, vocab 32,000) splits 40 / 40; the cards' frozen weights add up to the one-card
    job's, the embedding on the first card and the head, final norm and logits on the last; no NCCL communicator."""
    sc = _scenario(2, device_map="auto")
    s = sc.strategy
    assert (s.pp, s.dp, s.tp, s.local_batch, s.framework) == (2, 1, 1, 1, "hf")
    assert s.pp_stage_layers == (40, 40) and (s.pp_first_stage_layers, s.pp_last_stage_layers) == (None, None)
    est = estimate_memory(sc.model, sc.training, sc.system, s, check=False)
    one = _scenario(1)
    alone = estimate_memory(one.model, one.training, one.system, one.strategy, check=False)
    assert est.items_bytes["nccl_buffers"] == 0.0
    assert "LM head" in est.worst_gpu
    assert est.stage_bytes["last"] > est.stage_bytes["first"]
    assert est.items_bytes["base_weights_frozen"] < 0.55 * alone.items_bytes["base_weights_frozen"]
    # one micro-batch's activations a card (no 1F1B warm-up): the last card keeps its 40 layers' inputs only
    assert est.items_bytes["layer_activations"] == pytest.approx(
        alone.items_bytes["layer_activations"] * 40 / 80, rel=1e-6)


def test_the_cards_run_one_at_a_time():
    """The chain's forward and backward are the one-card job's, plus each micro-batch's hidden state over the
    boundary and its gradient back: 16 micro-batches x 2 copies of 2048 x 8192 x 2 B."""
    two, one = _time(_scenario(2, device_map="auto")), _time(_scenario(1))
    assert two["compute"] == pytest.approx(one["compute"], rel=1e-9)
    assert two["pp_bubble"] == 0.0
    hop_bytes = 2048 * 8192 * 2
    at_link_rate = 16 * 2 * hop_bytes / 300e9  # A100 NVLink 300 GB/s a direction
    assert at_link_rate <= two["pp_comm"] <= 2 * at_link_rate  # the peer copies' achieved share of the link


@settings(max_examples=12, deadline=None)
@given(cards=hs.integers(2, 8), mb=hs.sampled_from([1, 2]), lora=hs.booleans())
def test_k_cards_never_faster_than_one_cards_compute(cards, mb, lora):
    """A naive split adds cards, not speed: the step on k chained cards is never shorter than the one-card job's
    forward and backward."""
    method = {"method": "lora", "lora": {"rank": 8}} if lora else {"method": "full"}
    job = {**JOB, **method, "model": "llama-2-13b",
           "hardware": {"accelerator": "a100-sxm-80gb", "count": cards},
           "strategy": {"micro_batch": mb, "recompute": "full", "device_map": "auto"}}
    if not lora:
        job.pop("lora")
    cat = load_catalog()
    sc = resolve_job(job, cat)
    alone = resolve_job({**job, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1}}, cat)
    chain = estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)
    single = estimate_time(alone.model, alone.training, alone.system, alone.strategy, memory_note=False)
    assert chain.step_s >= single.breakdown_s["compute"]
    assert chain.step_s <= single.step_s * 1.05  # the boundary copies are small against a layer's compute


@pytest.mark.parametrize("extra", [{"tp": 2}, {"zero": 3}, {"fsdp": "full"}, {"dp": 2}, {"pp": 2},
                                   {"offload": "optimizer", "zero": 2}, {"framework": "megatron-core"}])
def test_device_map_alone_is_the_layout(extra):
    with pytest.raises(TrainsizerError, match="device_map"):
        _scenario(2, device_map="auto", **extra)


def test_device_map_stays_in_one_host():
    job = {**JOB, "hardware": {"accelerator": "a100-sxm-80gb", "count": 16, "network": "ib-ndr400"},
           "strategy": {"device_map": "auto"}}
    with pytest.raises(SpecError, match="one host") as err:
        resolve_job(job, load_catalog())
    assert "strategy.device_map" in str(err.value)


def test_a_pipeline_on_hf_without_device_map_is_still_refused():
    sc = _scenario(2, pp=2, framework="hf")
    with pytest.raises(StrategyError, match="pipeline"):
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


def test_json_says_device_map():
    sc = _scenario(2, device_map="auto")
    assert sc.summary()["strategy"]["device_map"] == "auto"
    assert estimate_memory(sc.model, sc.training, sc.system, sc.strategy).per_gpu_bytes < 80 * GIB


def test_every_cards_layers_are_stated_as_accelerate_splits_them():
    """The chain states accelerate's count of every card (strategy.pp_stage_layers, known-gaps 228 (b)), not its end
    cards with the middle split evenly; where the middle cards are even (as accelerate fills each to the same
    per_gpu) the estimate is the end-card statement's to the byte and the second."""
    from dataclasses import replace

    sc = _scenario(4, device_map="auto")
    s = sc.strategy
    counts = balanced_split(sc.model, 4, *weight_bytes_for("lora", "bf16"))
    assert s.pp_stage_layers == counts and len(set(counts[1:-1])) == 1
    from trainsizer.layout_text import layout_in
    assert f"({' / '.join(map(str, counts))} layers, card by card" in layout_in(s, "en")
    assert f"逐卡 {' / '.join(map(str, counts))} 层" in layout_in(s, "zh")
    ends = replace(s, pp_stage_layers=None, pp_first_stage_layers=counts[0], pp_last_stage_layers=counts[-1])
    listed = estimate_memory(sc.model, sc.training, sc.system, s, check=False)
    edged = estimate_memory(sc.model, sc.training, sc.system, ends, check=False)
    assert listed.per_gpu_bytes == edged.per_gpu_bytes and listed.stage_bytes == edged.stage_bytes
    timed = estimate_time(sc.model, sc.training, sc.system, ends, memory_note=False).step_s
    assert _time(sc) == estimate_time(sc.model, sc.training, sc.system, ends, memory_note=False).breakdown_s
    assert estimate_time(sc.model, sc.training, sc.system, s, memory_note=False).step_s == timed
