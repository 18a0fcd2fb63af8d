"""Documented cluster size in the ranking: an option larger than any documented cluster of its platform
ranks after better-documented options that satisfy the job, and the plan says what it passed over and why."""

from __future__ import annotations

from trainsizer.catalog import load_catalog
from trainsizer.plan.core import make_plan
from trainsizer.search import rank as ranking

from .conftest import example_job as _job


def test_rank_puts_documented_scale_before_the_figure():
    cheap_beyond = ranking.Scored(0, 60.0, 1.0e8, True, None, scale=7)
    dear_documented = ranking.Scored(1, 60.0, 4.0e8, True, None, scale=0)
    missing = ranking.Scored(2, 99.0, 1.0e7, False, None, scale=0)
    ranked = ranking.rank([cheap_beyond, dear_documented, missing], "cost_under_deadline")
    assert [s.index for s in ranked] == [1, 0, 2]  # satisfying first, then documented scale, then cost
    assert ranking.ties(ranked, "cost_under_deadline", 10.0) == [dear_documented]  # no tie across standings


def test_pcie_cards_at_8k_do_not_win_a_671b_moe_in_china():
    """DeepSeek-V3 FP8 pretraining for the China market: 8,192 RTX PRO 6000D (PCIe, 32x the largest PCIe-server
    reference design) would be the cheapest; the plan ranks a documented HGX option first and names the one it
    passed over with the reason, in both languages."""
    cat = load_catalog()
    plan = make_plan(_job("pretrain-deepseek-v3.yaml"), cat, top=3)
    rec = plan.recommended
    assert rec is not None and rec.hardware.accelerator != "rtx-pro-6000d"
    assert rec.scale.level == "demonstrated"
    beyond = [o for o in plan.hardware_options if o.accelerator == "rtx-pro-6000d" and o.count >= 8192]
    assert beyond and all(o.scale == "beyond" for o in beyond)
    note = next(n for n in plan.notes if "rtx-pro-6000d" in n)
    assert "256" in note and "doubling" in note
    zh = make_plan(_job("pretrain-deepseek-v3.yaml"), cat, top=1, lang="zh", build=False)
    assert any("rtx-pro-6000d" in n and "翻倍" in n for n in zh.notes)


def test_405b_without_hardware_is_planned_on_a_demonstrated_platform():
    """Llama 3.1 405B, 15T tokens, 90 days, no hardware: Gaudi 3 at 8,192 (64x its documented 128-card
    sub-cluster) is no longer the recommendation; the winner is inside a published run's size."""
    plan = make_plan(_job("pretrain-405b.yaml"), load_catalog(), top=3, build=False)
    rec = plan.recommended
    assert rec is not None and rec.hardware.accelerator != "gaudi3" and rec.scale.level == "demonstrated"
    assert rec.scale.documented_gpus >= rec.hardware.count and rec.scale.sources
    gaudi = [o for o in plan.hardware_options if o.accelerator == "gaudi3" and o.count >= 1024]
    assert gaudi and all(o.scale == "beyond" for o in gaudi)
    shown = make_plan(_job("pretrain-405b.yaml", constraints={"include": ["gaudi3"]}), load_catalog(), top=1,
                      build=False)
    assert shown.recommended.scale.level == "beyond" and shown.recommended.scale.software  # the stack's own caveats
    assert any("pilot" in n for n in shown.notes)


def test_qlora_7b_on_4090s_takes_one_card():
    """QLoRA 7B with the RTX 4090 pinned: QLoRA's frameworks are data parallel only (no TP/PP over PCIe with P2P
    disabled), so more cards only repeat the same work: one card is recommended. PEFT's fp32 stream stated
    (kbit_upcast true, the figures this was set on; unstated, hf's 16-bit stream fits one card without recompute and
    the plan takes eight at 5% more cost for 8x the speed: docs/known-gaps.md 258 (a))."""
    from trainsizer.search import Pins

    plan = make_plan(_job("qlora-7b-one-gpu.yaml", strategy={"kbit_upcast": True}), load_catalog(),
                     pins=Pins(accelerator="rtx-4090"), top=3, build=False)
    assert plan.recommended.hardware.count == 1
    for o in plan.hardware_options:
        assert o.layout.startswith("DP"), o.layout  # no TP / PP / CP / EP layout searched


def test_fp8_job_names_the_16_bit_accelerators_it_left_out():
    """Ascend has no FP8: a DeepSeek-V3 FP8 plan for China says so and how to compare it (en and zh)."""
    for lang, word in (("en", "bf16"), ("zh", "bf16")):
        plan = make_plan(_job("pretrain-deepseek-v3.yaml"), load_catalog(), top=1, lang=lang, build=False)
        note = next(n for n in plan.notes if "ascend-910c" in n)
        assert "ascend-910b" in note and word in note and "fp8" in note


def test_an_overlay_card_gets_the_scale_its_overlay_documents(tmp_path):
    """A card an overlay adds has no documented multi-node scale (the plan says so and how to add it) until
    the overlay places it on a platform; then the plan judges it against that platform's evidence."""
    from .conftest import make_job

    card = ("accelerators:\n  acme-x1: {memory_gb: 96, memory_bw_tb_s: 4.0, tflops_dense: {bf16: 800}, "
            "scaleup_tech: pcie, scaleup_bw_bidir_gb_s: 128, scaleup_domain: 8, pcie_gb_s: 63, tdp_w: 600}\n")
    bare, placed = tmp_path / "bare.yaml", tmp_path / "placed.yaml"
    bare.write_text(card, encoding="utf-8")
    placed.write_text(card + "scale_platforms:\n  hgx-hopper: {members: [acme-x1]}\n", encoding="utf-8")
    job = make_job(hardware={"accelerator": "acme-x1", "count": 16, "per_node": 8, "network": "ib-ndr400"})
    job.pop("strategy")
    before = make_plan(job, load_catalog([bare]), top=1, build=False)
    assert before.recommended.scale.platform is None and before.recommended.scale.level == "beyond"
    assert any("acme-x1" in n and "scale_platforms" in n for n in before.notes)
    after = make_plan(job, load_catalog([placed]), top=1, build=False)
    assert after.recommended.scale.platform == "hgx-hopper" and after.recommended.scale.level == "demonstrated"
    assert not any("scale_platforms" in n for n in after.notes)
