"""Would the plan pick what the people who trained these models picked? Published runs and the guides' job tiers,
planned from scratch.

Published runs: each case is a published pretraining run, given to `trainsizer plan` without hardware: the model,
the tokens, the sequence length and global batch, the precision, and a deadline about the published wall-clock time
(the run's constraint; the market where it mattered). The plan's recommendation is compared with the published
cluster on:
- platform: the same board / fabric family (catalog/evidence/scale.yaml platforms: HGX Hopper, HGX Ampere, ...);
- tier: the guides' tier of the two clusters (search.yaml tiers);
- size: recommended GPUs / published GPUs (a different platform changes the count, so read it with the platform);
- fabric: the scale-out line rate per GPU of the recommendation vs the published one.
Each run is planned twice more: on the catalog of its time (only the parts launched before the year the run started:
accelerators.yaml launch_year, available_from where given; today's prices) and on the published cluster itself
(its accelerator, count and scale-out line rate pinned), so a mismatch reads as "a part the run could not buy",
"the published cluster misses the deadline in the estimate" or "the plan prefers another option at this cost".

Guide tiers: the job classes of the reference guides (../shared/reference 000, 003, 004: a 7B LoRA / QLoRA on one or
two 24-48 GB cards, a 14B-70B full fine-tune on one or two 8-GPU 80 GB servers, 70B-class pretraining on 4-16
8-GPU nodes), each with what the guide recommends; the recommendation is compared with the guide's accelerators and
GPU count. The guides are loose (their README lists known errors) and state no data size or deadline: each case
states the ones it assumed, and a mismatch is read against the guide's own claim.

Nothing is fitted to these cases; a mismatch is printed, not hidden. What the mismatches show: docs/known-gaps.md 65.

Sources of the published clusters (catalog/data/sources.yaml; the runs are also in catalog/evidence/scale.yaml):
Llama 3 405B on 16,384 H100 with 400 Gb/s per GPU (llama3_paper, meta_llama3_roce); DeepSeek-V3 on 2,048 H800 with
400 Gb/s InfiniBand per GPU (deepseek_v3_report); TinyLlama 1.1B on 16 A100-40GB in 90 days (tinyllama_paper);
LLaMA 65B on 2,048 A100 80GB in about 21 days (llama1_paper); BLOOM 176B on 384 A100 80GB for 3.5 months
(bloom_paper); GLM-130B on 96 DGX-A100 (768 A100 40GB) for 60 days (glm130b_paper); BloombergGPT on 64 p4d (512 A100
40GB) for about 53 days (bloomberggpt_paper); StarCoderBase on 512 A100 80GB for 24 days (starcoder_paper); SmolLM3
on 384 H100 for 24 days (smollm3_blog).

Run: python benchmarks/plan_expert.py
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.catalog import load_catalog
from trainsizer.catalog.scale import platform_of
from trainsizer.errors import TrainsizerError
from trainsizer.plan.core import make_plan
from trainsizer.plan.explain import tier_id
from trainsizer.search import load_config

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data"


@dataclass(frozen=True)
class Published:
    name: str
    job: dict[str, Any]
    accelerator: str
    gpus: int
    gpus_per_node: int
    nics: tuple[int, float, str] | None  # scale-out NICs per node, Gb/s per NIC, kind (None: not stated)
    started: int  # the year the run started (its catalog: parts launched before it)
    note: str = ""  # what the source says that the job does not (an existing cluster, a reservation)

    @property
    def gbps_per_gpu(self) -> float | None:
        return None if self.nics is None else self.nics[0] * self.nics[1] / self.gpus_per_node


@dataclass(frozen=True)
class GuideTier:
    name: str
    guide: str  # where the guide says it
    job: dict[str, Any]
    accelerators: tuple[str, ...]  # the parts the guide names for the tier
    gpus: tuple[int, int]  # the guide's GPU count, least and most
    assumed: str  # what the job states that the guide does not


def _model(path: Path, key: str) -> dict[str, Any]:
    from harness import model_data

    return dict(model_data(path)[key]["model"])


# BLOOM 176B: 70 layers, hidden 14336, 112 heads, sequence 2,048, vocabulary 250,880 (250,680 padded), ALiBi, GELU,
# LayerNorm, tied embeddings, Megatron biases (bloom_paper s3.2 / Table 3; bigscience/bloom config.json); the
# embedding LayerNorm is not modelled (0.03M parameters).
BLOOM = {"name": "bloom-176b", "family": "gpt", "layers": 70, "hidden": 14336, "heads": 112, "kv_heads": 112,
         "ffn": 57344, "vocab": 250880, "mlp": "gelu", "norm": "layernorm", "position": "alibi",
         "tied_embeddings": True, "qkv_bias": True, "out_bias": True, "mlp_bias": True}
# LLaMA 65B: 80 layers, dimension 8192, 64 heads (llama1_paper Table 2), SwiGLU of 22,016 (2/3 x 4d rounded to 256,
# s2.2; the released params.json), vocabulary 32,000, RMSNorm, RoPE, untied.
LLAMA_65B = {"name": "llama-65b", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 64, "ffn": 22016,
             "vocab": 32000, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False}


def _pretrain(model: Any, tokens: float, seq: int, batch: dict[str, int], precision: str, days: float,
              procurement: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "method": "pretrain", "data": {"tokens": tokens}, "seq_len": seq, "global_batch": batch,
            "precision": precision, "optimizer": "adamw",
            "goal": {"deadline_days": days, "procurement": procurement}, **extra}


CASES = (
    Published("Llama 3.1 405B, 15T tokens (Meta)",
              _pretrain("llama-3.1-405b", 1.5e13, 8192, {"tokens": 16777216}, "bf16", 90, "buy"),
              "h100-sxm-80gb", 16384, 8, (8, 400, "roce"), 2024, "Meta's own 24K-GPU clusters"),
    Published("DeepSeek-V3 671B MoE, 14.8T tokens, FP8 (DeepSeek)",
              _pretrain("deepseek-v3", 1.48e13, 4096, {"sequences": 15360}, "fp8", 60, "buy",
                        constraints={"market": "china"}),
              "h800-sxm-80gb", 2048, 8, (8, 400, "ib"), 2024, "DeepSeek's own H800 cluster"),
    Published("TinyLlama 1.1B, 3T tokens (Zhang et al.)",
              _pretrain(str(REPO / "examples" / "configs" / "tiny-llama"), 3.0e12, 2048, {"sequences": 1024},
                        "bf16", 90, "either"),
              "a100-sxm-40gb", 16, 8, None, 2023, "a university's existing 16 A100-40GB; network not stated"),
    Published("LLaMA 65B, 1.4T tokens (Meta)",
              _pretrain(LLAMA_65B, 1.4e12, 2048, {"tokens": 4194304}, "bf16", 21, "buy"),
              "a100-sxm-80gb", 2048, 8, None, 2022, "Meta's own cluster; network not stated in the paper"),
    Published("BLOOM 176B, 366B tokens (BigScience)",
              _pretrain(BLOOM, 3.66e11, 2048, {"sequences": 2048}, "bf16", 117, "either"),
              "a100-sxm-80gb", 384, 8, (4, 100, "ib"), 2022,
              "a public supercomputer's A100 partition (Jean Zay, Omni-Path 4 x 100 Gb/s per node)"),
    Published("GLM-130B, 400B tokens (Tsinghua)",
              _pretrain(_model(DATA / "papers_models.yaml", "glm-130b"), 4.0e11, 2048, {"sequences": 4224}, "fp16",
                        60, "either"),
              "a100-sxm-40gb", 768, 8, (8, 200, "ib"), 2022, "96 DGX-A100 lent by a sponsor"),
    Published("BloombergGPT 50B, 569B tokens (Bloomberg)",
              _pretrain(_model(DATA / "papers_models.yaml", "bloomberggpt-50b"), 5.69e11, 2048,
                        {"sequences": 2048}, "bf16", 53, "rent"),
              "a100-sxm-40gb", 512, 8, (4, 100, "roce"), 2022, "64 AWS p4d instances (EFA 400 Gb/s per node)"),
    Published("StarCoderBase 15.5B, 1T tokens (BigCode)",
              _pretrain(_model(DATA / "heldout_models.yaml", "starcoderbase-15b"), 1.0e12, 8192,
                        {"sequences": 512}, "bf16", 24, "rent"),
              "a100-sxm-80gb", 512, 8, (4, 100, "roce"), 2023,
              "a sponsor's cloud A100 80GB cluster; network not stated: AWS p4de EFA 4 x 100 Gb/s assumed, as perf_heldout"),
    Published("SmolLM3 3B, 11.2T tokens (Hugging Face)",
              _pretrain(_model(DATA / "heldout_models.yaml", "smollm3-3b"), 1.12e13, 4096, {"sequences": 576},
                        "bf16", 24, "rent"),
              "h100-sxm-80gb", 384, 8, (32, 100, "roce"), 2025, "Hugging Face's reserved H100 cluster (EFA)"),
)

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SFT_DATA = {"samples": 50000, "avg_tokens": 1024, "epochs": 3}  # examples/qlora-7b-one-gpu.yaml's data
GUIDES = (
    GuideTier("7B QLoRA (small fine-tune)", "004 s1: 1-2 RTX 4090 (24 GB) or L40S (48 GB); 000: one card or 2-4",
              {"model": "qwen2.5-7b", "method": "qlora", "lora": {"rank": 64, "targets": LORA_TARGETS},
               "data": SFT_DATA, "seq_len": 2048, "global_batch": {"sequences": 16}, "precision": "bf16",
               "optimizer": "adamw8bit", "goal": {"deadline_days": 3, "procurement": "buy"}},
              ("rtx-4090", "rtx-4090d", "l40s", "rtx-a6000"), (1, 2), "data, batch and 3-day deadline"),
    GuideTier("8B LoRA (small fine-tune)",
              "004 s1: 1-2 RTX 4090 or L40S; 000 table: one node of 4 A100 / H100 80GB (the guides disagree)",
              {"model": "llama-3.1-8b", "method": "lora", "lora": {"rank": 16, "targets": LORA_TARGETS},
               "data": SFT_DATA, "seq_len": 2048, "global_batch": {"sequences": 16}, "precision": "bf16",
               "optimizer": "adamw", "goal": {"deadline_days": 3, "procurement": "buy"}},
              ("rtx-4090", "rtx-4090d", "l40s", "a100-sxm-80gb", "h100-sxm-80gb"), (1, 4),
              "data, batch and 3-day deadline"),
    GuideTier("14B full fine-tune (mid tier)", "004 s2: 4 or 8 A100 / H100 80GB SXM in one NVLink server",
              {"model": "qwen2.5-14b", "method": "full", "data": SFT_DATA, "seq_len": 4096,
               "global_batch": {"sequences": 64}, "precision": "bf16", "optimizer": "adamw",
               "goal": {"deadline_days": 7, "procurement": "buy"}},
              ("a100-sxm-80gb", "h100-sxm-80gb"), (4, 8), "data, batch and 7-day deadline"),
    GuideTier("70B full fine-tune (mid tier)",
              "004 FAQ: 70B full fine-tune usually 8 x 80 GB (640 GB pool); 000: one 8-GPU node or two",
              {"model": "llama-3.1-70b", "method": "full", "data": SFT_DATA, "seq_len": 4096,
               "global_batch": {"sequences": 64}, "precision": "bf16", "optimizer": "adamw",
               "goal": {"deadline_days": 7, "procurement": "buy"}},
              ("a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb"), (8, 16), "data, batch and 7-day deadline"),
    GuideTier("70B pretraining (cluster tier)",
              "000: 70B-class pretraining on 8-GPU HGX / DGX nodes with NDR400, typically 4-16 nodes",
              _pretrain("llama-3.1-70b", 1.4e12, 4096, {"tokens": 4194304}, "bf16", 90, "buy"),
              ("h100-sxm-80gb", "h200-sxm-141gb"), (32, 128),
              "1.4T tokens (20 a parameter, Hoffmann et al. 2022), 4M-token batch, 90-day deadline"),
)


def _after(catalog: Any, year: int) -> list[str]:
    """Accelerators a run starting in `year` could not have bought: launched that year or later (available_from,
    where the catalog gives one, from January of it). Excluded, not the others included: an included part is taken
    as the user's own and passes the market rules (search.candidates), which a run's catalog must not."""
    return [acc.id for acc in catalog.accelerators.values()
            if (acc.available_from or f"{acc.launch_year}-12") >= f"{year}-01"]


def _plan(job: dict[str, Any], catalog: Any) -> Any:
    try:
        return make_plan(job, catalog, top=1, build=False), None
    except TrainsizerError as err:
        return None, str(err).splitlines()[0]


def _option(plan: Any, best: bool = False) -> dict[str, Any] | None:
    """The recommended option (`best`: else the first ranked, which misses the goal, for a pinned cluster)."""
    rec = plan.recommended if plan is not None else None
    if rec is None and best and plan is not None and plan.options:
        rec = plan.options[0]
    if rec is None:
        return None
    hw = rec.hardware
    gbps = hw.network.nics_per_node * hw.network.gbps_per_nic / hw.per_node if hw.network else 0.0
    cost = rec.score.cost
    return {"acc": hw.accelerator, "count": hw.count, "nodes": hw.nodes, "days": rec.time.train_days,
            "scale": rec.scale.level if rec.scale else None, "gbps": gbps,
            "net": hw.network.id if hw.network else None, "tier": plan.tier.id if plan.tier else None,
            "cost": cost, "basis": rec.score.cost_basis, "currency": plan.goal.currency,
            "meets": rec.meets.deadline is not False and rec.meets.budget is not False,
            "offload": rec.strategy.offload, "zero": rec.strategy.zero}


def _with(job: dict[str, Any], **constraints: Any) -> dict[str, Any]:
    return {**job, "constraints": {**job.get("constraints", {}), **constraints}}


def _pinned(case: Published) -> dict[str, Any]:
    hw: dict[str, Any] = {"accelerator": case.accelerator, "count": case.gpus, "per_node": case.gpus_per_node}
    if case.nics is not None:
        hw["network"] = {"nics_per_node": case.nics[0], "gbps_per_nic": case.nics[1], "kind": case.nics[2]}
    return {**case.job, "hardware": hw}  # network not stated: the plan searches the catalog's for the pinned count


def compare(case: Published, catalog: Any) -> dict[str, Any]:
    cfg = load_config()
    pub_platform = platform_of(case.accelerator)
    pub_tier = tier_id(case.gpus, -(-case.gpus // case.gpus_per_node), cfg)
    today, err = _plan({"name": case.name, **case.job}, catalog)
    then, err_then = _plan(_with({"name": case.name, **case.job}, exclude=_after(catalog, case.started)),
                           catalog)
    own, err_own = _plan({"name": case.name, **_pinned(case)}, catalog)
    out: dict[str, Any] = {"case": case, "today": _option(today), "then": _option(then), "own": _option(own, best=True),
                           "errors": [e for e in (err, err_then, err_own) if e], "pub_tier": pub_tier}
    for key in ("today", "then"):
        o = out[key]
        if o is None:
            continue
        rec_platform = platform_of(o["acc"])
        o["platform_match"] = (rec_platform is not None and pub_platform is not None
                               and rec_platform.id == pub_platform.id)
        o["tier_match"] = o["tier"] == pub_tier
    return out


def _money(v: float | None, currency: str) -> str:
    return "no price" if v is None else f"{v / 1e6:,.2f}M {currency}"


def _line(label: str, o: dict[str, Any] | None, case: Published) -> str:
    if o is None:
        return f"  {label}: nothing satisfies the job"
    s = (f"  {label}: {o['acc']} x{o['count']}" + (f" {o['net']}" if o["net"] else "")
         + f" ({o['days']:.1f} days, {_money(o['cost'], o['currency'])} {o['basis'] or ''}, size {o['scale']})"
         + ("" if o["meets"] else " MISSES the deadline"))
    if "platform_match" in o:
        pub = case.gbps_per_gpu
        s += (f"\n      platform {'match' if o['platform_match'] else 'DIFFERS'}; tier "
              f"{'match' if o['tier_match'] else 'DIFFERS'} ({o['tier']}); size x{o['count'] / case.gpus:.2f} of "
              f"published; scale-out {o['gbps']:.0f} vs {'not stated' if pub is None else f'{pub:.0f}'} Gb/s per GPU")
    return s


def layout_of(o: dict[str, Any]) -> str:
    return f"ZeRO-{o['zero']}, offload {o['offload']}" if o["offload"] not in (None, "none") else "no offload"


def guide_compare(g: GuideTier, catalog: Any) -> dict[str, Any]:
    plan, err = _plan({"name": g.name, **g.job}, catalog)
    own, _ = _plan(_with({"name": g.name, **g.job}, include=list(g.accelerators)), catalog)
    o = _option(plan)
    out = {"guide": g, "rec": o, "error": err, "own": _option(own, best=True)}
    if o is not None:
        out["acc_match"] = o["acc"] in g.accelerators
        out["count_match"] = g.gpus[0] <= o["count"] <= g.gpus[1]
    return out


def main() -> None:
    catalog = load_catalog()
    rows = [compare(c, catalog) for c in CASES]
    print("Published runs (plan today / on the catalog of the run's year / on the published cluster pinned)")
    for r in rows:
        c = r["case"]
        print(c.name)
        print(f"  published:   {c.accelerator} x{c.gpus} ({r['pub_tier']}; {c.note}; deadline "
              f"{c.job['goal']['deadline_days']} days)")
        print(_line("today", r["today"], c))
        print(_line(f"before {c.started}", r["then"], c))
        print(_line("published cluster", r["own"], c))
        for e in r["errors"]:
            print(f"  error: {e}")
    guides = [guide_compare(g, catalog) for g in GUIDES]
    print("\nGuide tiers (the guide's parts and GPU count against the plan's recommendation)")
    for r in guides:
        g, o = r["guide"], r["rec"]
        print(f"{g.name}\n  guide: {g.guide}\n  assumed: {g.assumed}")
        if o is None:
            print(f"  recommended: nothing satisfies the job{'' if not r['error'] else ': ' + r['error']}")
            continue
        print(f"  recommended: {o['acc']} x{o['count']} ({o['days']:.1f} days, {_money(o['cost'], o['currency'])}"
              f" {o['basis'] or ''}; {layout_of(o)}); part {'named by the guide' if r['acc_match'] else 'NOT the guide'}'s; count "
              f"{'within' if r['count_match'] else 'OUTSIDE'} the guide's {g.gpus[0]}-{g.gpus[1]}")
        m = r["own"]
        if m is not None:
            print(f"  on the guide's parts: {m['acc']} x{m['count']} ({m['days']:.1f} days, "
                  f"{_money(m['cost'], m['currency'])} {m['basis'] or ''}; {layout_of(m)})"
                  + ("" if m["meets"] else " MISSES the deadline"))
    n = len(rows)

    def count(key: str, what: str) -> int:
        return sum(bool(r[key] and r[key][what]) for r in rows)

    print(f"\nplatform matches: {count('today', 'platform_match')}/{n} today, {count('then', 'platform_match')}/{n} "
          f"on the catalog of the run's year; tier matches: {count('today', 'tier_match')}/{n} today, "
          f"{count('then', 'tier_match')}/{n} then")
    own_ok = sum(1 for r in rows if r["own"] is not None and r["own"]["meets"])
    print(f"published cluster meets its deadline in the estimate: {own_ok}/{n}")
    print(f"guide tiers: part named by the guide {sum(bool(r.get('acc_match')) for r in guides)}/{len(guides)}, "
          f"count within the guide's {sum(bool(r.get('count_match')) for r in guides)}/{len(guides)}")


if __name__ == "__main__":
    main()
