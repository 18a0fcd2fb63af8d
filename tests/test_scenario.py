"""Scenario: resolve_job directly (names become estimator inputs, with hand-derived values); a batch beyond
the data is refused; time-to-train never shorter than the steps it needs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import System
from trainsizer.evaluate import evaluate
from trainsizer.scenario import kind_efficiency, resolve_job

JOB = {"model": "llama-3.1-8b", "method": "lora", "seq_len": 4096,
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8},
       "strategy": {"tp": 1, "dp": 8, "micro_batch": 1}}


def test_batch_larger_than_the_data_is_refused():
    """Issue 15: 1e8 tokens with 100,000 sequences of 4,096 per step reported 1 step of 33,594 s in 0.095 days."""
    with pytest.raises(SpecError, match=r"global_batch: one step needs 409,600,000 tokens, more than"):
        resolve_job({**JOB, "data": {"tokens": 1e8}, "global_batch": {"sequences": 100_000}}, load_catalog())



def test_a_run_of_less_than_one_token_says_how_much_it_has():
    """A vanishing epochs count (fuzzed 2e-26) names the tokens it leaves, not '0.000 tokens'."""
    with pytest.raises(SpecError, match=r"more than the whole run's 2e-17 tokens of data"):
        resolve_job({**JOB, "data": {"tokens": 1e9, "epochs": 2e-26}, "global_batch": {"sequences": 8}},
                    load_catalog())

@settings(max_examples=15)
@given(tokens=st.floats(1e6, 1e10), seqs=st.integers(1, 512).map(lambda n: 8 * n))
def test_train_days_never_shorter_than_its_steps(tokens, seqs):
    job = {**JOB, "data": {"tokens": tokens}, "global_batch": {"sequences": seqs}}
    if seqs * 4096 > tokens:
        with pytest.raises(SpecError):
            resolve_job(job, load_catalog())
        return
    sc = resolve_job(job, load_catalog())
    out = evaluate(sc, load_catalog())
    steps, step_s = out["job"]["steps"], out["time"]["step_s"]
    assert steps >= tokens / (seqs * 4096)
    assert out["time"]["train_days"] * 86400 >= steps * step_s * (1 - 1e-9)


BASE = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1.0e9}, "seq_len": 4096,
        "global_batch": {"sequences": 256}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_a_job_without_hardware_resolves_model_and_training_only(catalog):
    sc = resolve_job(BASE, catalog)
    assert sc.system is None and sc.strategy is None and sc.network is None
    assert sc.model.name == "llama-3.1-8b"
    assert sc.training.global_batch_seqs == 256
    assert sc.training.tokens_per_step == 256 * 4096  # 1,048,576
    assert sc.training.tokens_total == 1.0e9
    assert sc.steps == 954  # 1e9 / 1,048,576 = 953.7: a partial last batch still takes a step


def test_a_token_batch_that_is_not_whole_sequences_is_rounded_and_said(catalog):
    sc = resolve_job({**BASE, "global_batch": {"tokens": 1_000_000}}, catalog)
    assert sc.training.global_batch_seqs == 244  # round(1e6 / 4096) = round(244.14)
    assert any("not a multiple of seq_len" in n for n in sc.notes)


def test_dpo_samples_are_pairs_so_tokens_double(catalog):
    job = {**BASE, "method": "dpo", "data": {"samples": 10_000, "avg_tokens": 512, "epochs": 2}}
    sc = resolve_job(job, catalog)
    assert sc.training.tokens_total == 10_000 * 512 * 2 * 2  # samples x tokens x epochs x (chosen + rejected)
    assert sc.training.sequences_per_sample == 2


def test_unpacked_samples_take_one_step_per_batch_of_samples_and_say_their_padding(catalog):
    """Unpacked SFT data (samples x avg_tokens, no packing): a step is a batch of samples, whatever their length,
    and the note states the dynamic padding assumed; packing keeps today's full rows."""
    data = {"samples": 51_200, "avg_tokens": 300, "length_sigma": 0.8, "epochs": 2}
    job = {**JOB, "data": data, "global_batch": {"sequences": 128}}
    sc = resolve_job(job, catalog)
    assert sc.training.per_sample_rows and sc.training.sample_tokens < 300
    assert sc.steps == 51_200 * 2 // 128
    assert any("padded to its longest sample" in n for n in sc.notes)
    packed = resolve_job({**job, "packing": True}, catalog)
    plain = resolve_job({**job, "packing": True, "data": {k: v for k, v in data.items() if k != "length_sigma"}},
                        catalog)
    assert not packed.training.per_sample_rows and packed.training == plain.training
    assert evaluate(packed, catalog)["time"] == evaluate(plain, catalog)["time"]
    # the spread a packed job does not use is said so, not dropped in silence
    assert any("data.length_sigma and data.max_tokens" in n for n in packed.notes)
    assert not any("data.length_sigma and data.max_tokens" in n for n in plain.notes + sc.notes)


