"""Held-out check on published runs added 2026-12-03 (third batch; nothing is fitted on them): PyTorch-native stacks
(torchtitan with TorchAO's Float8 / MXFP8 on Blackwell, H100 and MI300X, torchtitan's DeepEP on H100, torchtitan's 2026
defaults on GB200), which no other benchmark holds.

Data: benchmarks/data/heldout_2026d.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job, so a
row reads as a user's job file; every assumed setting is in its `assumed` column):
- TorchAO's MX README, "Training e2e benchmarks on NVIDIA B200" (pytorch/ao torchao/prototype/mx_formats/README.md,
  PR 2777, 2025-08-15): Llama 3 8B on one host of 8 "power limited" B200, torchtitan at 6fc499f6 (FSDP2 over 8, local
  batch 1 x 8,192, per-op SAC, torch.compile), bf16 and four low-precision recipes (Float8 tensorwise with the float8
  all-gather, MXFP8 through cuBLAS with the scale rounded down or up, Float8 rowwise): median tokens/s and the logged
  peak memory (torchtitan's max_reserved_gib). The power limit, "power limited" in the README, was "limited to 750W" in
  the PR's first wording (benchmarks/data/b200_750w_overlay.yaml); the rows carry `confidence` low. They state
  sac_saves_attention false: that torchtitan's per-op SAC kept no cuDNN attention (docs/known-gaps.md 116).
- torchtitan's MXFP8 documentation (docs/mxfp8.md, PR 2096, 2025-12-03; its configuration list also in TorchAO's
  moe_training README): Llama 4 Scout on a GB200 cluster, bf16 and MXFP8 (routed experts' grouped GEMMs and most
  linears), FSDP + EP 16, no activation checkpointing, torch.compile. The two lists of that run disagree (512 vs 256
  GPUs, local batch 10 vs 1): 256 GPUs and local batch 1 are taken, the only reading whose memory fits (PyTorch's
  later blog on the same model and cluster, a run with full AC, states 64 nodes / 256 devices and local batch 1); `low`.
- torchtitan PR 2107 "Integrate DeepEP to torchtitan" (merged 2025-12-17 as 36a4b6942, whose commit message holds the
  PR text): DeepSeek-V3 671B on 512 H100 (64 nodes), FSDP 64 x PP 8 (Interleaved1F1B) x EP 32, local batch 16 x 4,096,
  full AC, compile, forced load balance; one logged line each with DeepEP and with the standard all-to-all: tokens/s
  and peak memory (`medium`: the layout is stated in full, the network is not).
- torchtitan PR 3105 (FSDP symmetric memory; merged 2026-05-26 as 58b034444): Llama 3 8B, Qwen3 32B and GPT-OSS 20B
  on 4 GB200 (one tray), FSDP 4, each model's default config of that commit (local batch, sequence, AC, chunked
  loss), torch.compile on and off; the symm_mem off column (`medium`).
- TorchAO's float8 README "Training benchmarks" (pytorch/ao, PR 1793 2025-03-12 for 8 H100, PR 2736 2025-08-11 for
  8 MI300X): Llama 3 8B in the same single-host torchtitan setting as the MX rows (FSDP 8, 1 x 8,192, per-op SAC,
  compile), bf16 / Float8 tensorwise with the float8 all-gather / Float8 rowwise: tokens/s and peak memory. The H100
  variant and power are not stated: the team's Grand Teton H100 (96 GB, 500 W) taken, `low`; MI300X at stock, `medium`.
  The MI300X rowwise_with_gw_hp row is left out (the weight-gradient GEMM in bf16 is not a job setting).
Left out (the source does not state enough to run, docs/known-gaps.md 57):
- PyTorch + Nebius, DeepSeek-V3 671B on 256 B200 with torchtitan (651 / 859 / 918 tokens/s a GPU: BF16, + DeepEP,
  + MXFP8 grouped GEMMs; PyTorch blog, 2026-03): the layout, batch and recompute of those runs were not readable here.
- AMD + PyTorch, DeepSeek-V3 671B and Llama 4 Scout on 128-1,024 MI325X with torchtitan and Primus-Turbo (PyTorch blog
  "Efficient MoE Pre-training at Scale with TorchTitan", 2025-12-01): speed-ups and scaling efficiency only, no
  per-GPU rate read.
- The Crusoe B200 MXFP8 blog (Llama 3 70B, HSDP2 + CP 2 on up to 1,856 B200): MXFP8 / BF16 speed-ups (1.22-1.28x)
  without the rates.
- TorchAO's 4-B200 Llama 4 Scout runs: a 2-layer model (48 -> 2 layers to fit one host), not a preset.
- NousResearch torchtitan PR 19 (Qwen3-30B-A3B with DeepEP on 8-128 B200, 13,856-14,796 tokens/s a GPU): sequence
  length and the strong-scaling batch not readable; torchtitan commit e4b1220d7 (Qwen3-32B on "2x GB200", FlexAttention
  document masks): GPU count ambiguous (2 GPUs cannot hold its FSDP states).

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's time breakdown,
the FP8 / BF16, DeepEP / all-to-all and compile / eager gains at one layout measured and modelled, refused rows (each a bug: these runs were made) and rows whose
measured run the memory estimate says does not fit.

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for memory + = predicted too large.

Run: python benchmarks/perf_heldout28.py
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import Case, mape

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026d.csv"
BATCH = ph.Batch((DATA,))
rows, run_all = BATCH.rows, BATCH.run_all
BREAKDOWN = ("compute", "tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_bubble", "pp_comm", "optimizer")


def cases() -> list[Case]:
    return [c for c, _, _ in run_all()]


def by_source(cs: list[Case]) -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = defaultdict(list)
    for c in cs:
        out[c.source].append(c)
    return dict(out)


# settings a strategy_extra option brings with it in the framework's code: torchtitan's DeepEP backend at 1a36996b
# dispatches the TP group's whole token set (moe_tp_token_split false), its all-to-all a TP rank's share; torchtitan's
# compile at 58b034444 covers the MoE glue (moe_eager_glue false), which its eager run keeps (docs/known-gaps.md 98)
COMPANIONS = {"moe_dispatcher": ("moe_tp_token_split",), "torch_compile": ("moe_eager_glue",)}


def option_pairs(run: list[tuple[Case, dict[str, Any], dict[str, str]]], key: str, on: str,
                 off: str) -> list[tuple[str, float, float]]:
    """(row with key=on, measured, predicted throughput over the row with key=off) for time rows of one source that
    differ only in that strategy_extra setting: what it gains at one layout (moe_dispatcher flex over alltoall:
    DeepEP over the all-to-all; torch_compile true over false). Settings that come with the key's value in the
    framework's code (COMPANIONS) may differ too."""
    skip = (key, *COMPANIONS.get(key, ()))

    def rest(r: dict[str, str]) -> tuple:
        extra = ";".join(s for s in r["strategy_extra"].split(";") if s.split("=")[0] not in skip)
        return (r["source_key"], r["metric"], extra) + tuple(r[k] for k in ph.LAYOUT if k != "strategy_extra")
    done = [(c, r) for c, res, r in run if res and c.metric not in ph.MEMORY_METRICS]
    out = []
    for c, r in done:
        if f"{key}={on}" not in r["strategy_extra"]:
            continue
        for base, br in done:
            if f"{key}={off}" in br["strategy_extra"] and rest(br) == rest(r):
                out.append((r["id"], c.measured / base.measured, c.predicted / base.predicted))
    return out


