"""Held-out check on published runs added 2026-12-05 (twenty-first batch: fine-tuning; nothing is fitted on them):

(1) torchao's fine-tuning tutorial, section 'Float8 Quantized Fine-tuning' (pytorch/ao docs/source/eager_tutorials/
finetuning.rst at 36027d82, the table added in #2542, 2025-07-15): Llama 3.2 3B full fine-tuning under torchtune's
full_finetune_distributed on 4 H100 (FSDP2, compiled), BF16 against torchao float8 (tensorwise with and without
float8 all-gathers, rowwise): tokens/s a GPU and peak reserved memory. The experiments are torchtune PR #2546's
(1075d9cdd, 2025-04-17): '4x H100 GPUs with 94GB memory', the cleaned Alpaca for one epoch, batch 16, torch.compile.
The rowwise_with_gw_hp row is refused (no recipe keeps the weight-gradient GEMM in 16 bit).
(2) NVIDIA dgxc-benchmarking v24.11 (35a9aecc, 2024-12-13): Hugging Face + PEFT LoRA under FSDP1 on 8-512 H100,
Llama-2-70B and Mistral-7B on packed UltraChat, 'train samples per second': the Trainer's train_runtime over 30 / 100
steps, which holds an evaluation pass over the packed test splits at each epoch's end (the job's `evaluation`,
estimate.evaluation; known-gaps 171). Printed beside them (implied_rest): the measured runtime less the estimate's
steps and evaluation, times the GPUs, over the passes.
(3) AMD's ROCm blogs on one MI300X (rocm-blogs llama-lora and llama-Qlora as revised 2024-10-22): Llama-2-7B in fp32
under HF Trainer / trl SFTTrainer on guanaco-llama2-1k, batch 4: LoRA (time and memory), full fine-tuning (memory; its
time holds five checkpoint saves), QLoRA (fp32 training arguments over an fp16 4-bit compute dtype, which
bitsandbytes 0.43.2.dev0 replaces by the fp32 input's: every GEMM fp32, each fp16-dequantised weight recast; TRL's
prepare_model_for_int8_training checkpoints every layer, as the run's notebook shows; known-gaps 185). The hf style runs fp32 GEMMs at the part's full-fp32 rate (PyTorch's default
matmul precision uses no TF32 / XF32; known-gaps 170); printed beside them, a probe: the rows had their scripts
allowed TF32 (strategy.tf32 true), the rate the estimate took for every fp32 job before.

Not rows (read, said in docs/known-gaps.md 163): the Mixtral DPO blog (hours, approximate), torchtune PR #2546's Llama3-8B table (only its headline, 14.7%, is in the
stored text), axolotl PR #3969's RTX 5090 FP8 matrix (its table is not in the stored text) and the Primus / AMD
playbooks fine-tuning guides (commands, no figures).

Data: benchmarks/data/heldout_2026u_torchao_fp8_finetune.csv, heldout_2026u_dgxc_hf_lora.csv and
heldout_2026u_rocm_blogs.csv (finetune_heldout's columns with perf_heldout46's, an `overlay` column (the catalog overlay
under benchmarks/data a row runs on) and, for the dgxc and ROCm rows, `frozen_base_dtype` / `nf4_dequant_dtype`; every
setting a source does not state is named in the row's `assumed`).

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout47.py
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import caching_allocator as ca
import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, num, print_case_rows, scored, whole
from trainsizer.estimate import allocator
from trainsizer.estimate.evaluation import evaluation_s
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
TORCHAO_FP8 = DATA / "heldout_2026u_torchao_fp8_finetune.csv"
DGXC_HF = DATA / "heldout_2026u_dgxc_hf_lora.csv"
ROCM_BLOGS = DATA / "heldout_2026u_rocm_blogs.csv"
SOURCES = (TORCHAO_FP8, DGXC_HF, ROCM_BLOGS)
BATCH = fh.Batch(SOURCES, overlays=True)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
catalog = fh.overlay_catalog
BF16_ROW = "aofp8ft_3b_bf16_4xh100"


def fp8_ratios(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) tokens/s of each float8 row over the BF16 row."""
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    base = got[BF16_ROW]
    return [(k, c.measured / base.measured, c.predicted / base.predicted) for k, c in got.items()
            if k.startswith("aofp8ft") and k != BF16_ROW]


def _peak_gib(r: dict[str, str], longest: float) -> float:
    """The estimate's allocated peak on the allocator's basis (no reserved growth) with the longest sample at
    `longest` positions."""
    sc = fh._scenario(dict(r, seq_len=str(round(longest))), catalog(r["overlay"]))
    est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    return fh._memory_gib(dict(r, peak_mem_unit="GiB-allocator"), est)[1]


def longest_for_peak(r: dict[str, str]) -> float:
    """The longest sample (positions) at which the estimate's peak reaches the row's measured one: the micro-batch
    holding it sets the peak of an unpacked run (bisection; the peak grows with it)."""
    lo, hi = num(r["avg_tokens"]), 16_384.0
    for _ in range(24):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _peak_gib(r, mid) < num(r["peak_mem"]) else (lo, mid)
    return 0.5 * (lo + hi)


