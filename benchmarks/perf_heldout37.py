"""Held-out check on published fine-tuning runs that state an absolute time and a peak memory with their configuration
(added 2026-12-05, eleventh batch; nothing is fitted on them): LitGPT's own tables, LoRA / QLoRA / full fine-tuning of
1.1-40B models on one A100-SXM4-40GB (2023) and one A10G (2024). LitGPT is eager PyTorch in pure bf16 (`bf16-true`):
the rows use the estimate's nearest style, torchtune (pure bf16, SDPA), with LitGPT's loss (lm_head in 128-position
chunks, which Lightning Fabric converts to fp32 and the loop holds through the backward, F.cross_entropy on each fp32
chunk: loss_impl upcast-held).

- The resource tables: tutorials/resource-tables.md (Lightning-AI/litgpt, added by #663 at 0cc02afa, 2023-10-27, its
  figures unchanged to e567dbe8, 2024-06-04; 'Last updated 10/20/2023, Lit-GPT version: commit 8641822', PyTorch
  2.1.0+cu121, bitsandbytes 0.41.1): finetune/lora.py at 8641822 on Alpaca, batch 128, micro-batch 1 / 2 / 4, no
  quantisation or bitsandbytes NF4 (with and without double quantisation): 'Max GPU RAM' (lora.py's 'Memory used':
  torch.cuda.max_memory_allocated() / 1e9) and 'Time 1k iterations' (minutes for 1,000 micro-batches). Rows:
  benchmarks/data/heldout_2026l_finetune_litgpt.csv. The peak holds the longest training sample (lora.py's get_batch
  puts it in iteration 0 and pads the micro-batch to it). The NF4 rows without double quantisation state it
  (strategy.nf4_double_quant false; the NF4-DQ rows true: known-gaps 190).
- The config hub table: config_hub/finetune/README.md at 00af8b0d (2024-09-27), every '1xA10G' row, with
  config_hub/finetune/<model>/<method>.yaml and litgpt/finetune/ at that commit: 'Peak memory' (the same
  max_memory_allocated / 1e9) and 'Training runtime' (fit(): the epochs over Alpaca2k's 1,900 or 1,923 training
  samples, and LitGPT's periodic validation: eval_forward_batches counts its forward passes). Rows:
  benchmarks/data/heldout_2026l_finetune_litgpt_a10g.csv. The peak is taken at a micro-batch padded to the 512 cutoff.
  Their lengths are Alpaca2k's own (LitGPT's alpaca-2k.jpg: median 168 Llama 2 tokens, against the 52K Alpaca's 110;
  benchmarks/alpaca2k_lengths.py, docs/known-gaps.md 127).
  Its QLoRA rows ran NF4 without double quantisation and are scored as NF4-DQ (said in each row); three full rows whose
  printed peak is below the weights, gradients and AdamW states their config must hold are refused.
- The same table at 84a73fd0 (2024-03-27) ran Gemma 7B LoRA and QLoRA on one A100 ('1xA100'; the A10G could not hold
  the LoRA run): benchmarks/data/heldout_2026l_finetune_litgpt_a100.csv, the A10G rows' settings on the other part,
  which tells a part's error from the rows' shared assumptions (the Alpaca2k lengths).
- Gemma 2 (the A10G table's gemma2-2b / gemma2-9b rows) runs eager attention: at 00af8b0d
  CausalSelfAttention.scaled_dot_product_attention skips SDPA when attention_logit_softcapping is set ("with
  softcapping we cannot use SDPA": q @ k.mT, tanh softcap, an explicit causal mask, fp32 softmax cast back, @ v), and
  litgpt/config.py sets it (50.0) for Gemma-2-2b and 9b: those rows state `flash_attention` false (the score matrix
  materialised, known-gaps 103 (h)).

Columns: finetune_heldout.csv's (each row goes through finetune_heldout.row_cases, the public job path) plus
`attention_kernel`, `optimizer_precision`, `minutes`, `samples_timed` (the samples the minutes cover) and `refused`
(the reason a stated row is not estimated), `nf4_dequant_dtype` and `lora_impl` (litgpt-2023: Lit-GPT before v0.3.1,
whose LoRAQKVLinear builds its padding index from a Python list every forward; litgpt after it: docs/known-gaps.md
104), (A10G) `flash_attention` and `lora_dropout` (the dropout each row's lora.py / config yaml sets: 0.05, Gemma
0.1; 104 (d)), (2024) `eval_interval` (the yaml's eval.interval, optimizer steps) and `val_samples` (Alpaca2k's 2,000
less the trained); `peak_mem` is the published GB (1e9 B) of allocated memory
(`GB-allocated`) or OOM. Every setting the tables do not state is in the row's `assumed`. Two figures a row:
- peak_gib: the published GB in GiB against the estimate less the CUDA context, NCCL buffers and fragmentation
  (finetune_heldout's GiB-active basis: max_memory_allocated counts none of them); the job runs every sample at
  seq_len (the longest, which the peak holds);
- samples_s: samples_timed over the published minutes against samples_timed over the estimate's time for them (the
  training steps, and the 2024 rows' validation micro-batches at the estimate's forward), the samples' lengths drawn
  as the row states (avg_tokens, length_sigma, max_tokens: unpacked, each micro-batch padded to its longest; the
  histogram LitGPT publishes of each row's data set, scaled per tokenizer).
A row the table prints as OOM is checked as a fit (metric 'fits', measured 0): the estimate should not fit the card
either; it is reported, not put in a MAPE.

Sign: (predicted - measured) / measured, + = predicted too fast (samples/s) or too much memory (GiB).

Run: python benchmarks/perf_heldout37.py   (--convexity: also length_convexity per row, ~1 minute)
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

import finetune_heldout as fh
from harness import Case, mape, print_case_rows, print_totals, refusals_said, scored
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.step_time import step_time_arrays

DATA = Path(__file__).resolve().parent / "data"
# the tables: resource-tables.md (A100 40GB, Lit-GPT 8641822), config_hub/finetune/README.md (A10G, 2024-09) and
# that table's March 2024 A100 rows
FILES = (DATA / "heldout_2026l_finetune_litgpt.csv", DATA / "heldout_2026l_finetune_litgpt_a10g.csv",
         DATA / "heldout_2026l_finetune_litgpt_a100.csv")
MODELS = DATA / "heldout_models.yaml"
GB = 1e9  # the tables' GB: lora.py divides max_memory_allocated by 1e9


# the rows, in file order, and their architectures (finetune_heldout.Batch); the cases stay this file's: LitGPT's own
# step (docs/known-gaps.md 257 (b))
BATCH = fh.Batch(FILES, (MODELS,))
rows, models = BATCH.rows, BATCH.models


def _table(r: dict[str, str]) -> str:
    """'1 A100 40GB' from the row's source 'Lit-GPT resource tables (1 A100 40GB)'."""
    return r["source"].rsplit(" (", 1)[1].rstrip(")")