def breakdown(result: dict[str, Any]) -> str:
    """The estimate's step split, in ms (parts over 0.5 ms)."""
    t = result["time"]
    parts = [(k, 1e3 * float(t["breakdown_s"].get(k, 0.0))) for k in BREAKDOWN]
    return f"step {1e3 * float(t['step_s']):.0f} ms = " + ", ".join(f"{k} {v:.0f}" for k, v in parts if v >= 0.5)


def print_rows(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    print(f"{'row':62s} {'metric':20s} {'published':>10s} {'predicted':>10s} {'error':>8s}")
    for c, result, _ in run:
        pred = f"{c.predicted:10.4g}" if not c.skipped else f"{'-':>10s}"
        err = f"{c.err:+8.1%}" if not c.skipped else f"{'-':>8s}"
        fit = "" if not result else ("" if result["memory"]["fits"] else "  DOES NOT FIT")
        print(f"{c.row_id:62s} {c.metric:20s} {c.measured:10.4g} {pred} {err}{fit}  {c.skipped or ''}")


def main() -> None:
    run = run_all()
    print_rows(run)
    print_summary(run, "Held-out PyTorch-native runs (nothing fitted)", 44)
    print("FP8 / BF16 throughput at one layout (measured vs predicted, and how far the modelled gain is off):")
    triples = [(c, "", r) for c, _, r in run]
    for row_id, mb, meas, pred in ph.precision_pairs(triples):
        print(f"  {row_id:58s} micro-batch {mb:>2s}  measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    print_pairs_and_refusals(run)


def print_summary(run: list[tuple[Case, dict[str, Any], dict[str, str]]], title: str, width: int) -> None:
    """The time MAPE over the run, each source's MAPE and worst row (names padded to `width`), and the five worst time
    rows with the estimate's step (perf_heldout29 / 30 print the same)."""
    cs = [c for c, _, _ in run]
    timed = [c for c in cs if c.metric not in ph.MEMORY_METRICS]
    print(f"\n{title}: time n={len(timed)} MAPE {mape(timed):.1f}%")
    for source, group in by_source(cs).items():
        n_ok = sum(not c.skipped for c in group)
        worst = max((abs(c.err) for c in group if not c.skipped), default=math.nan)
        print(f"  {source:{width}s} n={n_ok:2d}/{len(group):2d} MAPE {mape(group):5.1f}%  worst {100 * worst:5.1f}%")
    print("worst time rows, with the estimate's step:")
    done = [(c, res) for c, res, _ in run if not c.skipped and c.metric not in ph.MEMORY_METRICS]
    for c, res in sorted(done, key=lambda cr: -abs(cr[0].err))[:5]:
        print(f"  {c.row_id:58s} {c.err:+7.1%}  {breakdown(res)}")


def print_pairs_and_refusals(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    """The DeepEP / all-to-all and compile / eager gains at one layout, refused rows and rows the memory estimate
    says do not fit (perf_heldout29 prints the same)."""
    for title, key, on, off in (("DeepEP (flex) / all-to-all", "moe_dispatcher", "flex", "alltoall"),
                                ("torch.compile on / off", "torch_compile", "true", "false")):
        print(f"{title} throughput at one layout (measured vs predicted):")
        for row_id, meas, pred in option_pairs(run, key, on, off):
            print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    refused = [c for c, _, _ in run if c.skipped]
    print(f"refused rows (runs that were made: each is a bug): {len(refused)}")
    for c in refused:
        print(f"  {c.row_id}: {c.skipped}")
    unfit = [c.row_id for c, res, _ in run if res and not res["memory"]["fits"]]
    print(f"rows whose measured run the memory estimate says does not fit: {len(unfit)}")
    for rid in unfit:
        print(f"  {rid}")


if __name__ == "__main__":
    main()