@settings(max_examples=25, deadline=None)
@given(avg=st.floats(1.0, 20_000.0), sigma=st.floats(0.0, 3.0), longest=st.floats(1.0, 40_000.0))
def test_packed_samples_ignore_their_length_spread(avg, sigma, longest):
    """packing: true keeps today's rows of seq_len whatever the sample lengths say (only the packed attention
    span reads avg_tokens)."""
    data = {"samples": 1e7, "avg_tokens": avg}
    job = {**JOB, "packing": True, "global_batch": {"sequences": 64}}
    plain = resolve_job({**job, "data": data}, load_catalog()).training
    described = resolve_job({**job, "data": {**data, "length_sigma": sigma, "max_tokens": max(longest, avg)}},
                            load_catalog()).training
    assert described == plain and not described.per_sample_rows
    assert plain.tokens_per_step == 64 * 4096


def test_hand_described_network_takes_the_shipped_fallbacks(catalog):
    comm = load_constants().raw["comm"]
    job = {**BASE, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "per_node": 8,
                                "network": {"nics_per_node": 8, "gbps_per_nic": 400, "kind": "ib"}},
           "strategy": {"tp": 8, "pp": 1, "dp": 2, "micro_batch": 1}}
    sc = resolve_job(job, catalog)
    assert sc.network.efficiency == comm["nic_efficiency_fallback"]
    # 8 NICs x 400 Gb/s / 8 bits x efficiency, per node; per GPU divide by 8 GPUs
    assert sc.network.node_gb_s == pytest.approx(8 * 400 / 8 * comm["nic_efficiency_fallback"])
    assert sc.system.inter_node_gb_s == pytest.approx(400 / 8 * comm["nic_efficiency_fallback"])
    # the estimators take that payload as it is: the NIC efficiency is applied once, not again in rates
    from trainsizer.estimate.calibration import rates

    assert rates(sc.system, "bf16").inter_nic == pytest.approx(400 / 8 * comm["nic_efficiency_fallback"] * 1e9)
    assert sc.system.inter_node_latency_s == pytest.approx(comm["inter_node_latency_us_fallback"] * 1e-6)
    assert sc.system.gpus == 16 and sc.system.nodes == 2
    assert (sc.strategy.tp, sc.strategy.dp) == (8, 2)


def _by_hand(catalog, network: Any) -> Any:
    job = {**BASE, "hardware": {"accelerator": "a100-sxm-80gb", "count": 16, "per_node": 8, "network": network},
           "strategy": {"tp": 8, "pp": 1, "dp": 2, "micro_batch": 1}}
    return resolve_job(job, catalog)


def test_a_hand_described_roce_network_is_charged_as_the_catalogs_roce(catalog):
    """Every catalog RoCE entry plans 0.835 of line rate (networks.yaml), so the same 4 x 100 Gb RoCE fabric is charged
    alike written by hand or named roce-100; InfiniBand's entries differ by generation (HDR 0.96, NDR 0.94), which a
    spec does not state: the fallback (docs/known-gaps.md 280 (c))."""
    by_hand = _by_hand(catalog, {"nics_per_node": 4, "gbps_per_nic": 100, "kind": "roce"})
    named = _by_hand(catalog, "roce-100")
    assert by_hand.network.efficiency == catalog.network("roce-100").efficiency_planning == named.network.efficiency
    # 4 NICs x 100 Gb/s / 8 bits x the RoCE planning efficiency a node, over its 8 GPUs
    assert by_hand.system.inter_node_gb_s == pytest.approx(4 * 100 / 8 * named.network.efficiency / 8)
    assert kind_efficiency("ib", catalog) is None and kind_efficiency("efa", catalog) is None
    fallback = load_constants().raw["comm"]["nic_efficiency_fallback"]
    assert _by_hand(catalog, {"nics_per_node": 4, "gbps_per_nic": 200, "kind": "ib"}).network.efficiency == fallback