def memory_row(r: dict[str, str]) -> dict[str, str]:
    """The row as finetune_heldout scores its memory: every sample at seq_len (the longest, which the peak holds),
    the published GB in GiB on the allocated basis (GiB-active), no time."""
    out = dict(r, avg_tokens="", length_sigma="", max_tokens="", tokens_per_s="")
    if r["peak_mem_unit"] != "GB-allocated":
        raise ValueError(f"{r['id']}: peak_mem_unit {r['peak_mem_unit']!r} is not GB-allocated")
    out.update(peak_mem=f"{float(r['peak_mem']) * GB / GIB:.6f}", peak_mem_unit="GiB-active")
    return out


def _first(out: dict, key: str) -> float:
    return float(np.asarray(out[key]).reshape(-1)[0])


SANITY_BATCHES = 2  # fit()'s "Verifying settings" validate(max_iters=2) before the loop (lora.py / full.py, 00af8b0d)
EVAL_MAX_ITERS = 100  # every config hub yaml's eval.max_iters
NEW_TOKENS = 100  # every config hub yaml's eval.max_new_tokens: generate_example's tokens after each validation


def evals(r: dict[str, str]) -> int:
    """Validations inside the timed fit() of a config-hub row: one every eval_interval optimizer steps; 0 where the
    row states no eval_interval (the 2023 table, timed over 1,000 iterations)."""
    if not r.get("eval_interval"):
        return 0
    return int(r["samples_timed"]) // int(r["global_batch_seqs"]) // int(r["eval_interval"])