# alpaca-cleaned's rows; the rows' GPUs (a rank sees every 4th micro-batch of an epoch); CEWithChunkedOutputLoss's
# num_output_chunks (torchtune/modules/loss/ce_chunked_output_loss.py, as memory_constants.yaml's chunked loss)
DATASET_ROWS, RANKS, LOSS_CHUNKS = 51_760, 4, 8


def epoch_lengths(r: dict[str, str], seed: int) -> np.ndarray:
    """One rank's micro-batch lengths over one shuffled epoch: each sample's length drawn from the row's lognormal
    (avg_tokens, length_sigma), capped at the row's longest (seq_len); padded_collate_sft pads a micro-batch to its
    longest sample (unpacked)."""
    mb, sigma, longest = whole(r["micro_batch"]), num(r["length_sigma"]), num(r["seq_len"])
    mu = math.log(num(r["avg_tokens"])) - sigma * sigma / 2
    lengths = np.minimum(np.random.default_rng(seed).lognormal(mu, sigma, DATASET_ROWS), longest)
    return np.ceil(lengths[: len(lengths) // (mb * RANKS) * mb * RANKS].reshape(-1, RANKS, mb)[:, 0, :].max(axis=1))


def replayed_reserved_gib(r: dict[str, str], seed: int) -> float:
    """The caching allocator's reserved peak over one epoch's micro-batches (caching_allocator.py), each tensor sized
    from the estimate's own length-dependent items per position at the row's longest sample."""
    sc = fh._scenario(r, catalog(r["overlay"]))
    items = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes
    per = {k: float(np.ravel(items[k])[0]) / num(r["seq_len"]) for k in LENGTH_ITEMS}
    pool, layers = ca.Pool(), int(sc.model.layers)
    for n in epoch_lengths(r, seed):
        ca.chunked_loss_step(pool, int(per["layer_activations"] * n / layers), layers,
                             int(per["final_norm_and_head_input"] * n), int(per["logits"] * n / LOSS_CHUNKS),
                             LOSS_CHUNKS, int(per["loss_backward_temporaries"] * n))
    return pool.peak_reserved / 2**30


LENGTH_ITEMS = ("layer_activations", "final_norm_and_head_input", "logits", "loss_backward_temporaries")


def allocator_lines(r: dict[str, str]) -> list[str]:
    """The estimate's fixed and length-dependent parts at the row's longest sample, the multiple of the latter the
    measured reserved peak needs, and the replayed allocator's reserved for three seeded epochs (known-gaps 178)."""
    fixed, at_row = _peak_gib(r, 1.0), _peak_gib(r, num(r["seq_len"]))
    need = (num(r["peak_mem"]) - fixed) / (at_row - fixed)
    out = [f"  the estimate: fixed {fixed:.1f} GiB + length-dependent {at_row - fixed:.1f} GiB at {r['seq_len']} "
           f"positions; the measured {num(r['peak_mem']):.1f} GiB needs {need:.2f} x the length-dependent part"]
    sc = fh._scenario(r, catalog(r["overlay"]))
    est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    loss_path = sum(est.items_bytes.get(k, 0.0) for k in allocator.LOSS_PATH_ITEMS) / 2**30
    share = loss_path / (at_row - fixed)
    out.append(f"  the closed form (estimate.allocator): the loss path {loss_path:.1f} GiB ({share:.2f} of it) again for "
               f"each record row, {1 + est.allocator_growth_bytes / 2**30 / (at_row - fixed):.2f} x expected")
    for seed in range(3):
        got = replayed_reserved_gib(r, seed)
        records, longest = allocator.sequence_records(epoch_lengths(r, seed))
        form = 1 + share * (records - longest) / num(r["seq_len"])
        out.append(f"  epoch seed {seed}: the length-dependent tensors replayed reserve {got:.1f} GiB "
                   f"({got / (at_row - fixed):.2f} x; the form on this order {form:.2f} x): fixed + replayed "
                   f"{fixed + got:.1f} GiB")
    return out


def _step_s(sc) -> float:
    """The estimate's step time of a resolved scenario."""
    arrays = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(arrays["step_s"]).reshape(-1)[0])


def tf32_rate_tokens(r: dict[str, str]) -> float:
    """A probe, not a score: the fp32 row's tokens/s had its script allowed TF32 / XF32 (strategy.tf32 true), the rate
    the estimate took for every fp32 job before known-gaps 170; PyTorch runs fp32 matmuls at full precision unless a
    script sets torch.backends.cuda.matmul.allow_tf32 (False by default since 1.12) and these scripts do not."""
    j = job(r)
    sc = resolve_job({**j, "strategy": {**j["strategy"], "tf32": True}}, catalog(r["overlay"]))
    return fh.counted_tokens(r, sc.training) / _step_s(sc)


def implied_rest(r: dict[str, str]) -> tuple[float, float, float, int, float]:
    """(measured train_runtime s, the estimate's training steps s, its evaluation passes s, passes, the rest x GPUs /
    passes in GPU-seconds) of a dgxc row: what its train_runtime holds beside the estimate's steps and evaluation
    (estimate.evaluation), per pass over the test splits (known-gaps 171)."""
    sc = fh._scenario(r, catalog(r["overlay"]))
    step = _step_s(sc)
    samples = whole(r["global_batch_seqs"]) * whole(r["max_steps"])
    runtime = samples * num(r["avg_tokens"]) / num(r["tokens_per_s"])
    train, passes = sc.steps * step, sc.training.eval_passes
    ev = evaluation_s(sc.model, sc.training, sc.system, sc.strategy)
    return runtime, train, ev, passes, (runtime - train - ev) * whole(r["gpu_count"]) / passes


def _eval_lines() -> list[str]:
    return [f"  {r['id']:38s} runtime {rt:6.0f} s: steps {tr:6.0f} s, {n} evaluation pass(es) {ev:6.0f} s; the rest "
            f"{gs / 1e3:6.1f}k GPU-s a pass" for r in rows() if r["id"].startswith("dgxc")
            for rt, tr, ev, n, gs in [implied_rest(r)]]


def rest_fit(family: str, most_gpus: int = 64) -> tuple[float, float, float]:
    """The rest a pass of a dgxc family's rows (implied_rest, in seconds a pass) fitted over its rows up to `most_gpus`
    GPUs as c + W / GPUs (least squares): (c s, W GPU-s, W over the evaluation samples and the model's layers, ms a
    sample and layer). c is what the GPUs do not divide, W what they do (known-gaps 183 (a), (b))."""
    rs = [r for r in rows() if r["id"].startswith("dgxc") and family in r["id"] and whole(r["gpu_count"]) <= most_gpus]
    gpus = np.array([whole(r["gpu_count"]) for r in rs], float)
    wall = np.array([implied_rest(r)[4] for r in rs]) / gpus
    (c, w), *_ = np.linalg.lstsq(np.vstack([np.ones_like(gpus), 1.0 / gpus]).T, wall, rcond=None)
    sc = fh._scenario(rs[0], catalog(rs[0]["overlay"]))
    return float(c), float(w), float(w / sc.training.eval_samples / sc.model.layers * 1e3)


def _fit_lines() -> list[str]:
    out = []
    for family in ("llama2_70b", "mistral_7b"):
        c, w, per = rest_fit(family)
        out.append(f"  {family:11s} c {c:5.0f} s a pass, W {w / 1e3:5.2f}k GPU-s a pass: {per:.1f} ms an evaluation "
                   f"sample and layer beyond the estimate's forward")
    return out


def main() -> None:
    cs = cases()
    print("(1) torchao's fine-tuning tutorial: Llama 3.2 3B full fine-tuning under torchtune on 4 H100, BF16 and "
          "float8 (tokens/s a GPU, peak reserved memory); (2) dgxc-benchmarking v24.11 HF LoRA rows, the runtime with its evaluation passes; "
          "(3) AMD's ROCm blogs, Llama-2-7B fp32 fine-tuning on one MI300X (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 34, "9.1f")
    print("\nper source:\n" + "\n".join(p43.source_lines(cs)))
    print("\nfloat8 over BF16 tokens/s (measured vs predicted):")
    print("\n".join(f"  {k:34s} measured {m:.3f} predicted {p:.3f}" for k, m, p in fp8_ratios(cs)))
    r = next(x for x in rows() if x["id"] == BF16_ROW)
    print(f"\nthe longest sample the BF16 row's {r['peak_mem']} GiB reserved needs in the estimate: "
          f"{longest_for_peak(r):.0f} positions (rows: {r['seq_len']}; known-gaps 163 (a))")
    print("the caching allocator replayed over an epoch's padded micro-batches (known-gaps 178):")
    print("\n".join(allocator_lines(r)))
    print("\nprobe, fp32 rows with TF32 / XF32 allowed (the blogs leave PyTorch's full fp32; known-gaps 170):")
    print("\n".join(f"  {c.row_id:34s} measured {c.measured:7.1f} predicted {c.predicted:7.1f}, with tf32 "
                    f"{tf32_rate_tokens(r):7.1f}" for c in scored(cs, "tokens_s") for r in rows()
                    if r["id"] == c.row_id and r["precision"] == "fp32"))
    print("\ndgxc rows: train_runtime less the estimate's training steps and evaluation passes, x GPUs / passes:")
    print("\n".join(_eval_lines()))
    print("the rest a pass fitted over 8-64 GPUs as c + W / GPUs (W: work the GPUs divide; known-gaps 183 (a), (b)):")
    print("\n".join(_fit_lines()))
    print(fh.said_together(cs))
    print("\n" + p43.summary("perf_heldout47", cs))


if __name__ == "__main__":
    main()
