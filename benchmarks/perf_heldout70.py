"""Held-out check on published runs added 2026-12-07 (forty-fourth batch: MoE pre-training on AMD Instinct under the
two stacks AMD ships, nothing fitted on them), one source no benchmark held for these runs, AMD-AGI/Primus:

(1) Primus's TorchTitan backend (PyTorch-native: FSDP2 + expert parallel, torch.compile, Primus-Turbo kernels):
DeepSeek-V3 16B (torchtitan's deepseek_v3 '16B' flavor, the DeepSeek-V2-Lite shape) BF16 on one host of 8 MI325X (pull
request 1022's 26.4 baseline, 18,143 tokens/s a GPU) and of 8 MI355X (pull request 935: ~28k tokens/s a GPU at ~66% of
the HBM after its two memory patches; the out-of-box run, whose forced balance torchtitan v0.2.2 silently dropped, is
listed as refused). The first pytorch/moe rows on CDNA.
(2) Primus's Megatron-LM backend: Mixtral 8x7B and 8x22B on 4 nodes (pull request 55: the TFLOP/s a GPU of the old and the
new example configs, 260 -> 390 and 220 -> 290), megatron/moe on CDNA beside perf_heldout30's DeepSeek rows; the GPU is
not named (MI300X taken, the `assumed` column says why).
(3) The same backend: Qwen3-30B-A3B BF16 and FP8 on one host of 8 MI355X (pull request 1011: the shipped configs'
published tokens/s a GPU and the tuned configs' measured ones, no recompute and a larger FP8 batch), Turbo DeepEP, bf16
main gradients and Adam moments.

Data: benchmarks/data/heldout_2027r_primus_amd.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job; every setting the source does not state is in the row's `assumed` column with the config and commit it was read
from) plus `refused` (why a row is not estimated); Mixtral 8x22B in benchmarks/data/heldout_2027r_models.yaml.

Metrics: tokens_per_s_per_gpu (torchtitan's tps), peak_memory_gib (torchtitan's max_reserved), and
primus_megatron_tflops_per_gpu: Megatron's logged TFLOP/s a GPU as Primus computes it (megatron_moe_flops over the
estimated step and the GPUs).

Printed: each row (published, predicted, error, the estimate's step terms or memory items), memory fits, each source's
figures, the new / old config ratios of pull requests 55 and 1011 (measured and predicted), the batch's.

Sign: (predicted - published) / published of the row's metric (a rate: + = predicted too fast; a peak: + = predicted
too large).

Run: python benchmarks/perf_heldout70.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout69 as p69
from harness import Case, print_fits
from trainsizer.estimate import flops as F

DATA = Path(__file__).resolve().parent / "data"
PRIMUS_ROWS = DATA / "heldout_2027r_primus_amd.csv"
MODELS = DATA / "heldout_2027r_models.yaml"
# (title, the row-id prefix of a source), printed in this order
SOURCES = (("(1) Primus TorchTitan DeepSeek-V3 16B on MI325X / MI355X (2026-07 / 08)", "primus_titan_"),
           ("(2) Primus Megatron-LM Mixtral on 4 nodes (2025-05)", "primus_megatron_2025-05_"),
           ("(3) Primus Megatron-LM Qwen3-30B-A3B on 8 MI355X (2026-08)", "primus_megatron_2026-08_"))


def megatron_moe_flops(batch: float, seq: float, model: Any) -> float:
    """Megatron's model FLOPs a step for a model whose every layer is MoE with no shared expert, as Primus logged them
    (AMD-AGI/Primus primus/modules/trainer/megatron/trainer.py num_floating_point_operations / transformer_flops at
    ef66f643, Megatron-LM's training.py of 2025): 12 b s L h^2 ((1 + g/a + s/h) + 1.5 k f_e / h + V / (2 L h)), i.e.
    NeMo's Llama formula with the MLP width k x f_e (the routed experts' FFN times the top-k)."""
    return F.nemo_llama_flops(batch, seq, model.layers, model.hidden, model.kv_heads, model.heads,
                              model.experts_per_token * model.expert_ffn, model.vocab)


def predict(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    """The row's figure from the estimate: Primus's logged TFLOP/s a GPU (megatron_moe_flops over the estimated step),
    else perf_heldout.predicted_metric."""
    if row["metric"] != "primus_megatron_tflops_per_gpu":
        return ph.predicted_metric(row, result, model)
    flops = megatron_moe_flops(int(row["global_batch_seqs"]), int(row["seq_len"]), model)
    return flops / float(result["time"]["step_s"]) / int(row["gpu_count"]) / 1e12


BATCH = ph.Batch((PRIMUS_ROWS,), (ph.MODELS, MODELS), predict)
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data refuses (its `refused` column) is listed
part, timed, peaks = p69.part, p69.timed, p69.peaks  # a source's rows, the time rows, the memory rows


def row_line(c: Case, result: dict[str, Any], r: dict[str, str]) -> str:
    """A row as printed: refused with its reason, a memory row with the estimate's items over 1 GiB, a rate with the
    estimate's step terms over 5 ms."""
    if c.skipped:
        return f"  {c.row_id:58s} {c.skipped}"
    head = f"  {c.row_id:58s} {c.measured:8.4g} {c.predicted:8.4g} ({100 * c.err:+6.1f}%) {r['metric']}"
    if r["metric"] in ph.MEMORY_METRICS:
        items = ", ".join(f"{k} {v['gib']:.1f}" for k, v in result["memory"]["items"].items() if v["gib"] >= 1.0)
        return f"{head}; {items}"
    terms = ", ".join(f"{k} {v:.2f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.005)
    return f"{head}; step {result['time']['step_s']:.2f} s: {terms}"


def config_ratios(run: ph.Run) -> list[tuple[str, float, float]]:
    """(run, measured, predicted) new over old figure of each model and precision whose config a pull request changed:
    pull request 55's Mixtral configs (`_old_` -> `_new_`, TFLOP/s a GPU) and 1011's Qwen3-30B-A3B configs (`_shipped_`
    -> `_tuned_`, tokens/s a GPU)."""
    got = {r["id"]: c for c, _, r in run if not c.skipped and r["id"].startswith("primus_megatron_")}
    out = []
    for rid, new in got.items():
        for before, after in (("_old_", "_new_"), ("_shipped_", "_tuned_")):
            if after in rid:
                old = next(c for k, c in got.items() if before in k and k.split(before)[0] == rid.split(after)[0])
                out.append((rid.split("primus_megatron_")[1].split(after)[0], new.measured / old.measured,
                            new.predicted / old.predicted))
    return out


def main() -> None:
    run = run_all()
    for title, prefix in SOURCES:
        lines = [row_line(c, res, r) for c, res, r in part(run, prefix)]
        print(f"{title}: published, predicted, error (held out, nothing fitted):", *lines, sep="\n")
    print("\nPR 55's new over old Mixtral configs (TFLOP/s a GPU), PR 1011's tuned over shipped Qwen3-30B-A3B configs "
          "(tokens/s a GPU): measured, predicted")
    print("\n".join(f"  {m:40s} {a:.3f} {b:.3f}" for m, a, b in config_ratios(run)))
    print_fits(fits(), "perf_heldout70")
    print("\n".join(p69.summary_lines(run, SOURCES, "perf_heldout70")))


if __name__ == "__main__":
    main()