def eval_forward_batches(r: dict[str, str]) -> int:
    """Validation micro-batches inside the timed fit(): validate() over the whole validation set (eval.max_iters 100
    covers it) at each of `evals`, and the sanity check's two."""
    if not evals(r):
        return 0
    per_eval = -(-int(r["val_samples"]) // int(r["micro_batch"]))
    if per_eval > EVAL_MAX_ITERS:
        raise ValueError(f"{r['id']}: {per_eval} validation micro-batches, more than eval.max_iters {EVAL_MAX_ITERS}")
    return evals(r) * per_eval + SANITY_BATCHES


def _forward_s(r: dict[str, str], cat, archs: dict, **row) -> tuple[float, dict]:
    """One micro-batch's forward of the row, changed by `row`, and the step's outputs: the GPU's (step_time
    'forward_compute' / micro-batches: the layers, the LM head and the loss) against the host's issue of every layer's
    kernels (_host_forward_s), combined as the estimate combines them in a training step."""
    sc = fh._scenario(dict(r, **row), cat, archs)
    out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    gpu_s = _first(out, "forward_compute") / _first(out, "micro_batches")
    k = load_constants()
    q = k.host_gpu_blend_norm
    return (gpu_s**q + _host_forward_s(sc.model.layers) ** q) ** (1.0 / q), out


def _host_forward_s(layers: int) -> float:
    """Host seconds to issue one eager forward: each decoder layer's kernels at the estimate's floor per layer and
    pass (perf_constants.yaml gemm.host_s_per_layer_pass, the figure the training step's host term uses for its
    forward), soft-maximised with the GPU's time at the estimate's host_gpu_blend_norm (step_time._host_excess). A
    lower bound: the adapters' own launches, the sampling ops and generate()'s token.item() each token
    (litgpt/generate/base.py generate_fn at 00af8b0d) are not counted."""
    return layers * load_constants().host_s_per_layer_pass


def predicted_samples_s(r: dict[str, str], cat, archs: dict) -> float:
    """samples_timed over the time the estimate gives fit(): the training steps; each validation micro-batch at the
    forward of a training one (same lengths); each generate_example as NEW_TOKENS forwards of one position (KV-cached
    decoding: every weight read for each token; the prompt's prefill and bitsandbytes' 4-bit inference kernel not
    told apart). Both forwards no faster than the host issues them (_forward_s: a one-position forward is
    host-bound where the weights stream faster than the host issues the layers). Checkpoint saves are not counted (docs/known-gaps.md 127, 139)."""
    fwd_s, out = _forward_s(r, cat, archs)
    train_s = float(r["samples_timed"]) / float(r["global_batch_seqs"]) * _first(out, "step_s")
    eval_s = eval_forward_batches(r) * fwd_s
    if evals(r):
        token_s, _ = _forward_s(r, cat, archs, avg_tokens="", length_sigma="", max_tokens="", seq_len="1",
                                micro_batch="1", global_batch_seqs="1")
        eval_s += evals(r) * NEW_TOKENS * token_s
    return float(r["samples_timed"]) / (train_s + eval_s)


STRATA = 24  # equal-probability strata of a micro-batch's padded length (length_convexity)


def length_convexity(r: dict[str, str], cat, archs: dict, strata: int = STRATA) -> float:
    """Diagnostic, not in the score (known-gaps 127 (e)): the row's step time averaged over its micro-batches' padded
    lengths, E[T(max of b lengths)], over the step time the estimate gives, T at E[max of b] (step_time._rows). The
    max of b lognormal lengths has the quantile Q(u^(1/b)); each of `strata` equal-probability strata is run at its
    midpoint as a job whose every sample is that long. Above 1 where short micro-batches sit on a floor (every weight
    read, the host's launches) that the average one clears."""
    mean, sigma = float(r["avg_tokens"]), float(r["length_sigma"])
    cut, b = float(r["max_tokens"] or r["seq_len"]), int(r["micro_batch"])
    z = np.array([NormalDist().inv_cdf(((j + 0.5) / strata) ** (1.0 / b)) for j in range(strata)])
    lengths = np.minimum(mean * np.exp(sigma * z - 0.5 * sigma * sigma), cut)
    each = [_first(_forward_s(r, cat, archs, avg_tokens=f"{x:.3f}", length_sigma="0")[1], "step_s") for x in lengths]
    return float(np.mean(each)) / _first(_forward_s(r, cat, archs)[1], "step_s")


def row_cases(r: dict[str, str], cat, archs: dict) -> list[Case]:
    """The row's peak GiB and minutes, its OOM check, or one refused case."""
    table = _table(r)
    if r["refused"]:
        return [Case(r["id"], table, "refused", 0.0, skipped=r["refused"])]
    if r["peak_mem"] == "OOM":
        sc = fh._scenario(dict(r, avg_tokens="", length_sigma="", max_tokens=""), cat, archs)
        est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
        return [Case(r["id"], table, "fits", 0.0, float(est.per_gpu_bytes <= sc.system.memory_gib * GIB))]
    out = [Case(c.row_id, table, c.metric, c.measured, c.predicted, skipped=c.skipped)
           for c in fh.row_cases(memory_row(r), cat, archs)]
    if any(c.metric == "refused" for c in out):
        return out
    # the published minutes as a rate (samples_timed over them), so + = predicted too fast as in the other benchmarks
    measured = float(r["samples_timed"]) / (float(r["minutes"]) * 60.0)
    out.append(Case(r["id"], table, "samples_s", measured, predicted_samples_s(r, cat, archs)))
    return out


def cases() -> list[Case]:
    cat, archs = load_catalog(), models()
    return refusals_said(rows(), lambda r: row_cases(r, cat, archs), _table)



def main() -> None:
    cs = cases()
    print("LitGPT resource tables (Lit-GPT 8641822, bf16-true; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric != "fits"], 36, "7.3f")
    print("\nrows the table prints as OOM (the estimate should not fit the card either):")
    for c in cs:
        if c.metric == "fits":
            print(f"  {c.row_id:36s} measured OOM  predicted {'fits' if c.predicted else 'OOM'}")
    method = {r["id"]: r["method"] for r in rows()}
    print("\nper table, method and figure (MAPE, median, worst):")
    for table in dict.fromkeys(c.source for c in cs):
        for how in ("lora", "qlora", "full"):
            for metric in ("samples_s", "peak_gib"):
                g = [c for c in scored(cs, metric) if c.source == table and method[c.row_id] == how]
                if g:
                    worst = max(g, key=lambda c: abs(c.err))
                    print(f"  {table:20s} {how:5s} {metric:9s} n={len(g):2d} MAPE {mape(g):5.1f}% median "
                          f"{100 * float(np.median([c.err for c in g])):+6.1f}%  worst {worst.row_id} "
                          f"({100 * worst.err:+.1f}%)")
    refused = [c for c in cs if c.skipped]
    oom = [c for c in cs if c.metric == "fits"]
    print(f"refused or predicted not to fit: {len(refused)} row(s); OOM rows agreeing: "
          f"{sum(c.predicted == c.measured for c in oom)} of {len(oom)}")
    print_totals("perf_heldout37", cs)
    if "--convexity" in sys.argv[1:]:
        print("\nstep time over the padded lengths' strata / at their mean (length_convexity; not in the score):")
        cat, archs = load_catalog(), models()
        for r in rows():
            if not r["refused"] and r["peak_mem"] != "OOM":
                print(f"  {r['id']:42s} micro-batch {r['micro_batch']}  {length_convexity(r, cat, archs):.3f}")


if __name__ == "__main__":
    main()