def test_a_kind_whose_catalog_entries_differ_takes_the_fallback(tmp_path):
    """An overlay that measures one RoCE network splits the kind: a hand-described RoCE network no longer knows which
    figure is its own and takes the shipped fallback."""
    overlay = tmp_path / "roce.yaml"
    overlay.write_text("date: 2026-12-07\nnetworks:\n  roce-200: {efficiency_planning: 0.9}\n", encoding="utf-8")
    split = load_catalog([overlay])
    assert kind_efficiency("roce", split) is None
    by_hand = _by_hand(split, {"nics_per_node": 4, "gbps_per_nic": 100, "kind": "roce"})
    assert by_hand.network.efficiency == load_constants().raw["comm"]["nic_efficiency_fallback"]


def test_the_estimators_default_latency_is_the_shipped_fallback():
    fallback_us = load_constants().raw["comm"]["inter_node_latency_us_fallback"]
    assert System.__dataclass_fields__["inter_node_latency_s"].default == pytest.approx(fallback_us * 1e-6)


def test_catalog_network_uses_its_own_planning_efficiency(catalog):
    net = catalog.network("ib-ndr400")
    job = {**BASE, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "per_node": 8,
                                "network": "ib-ndr400"}}
    sc = resolve_job(job, catalog)
    assert sc.network.efficiency == net.efficiency_planning
    assert sc.network.nics_per_node == net.nics_per_node_default
    assert sc.network.node_gb_s == pytest.approx(net.nics_per_node_default * net.gbps_per_nic / 8
                                                 * net.efficiency_planning)


def test_several_nodes_need_a_network(catalog):
    job = {**BASE, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "per_node": 8}}
    with pytest.raises(SpecError, match="span 2 nodes") as err:
        resolve_job(job, catalog)
    assert err.value.where == "job: hardware.network"
    # what to add: the catalog's networks, and that the plan chooses one (known-gaps 43 (n))
    assert "ib-ndr400" in str(err.value) and "trainsizer plan" in str(err.value)


def test_the_plan_searches_the_network_a_multi_node_job_leaves_out(catalog):
    """`plan` with an accelerator and a multi-node count but no network searches the networks, as it does for
    `hardware: {count: N}` (it was refused); the note says so (en / zh) and the count stays pinned."""
    from trainsizer.messages import render
    from trainsizer.plan.core import make_plan

    job = {**BASE, "hardware": {"accelerator": "h100-sxm-80gb", "count": 16}}
    sc = resolve_job(job, catalog, network_searched=True)
    note = next(n for n in sc.notes if getattr(n, "key", "") == "note_network_searched")
    assert "16 h100-sxm-80gb on 2 nodes" in note and "hardware.network" in render(note.key, "zh", note.params)
    plan = make_plan(job, catalog, build=False)
    rec = plan.recommended
    assert rec.hardware.count == 16 and rec.hardware.accelerator == "h100-sxm-80gb"
    assert rec.hardware.network is not None


def test_a_job_inside_one_nvl72_domain_needs_no_network(catalog):
    # known-gaps 43 (c): 72 GB200 on the 18 trays of one NVL72 rack meet over NVLink; no compute network is asked
    # for, the note says why (en + zh), and the estimate is the one it has with any network (none is crossed)
    from trainsizer.messages import render

    job = {**BASE, "global_batch": {"sequences": 576},
           "hardware": {"accelerator": "gb200", "count": 72}, "strategy": {"tp": 4, "dp": 18, "micro_batch": 1}}
    sc = resolve_job(job, catalog)
    assert sc.network is None and sc.system.gpus_per_node == 4 and sc.system.scaleup_domain == 72
    note = next(n for n in sc.notes if getattr(n, "key", "") == "note_one_scaleup_domain")
    assert "72-GPU NVLink domain" in note and "无需计算网络" in render(note.key, "zh", note.params)
    slow = resolve_job({**job, "hardware": {**job["hardware"], "network": {"nics_per_node": 1, "gbps_per_nic": 1,
                                                                           "kind": "ethernet"}}}, catalog)
    fast = resolve_job({**job, "hardware": {**job["hardware"], "network": "ib-ndr400"}}, catalog)
    steps = [evaluate(s, catalog)["time"]["step_s"] for s in (sc, slow, fast)]
    assert steps[0] == pytest.approx(steps[1], rel=1e-12) == pytest.approx(steps[2], rel=1e-12)


