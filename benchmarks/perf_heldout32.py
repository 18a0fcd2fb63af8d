"""Held-out check on published runs added 2026-12-04 (seventh batch; nothing is fitted on them): the China-market parts
our users buy (A800, H800, Ascend 910B) and the stacks published in China that run them, where the held-out set had no
row (docs/known-gaps.md 78). Each row is stated as the launch scripts of the run wrote it.

Data: benchmarks/data/heldout_2026h_*.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job;
every assumed setting is in its `assumed` column; Qwen1.5 shapes in heldout_models.yaml):
- heldout_2026h_flagperf.csv: BAAI's FlagPerf (FlagOpen/FlagPerf, training/nvidia/<case>/README.md '性能指标' tables,
  2023-12 .. 2024-06; tokens/s a GPU as each case's run_pretraining.py computes it from the logged step): Llama 3 8B
  under Megatron-Core core_v0.6.0 on one DGX A800 at seven PP x DP x TP layouts of one job (global batch 512 x 8,192,
  micro-batch 1, no recompute, no TP / gradient-reduce overlap); the same job on 8 / 16 / 440 H100 (TP 2, BF16 and FP8
  delayed scaling) and Llama 3 70B on 64 H100; Llama 2 70B under FlagScale (BAAI's Megatron-LM fork) on 32 H800;
  Llama 2 7B on 8 A800 / H800 as a Hugging Face model on DeepSpeed ZeRO-3, and under Megatron-DeepSpeed ZeRO-1 (its
  launch script's '#' drops its last flags: see `assumed`).
- heldout_2026h_swift.csv: ModelScope ms-swift's Megatron-SWIFT benchmark (docs, 2025-03 / 2025-06): Qwen2.5-14B full
  SFT on 8 A800 at 8K (Megatron-SWIFT TP 4, HF + DeepSpeed ZeRO-2 and ZeRO-3) and Qwen3-30B-A3B on 16 A800 (TP 2 x EP
  8, the network not stated: confidence low); seconds a step. Qwen1.5-MoE-A2.7B on 8 A800 (TP 2 x EP 4, 2025-04-28,
  added 2026-12-05): the same stack's MoE on one host, the control that separates the 16-A800 row's network from the
  stack (docs/known-gaps.md 89).
- heldout_2026h_ascend.csv: Huawei's ModelLink (now MindSpeed-LLM) README table, Atlas 900 A2 PODc (Ascend 910B):
  Llama 2 7B-70B, Llama 3 8B / 70B, Qwen1.5 7B-72B, Mistral 7B at 32K pretraining on 8-64 NPUs, tokens/s a processor (the 910B bin
  and the network are not stated: confidence low).
Left out (the layout is not stated or does not hold): FlagPerf's Llama 2 70B fp32 row (TF32 or fp32 not stated), its
masked-vendor row, its Mixtral 8x7B on 32 H100 (the table's PP2DP2EP1TP8 disagrees with its script's
--expert-model-parallel-size 8, which DP 2 cannot hold) and its cases whose model has no preset here (Aquila2,
Baichuan2, ChatGLM3, LLaVA; its Qwen1.5-MoE case is not read, though the model is in heldout_models.yaml since
2026-12-05); ms-swift's Qwen3-30B-A3B ZeRO-3 figure (its batch and accumulation not given) and its Qwen1.5-MoE-A2.7B
ZeRO-2 / ZeRO-3 figures (6.02 / 24.30 s/it: their swift sft commands not given); ModelLink rows whose model has no preset here (LLaMA 1, Aquila, Baichuan, Bloom, ChatGLM3, CodeLlama, InternLM,
Qwen 1, Qwen1.5 0.5B-4B, Yi, Gemma, Grok, GPT3-175B) and its Mixtral 8x7B at 32K (MoE: the script's EP not read).

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's step breakdown,
refused rows (each a bug: these runs were made), rows the memory estimate says do not fit, and the two ms-swift MoE
rows under the inputs their sources do not state (not scored; docs/known-gaps.md 89 (a)).

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for a step time + = predicted too slow.

Run: python benchmarks/perf_heldout32.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
import perf_heldout28 as p28
from harness import model_data
from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
FILES = (DATA / "heldout_2026h_flagperf.csv", DATA / "heldout_2026h_swift.csv", DATA / "heldout_2026h_ascend.csv")
BATCH = ph.Batch(FILES)
rows, run_all = BATCH.rows, BATCH.run_all


# docs/known-gaps.md 89 (a): the two ms-swift MoE rows under the inputs their sources do not state -- the busiest EP
# rank's token load over the balanced share (Training.moe_capacity_factor; aux-loss routing on real data, where the rows
# assume balance) and, for the 16-A800 row, PAI-Lingjun's documented 800 Gbit/s RDMA a node ('Platform For AI: Terms',
# Alibaba Cloud, updated 2026-04-01) as 4 x 200 Gb/s RoCE. Printed, not scored: neither input is the rows'.
SWIFT_MOE = ("swift_2025-04_a800_qwen1.5-moe-a2.7b_megatron_tp2ep4", "swift_2025-06_a800_qwen3-30b-a3b_megatron_tp2ep8")
LINGJUN_NETWORK = "nics_per_node=4;gbps_per_nic=200;kind=roce"
SWIFT_LOAD = 1.7  # the load that closes the single-host control (known-gaps 89 (a))


def swift_step_s(row: dict[str, str], load: float, network: str = "") -> float:
    """Predicted seconds a step of an ms-swift row at busiest-rank load `load`, on `network` where given."""
    job = ph.job_of({**row, "network": network or row["network"]}, model_data(ph.MODELS))
    job["moe_capacity_factor"] = load
    catalog = load_catalog([])
    return float(evaluate(resolve_job(job, catalog), catalog)["time"]["step_s"])


def print_swift_moe_inputs() -> None:
    print(f"ms-swift MoE rows, step s: measured, predicted, at a busiest-EP-rank load of {SWIFT_LOAD}, and with it on"
          " 4 x 200 Gb/s a node (unstated inputs; not scored):")
    for r in (r for r in rows() if r["id"] in SWIFT_MOE):
        across = int(r["gpu_count"]) > 8  # the network carries the all-to-all only across hosts
        lingjun = f"{swift_step_s(r, SWIFT_LOAD, LINGJUN_NETWORK):6.2f}" if across else "     -"
        print(f"  {r['id']:58s} {float(r['value']):6.2f} {swift_step_s(r, 1.0):6.2f} {swift_step_s(r, SWIFT_LOAD):6.2f}"
              f" {lingjun}")


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, seventh batch: China-market parts (nothing fitted)", 60)
    p28.print_pairs_and_refusals(run)
    print_swift_moe_inputs()


if __name__ == "__main__":
    main()
