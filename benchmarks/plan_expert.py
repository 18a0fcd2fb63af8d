"""Would the plan pick what the people who trained these models picked? Published runs, planned from scratch.

Each case is a published pretraining run, given to `trainsizer plan` without hardware: the model, the tokens,
the sequence length and global batch, the precision, and a deadline about the published wall-clock time (the
run's constraint; the market where it mattered). The plan's recommendation is compared with the published
cluster on:
- platform: the same board / fabric family (catalog/evidence/scale.yaml platforms: HGX Hopper, HGX Ampere, ...);
- tier: the guides' tier of the two clusters (search.yaml tiers);
- size: recommended GPUs / published GPUs (a different platform changes the count, so read it with the platform);
- fabric: the scale-out line rate per GPU of the recommendation vs the published one.
Nothing is fitted to these runs; a mismatch is printed, not hidden.

Sources of the published clusters (catalog/data/sources.yaml): Llama 3 405B on 16,384 H100 with 400 Gb/s per
GPU (llama3_paper, meta_llama3_roce); DeepSeek-V3 on 2,048 H800 with 400 Gb/s InfiniBand per GPU
(deepseek_v3_report); TinyLlama 1.1B on 16 A100-40GB in 90 days (Zhang et al. 2024, arXiv:2401.02385).

Run: python benchmarks/plan_expert.py
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.catalog import load_catalog
from trainsizer.catalog.scale import platform_of
from trainsizer.plan.core import make_plan
from trainsizer.plan.explain import tier_id
from trainsizer.search import load_config

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Published:
    name: str
    job: dict[str, Any]
    accelerator: str
    gpus: int
    gpus_per_node: int
    gbps_per_gpu: float  # scale-out line rate per GPU


CASES = (
    Published("Llama 3.1 405B, 15T tokens (Meta)", {
        "model": "llama-3.1-405b", "method": "pretrain", "data": {"tokens": 1.5e13}, "seq_len": 8192,
        "global_batch": {"tokens": 16777216}, "precision": "bf16", "optimizer": "adamw",
        "goal": {"deadline_days": 90, "procurement": "buy"}}, "h100-sxm-80gb", 16384, 8, 400),
    Published("DeepSeek-V3 671B MoE, 14.8T tokens, FP8 (DeepSeek)", {
        "model": "deepseek-v3", "method": "pretrain", "data": {"tokens": 1.48e13}, "seq_len": 4096,
        "global_batch": {"sequences": 15360}, "precision": "fp8", "optimizer": "adamw",
        "goal": {"deadline_days": 60, "procurement": "buy"}, "constraints": {"market": "china"}},
        "h800-sxm-80gb", 2048, 8, 400),
    Published("TinyLlama 1.1B, 3T tokens (Zhang et al.)", {
        "model": str(REPO / "examples" / "configs" / "tiny-llama"), "method": "pretrain",
        "data": {"tokens": 3.0e12}, "seq_len": 2048, "global_batch": {"sequences": 1024}, "precision": "bf16",
        "optimizer": "adamw", "goal": {"deadline_days": 90, "procurement": "either"}},
        "a100-sxm-40gb", 16, 8, 200),
)


def compare(case: Published, catalog: Any) -> dict[str, Any]:
    plan = make_plan({"name": case.name, **case.job}, catalog, top=1, build=False)
    rec = plan.recommended
    cfg = load_config()
    pub_platform = platform_of(case.accelerator)
    out = {"case": case.name, "published": f"{case.accelerator} x{case.gpus}", "recommended": None}
    if rec is None:
        return out
    hw = rec.hardware
    rec_platform = platform_of(hw.accelerator)
    gbps = hw.network.nics_per_node * hw.network.gbps_per_nic / hw.per_node if hw.network else 0.0
    pub_tier = tier_id(case.gpus, -(-case.gpus // case.gpus_per_node), cfg)
    out.update(
        recommended=f"{hw.accelerator} x{hw.count}" + (f" {hw.network.id}" if hw.network else ""),
        days=rec.time.train_days, scale=rec.scale.level if rec.scale else None,
        platform_match=(rec_platform is not None and pub_platform is not None and rec_platform.id == pub_platform.id),
        tier_match=plan.tier is not None and plan.tier.id == pub_tier,
        size_ratio=hw.count / case.gpus, fabric=(gbps, case.gbps_per_gpu),
    )
    return out


def main() -> None:
    catalog = load_catalog()
    rows = [compare(c, catalog) for c in CASES]
    for r in rows:
        print(r["case"])
        print(f"  published:   {r['published']}")
        if r["recommended"] is None:
            print("  recommended: nothing satisfies the job")
            continue
        fab = r["fabric"]
        print(f"  recommended: {r['recommended']} ({r['days']:.1f} days, size {r['scale']})")
        print(f"  platform {'match' if r['platform_match'] else 'DIFFERS'}; tier {'match' if r['tier_match'] else 'DIFFERS'};"
              f" size x{r['size_ratio']:.2f} of published; scale-out {fab[0]:.0f} vs {fab[1]:.0f} Gb/s per GPU")
    done = [r for r in rows if r["recommended"] is not None]
    print(f"\nplatform matches: {sum(r['platform_match'] for r in done)}/{len(rows)}; "
          f"tier matches: {sum(r['tier_match'] for r in done)}/{len(rows)}")


if __name__ == "__main__":
    main()