@pytest.mark.parametrize("acc, count", [("gb200", 144), ("h100-sxm-80gb", 16), ("mi300x", 16)])
def test_a_job_beyond_one_scaleup_domain_still_needs_a_network(catalog, acc, count):
    job = {**BASE, "hardware": {"accelerator": acc, "count": count}}
    with pytest.raises(SpecError, match="hardware.network"):
        resolve_job(job, catalog)


def test_excluded_accelerator_is_refused_by_its_field(catalog):
    job = {**BASE, "constraints": {"exclude": ["h100-sxm-80gb"]},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8}}
    with pytest.raises(SpecError, match="constraints.exclude") as err:
        resolve_job(job, catalog)
    assert err.value.where == "job: hardware.accelerator"


def test_unknown_accelerator_names_the_field(catalog):
    job = {**BASE, "hardware": {"accelerator": "no-such-gpu", "count": 8}}
    with pytest.raises(SpecError) as err:
        resolve_job(job, catalog)
    assert err.value.where.startswith("job: hardware.accelerator")


def test_a_prefixed_unknown_name_lists_its_choices_in_chinese(catalog):
    # the field path is prefixed with the file; the "... (62 in all)" tail of the allowed list must still translate
    job = {**BASE, "hardware": {"accelerator": "h100-sxm-8gb", "count": 8}}
    with pytest.raises(SpecError) as err:
        resolve_job(job, catalog)
    zh = err.value.render("zh")
    assert "in all" in str(err.value) and "in all" not in zh
    assert "（共" in zh and "h100-sxm-80gb" in zh


def test_torchtune_packs_next_fit_and_says_so(catalog):
    """torchtune's PackedDataset packs in order and pads each pack once the next sample does not fit: a packed
    torchtune job counts the packs' sample tokens (more steps for the same data), reads the length spread, and the
    note says how full a pack is; the Hugging Face style (auto) keeps full rows."""
    data = {"samples": 52_002, "avg_tokens": 135, "length_sigma": 0.6}
    job = {**JOB, "packing": True, "data": data, "global_batch": {"sequences": 64}}
    tt = resolve_job({**job, "strategy": {**JOB["strategy"], "framework": "torchtune"}}, catalog)
    hf = resolve_job(job, catalog)
    assert hf.training.pack_fill == 1.0 and hf.training.tokens_per_step == 64 * 4096
    assert 0.97 < tt.training.pack_fill < 0.98  # about 97 tokens of padding per 4,096-token pack
    assert tt.training.tokens_per_step == round(64 * 4096 * tt.training.pack_fill)
    assert tt.steps > hf.steps
    assert any("next fit" in n for n in tt.notes) and not any("next fit" in n for n in hf.notes)
    assert not any("data.length_sigma and data.max_tokens" in n for n in tt.notes)
    packs = tt.summary()["pack_rows"]
    assert packs["pack_tokens"] == 4096 and packs["real_tokens_per_pack"] == round(4096 * tt.training.pack_fill, 1)
    assert hf.summary()["pack_rows"] is None
    wider = resolve_job({**job, "data": {**data, "length_sigma": 1.2},
                         "strategy": {**JOB["strategy"], "framework": "torchtune"}}, catalog)
    assert wider.training.pack_fill < tt.training.pack_fill
    # data.max_tokens shortens the longest sample, not the pack: packs stay seq_len long and fill better
    capped = resolve_job({**job, "data": {**data, "length_sigma": 1.2, "max_tokens": 512},
                          "strategy": {**JOB["strategy"], "framework": "torchtune"}}, catalog)
    assert wider.training.pack_fill < capped.training.pack_fill <= 1.0
    assert (1.0 - capped.training.pack_fill) * 4096 < 512


@pytest.mark.parametrize("method", ["lora", "qlora", "full"])
def test_an_adapter_job_says_what_its_mfu_counts(method):
    """MFU for LoRA / QLoRA is model FLOPs of 2 x the forward (no weight gradients of the frozen base), which differs
    from the 6N convention some tools report: the job's notes say which it is, and by how much the other reads."""
    from trainsizer.messages import msg

    job = {**JOB, "method": method, "data": {"tokens": 1e8}, "global_batch": {"sequences": 64}}
    notes = resolve_job(job, load_catalog()).notes
    said = [n for n in notes if "6N" in n]
    if method == "full":
        assert said == []
    else:
        assert said == [msg("note_mfu_adapters", method=method)]
        assert "1.5 x" in said[0] and "2 x the forward" in said[0]
