"""The estimate's FP8 / BF16 ratio at the GEMM level against the one published per-shape table at training shapes
(issue 13; docs/known-gaps.md 96).

Whole-step FP8 / BF16 pairs (benchmarks/fp8_pairs.py) mix the linear GEMMs with attention, element-wise passes,
communication and the host. This benchmark isolates the linear GEMMs: it times, with the estimate's own functions
(compute.gemm_time, compute._fp8_casts at calibration.rates), the GEMMs Transformer Engine's GEMM profiling guide
measured, and prints the measured and modelled BF16 / FP8 time ratio of each.

Data: benchmarks/data/fp8_gemm_shapes.csv, read from NVIDIA/TransformerEngine docs/examples/gemm_profiling/
gemm_profiling.rst at 1609c890e (PR 2863, merged 2026-06-01): benchmarks/gemm/benchmark_gemm.py in model-config mode
(hidden 4,096, intermediate 16,384, 31 x 512 = 15,872 tokens) on an NVIDIA B300 SXM6 AC and an H200 NVL, each shape
timed over 100 back-to-back calls with CUDA events:
- BF16: torch.matmul of (M x K)(K x N).
- autocast: a te.Linear(K, N) forward under te.autocast, the recipe's quantization of the input and of the weight
  (a parameter: both usages) inside the timed call, no FP8 weight cache; Float8CurrentScaling, DelayedScaling,
  MXFP8BlockScaling.
- prequant: the FP8 GEMM kernel alone on pre-quantized operands (DelayedScaling is left out: TE runs it autocast).
- FBGEMM's three Llama-shape GEMMs on an H100 held at 500 W (pytorch/FBGEMM PR 2546, 2024-04-29, its description):
  bf16 torch.matmul against FBGEMM's FP8 row-scaled CUTLASS GEMM alone on quantized operands (op "gemm", its M x K x
  N; in the fp8_current column: the estimate runs row-scaled GEMMs at the per-tensor rate, fp8.recipes.rowwise), the
  part at 500 W as the estimate holds a capped part (calibration.power_clock_factor, both precisions alike).
- torchao's Float8Linear at four Llama 3 70B TP 8 linears with 16,384 tokens (pytorch/ao PR 2185, 2025-05-08, its
  description: benchmarks/float8/bench_linear_float8.py at d37019636, compiled): forward + backward (input gradient
  and weight gradient, `.sum().backward()`) of nn.Linear in bf16 against Float8Linear, tensorwise dynamic scaling of
  the input, weight and output gradient, the forward GEMM with fast accumulation, the backward ones without (torchao's
  default), mode "fwd_bwd". The PR names no GPU: an H100, read from its bf16 rates (527-585 TFLOP/s). Its output
  gradient is the ones of a sum, which compiled code may cast for less than a real gradient.
The guide prints per-shape times for the B300 forwards only; the other rows are its sums over the pass's four GEMMs,
with the shapes of benchmark_gemm.py compute_gemm_shapes (dgrad and wgrad shapes run as forwards): forward (M, H, 3H),
(M, H, H), (M, H, I), (M, I, H); dgrad K and N swapped; wgrad (K, M, N) -- tokens on the contraction axis.

Model: the BF16 time is compute.gemm_time at the part's bf16 rates; the FP8 time is the same at the recipe's FP8
rates (tensorwise for current scaling), plus, under autocast, the recipe's casts of the input (M x K) and the weight
(K x N) each call, and for forward + backward rows compute.linear_gemms with the output gradient's cast too (compute._fp8_casts: one activation tensor, one weight tensor, cast once; Transformer Engine's
quantizers, so no transpose is written on Blackwell). Nothing is fitted here; the error is the modelled ratio over
the measured one less 1 (+ = the model gives FP8 too much gain at the GEMM level). Other published FP8 / BF16 GEMM
tables read (vLLM's benchmarks/kernels/bench_fp8_gemm.py outputs in its PRs, DeepGEMM's README and PRs) time
inference batch sizes or block-scaled kernels without a BF16 twin: not used as ratios.

MoE expert shapes (docs/known-gaps.md 252 (b)): no FP8 / BF16 grouped-GEMM pair on Hopper at training shapes was found
(TorchAO's moe_training tables are B200 MXFP8: grouped_mm.py). DeepGEMM's README at 55ab91f (2025-03-25) times its FP8
kernels alone on an H800 SXM5 (the H100 SXM's SMs, clocks and dense FP8 peak) at DeepSeek-V3's shapes, grouped over 4-8
experts of 4,096-8,192 rows (contiguous layout) and dense at 4,096 rows (benchmarks/data/fp8_grouped_gemm_h800.csv):
printed as a share of the dense FP8 peak beside the model's share at each shape (compute.gemm_time, `groups` GEMMs at
the part's FP8 rates), per-tensor (the development set's delayed scaling) and block-scaled (the model's blockwise,
DeepGEMM's own scaling). Then the model's FP8 / BF16 GEMM time ratio at the routed-expert GEMMs of the Grok-1 rows that
show the FP8 gain over-predicted (perf_heldout62, perf_heldout34), beside their measured step ratios.

Run: python benchmarks/fp8_gemm_shapes.py
"""

from __future__ import annotations

import csv
import dataclasses
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import Rates, rates
from trainsizer.estimate.compute import ModelShapes
from trainsizer.models import load_model
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "fp8_gemm_shapes.csv"
GROUPED = Path(__file__).resolve().parent / "data" / "fp8_grouped_gemm_h800.csv"
GROUPED_H100 = Path(__file__).resolve().parent / "data" / "fp8_grouped_gemm_h100.csv"
# The routed-expert GEMMs of the H100 MoE FP8 / BF16 pairs whose FP8 gain the estimate over-predicts (benchmarks/
# fp8_pairs.py moe_pairs; docs/known-gaps.md 332, 342) beside Grok-1's (GROK_EXPERTS): (pair, rows a local expert,
# hidden, expert FFN, expert TP), the rows as compute._moe_layer counts them from the rows' layouts (balanced at
# capacity 1.0): v25.05 Maverick TP 4 = ETP 4, EP 128, top-1 (8,192 tokens, one local expert); the Folding paper's
# Mixtral 8x22B, MCore TP 2 = ETP 2 with EP 4 (4,096 tokens x 2 over 2 local experts) and Folding ETP 1 with EP 8
# (each TP rank's 2,048 tokens x 2 to one expert).
MOE_EXPERTS = (("v25.05 Maverick 512 GPUs (ETP 4)", 8192, 5120, 8192, 4),
               ("Folding Mixtral 8x22B MCore (ETP 2)", 4096, 6144, 16384, 2),
               ("Folding Mixtral 8x22B Folding (ETP 1)", 4096, 6144, 16384, 1),
               ("v24.11 Grok-1 8 GPUs (ETP 4)", 2048, 6144, 32768, 4),
               ("v25.05 Grok-1 512 GPUs (ETP 1)", 2048, 6144, 32768, 1))
# Grok-1's routed-expert GEMMs on one H100 (hidden 6,144, expert FFN 32,768, gate + up fused; top-2 of 8, balanced at
# capacity 1.0): (row, tokens a local expert, expert TP) of the dgxc rows whose FP8 / BF16 step is over-predicted --
# v24.11 ETP = TP 4, so each rank's expert shards take the TP group's tokens: EP 2 (4,096 tokens x 2 over 4 local
# experts) and EP 8 with CP 2 (8,192 / 2 tokens x 2 over 1) (perf_heldout62);
# v25.05 H100 TP 4 x ETP 1 with CP 2 (each TP rank dispatches its 1 / 4: 1,024 x 2 rows to its one expert,
# perf_heldout34). Measured step ratios: the benchmarks' FP8 / BF16 lines.
GROK_EXPERTS = (("v24.11 8 GPUs (EP 2, ETP 4)", 2048, 4, 0.828), ("v24.11 64-2,048 GPUs (EP 8, ETP 4)", 8192, 4, 0.785),
                ("v25.05 512 GPUs (EP 8, ETP 1)", 2048, 1, 0.843))
# csv column -> the estimate's FP8 recipe name (perf_constants.yaml fp8.recipes)
RECIPES = {"fp8_current_ms": "tensorwise", "fp8_delayed_ms": "delayed", "mxfp8_ms": "mxfp8"}
OPS = ("qkv", "attn_out", "mlp_up", "mlp_down")
# Development-set FP8 / BF16 pairs on H100 (benchmarks/fp8_pairs.py scores their step ratios): the model, the tokens a
# linear layer sees per micro-batch on one GPU (sequence x micro-batch / CP) and the TP degree, as the rows state them
# (benchmarks/data/throughput.csv: dgxc v25.04 NeMo, torchtitan). Printed: the model's GEMM-level ratio at their
# per-GPU linears, the same 0.90 share at every shape, beside nothing measured at these shapes (known-gaps 96).
PAIR_LAYERS = (("dgxc Llama 3.1 8B", "llama-3.1-8b", 4096, 1), ("dgxc GPT-3 175B", "gpt-3-175b", 2048, 4),
               ("dgxc Llama 3.1 405B", "llama-3.1-405b", 4096, 8), ("torchtitan Llama 3 8B FSDP", "llama-3.1-8b", 8192, 1),
               ("torchtitan Llama 3 8B TP 8", "llama-3.1-8b", 8192, 8))


@dataclass(frozen=True)
class Compared:
    row: dict[str, str]
    column: str  # the FP8 column compared
    measured: float  # BF16 / FP8 time, measured
    model: float  # BF16 / FP8 time, modelled

    @property
    def error(self) -> float:
        return self.model / self.measured - 1.0


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def shapes(r: dict[str, str]) -> list[tuple[float, float, float]]:
    """(M, K, N) of the GEMMs a row timed: its own (op "gemm"), else TE's compute_gemm_shapes for its pass, one op
    or the pass's four."""
    if r["op"] == "gemm":
        return [(float(r["m"]), float(r["k"]), float(r["n"]))]
    m, h, i = (float(r[c]) for c in ("tokens", "hidden", "ffn"))
    fprop = [(m, h, 3 * h), (m, h, h), (m, h, i), (m, i, h)]
    by_pass = {"fprop": fprop, "dgrad": [(a, n, k) for a, k, n in fprop], "wgrad": [(k, a, n) for a, k, n in fprop]}
    gemms = by_pass[r["pass"]]
    return gemms if r["op"] == "sum" else [gemms[OPS.index(r["op"])]]


def layer_gemms(model: str, tokens: int, tp: int) -> list[tuple[float, float, float]]:
    """(M, K, N) of a dense decoder layer's 12 linear GEMMs on one GPU (forward, dgrad, wgrad of qkv, attention
    output, MLP up (gate + up fused), MLP down), column-parallel widths split over `tp`, as TE's compute_gemm_shapes
    derives dgrad and wgrad."""
    s = ModelShapes.of(load_model(model))
    m, h = float(tokens), float(s.hidden)
    fprop = [(m, h, s.qkv_out / tp), (m, s.attn_out_in / tp, h), (m, h, s.ffn_up / tp), (m, s.ffn / tp, h)]
    return fprop + [(a, n, k) for a, k, n in fprop] + [(k, a, n) for a, k, n in fprop]


@cache
def _system(part: str, power_limit_w: str = ""):
    """The part as the estimate sees it, held at `power_limit_w` where the row states one (calibration's power law)."""
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 8}, "precision": "bf16",
           "hardware": {"accelerator": part, "count": 8, "network": "ib-ndr400"}, "strategy": {"tp": 1, "pp": 1}}
    system = resolve_job(job, load_catalog()).system
    return dataclasses.replace(system, power_limit_w=float(power_limit_w)) if power_limit_w else system


def part_rates(part: str, recipe: str | None, power_limit_w: str = "") -> Rates:
    """The estimate's rates on `part`: bf16 (`recipe` None) or the FP8 recipe under Transformer Engine's quantizers."""
    system = _system(part, power_limit_w)
    return rates(system, "bf16") if recipe is None else rates(system, "fp8", fp8_recipe=recipe, te_quantizer=True)


def model_ms(gemms: list[tuple[float, float, float]], rt: Rates, mode: str) -> float:
    """Milliseconds of `gemms` at rates `rt` as a row's `mode` times them: "prequant" each GEMM alone; "autocast" each
    as a forward with its input and weight cast every call; "fwd_bwd" each as a linear layer's forward, dgrad and
    wgrad (compute.linear_gemms) with its input, weight and output-gradient casts."""
    total = 0.0
    for m, k, n in gemms:
        if mode == "fwd_bwd":
            total += float(sum(compute.linear_gemms(m, n, k, rt)))
            total += float(sum(compute._fp8_casts(m, k, n, k * n, rt, 1.0, (1.0, 1.0, 1.0))))
            continue
        total += float(compute.gemm_time(m, n, k, rt))
        if mode == "autocast":
            total += float(sum(compute._fp8_casts(m, k, 0.0, k * n, rt, 1.0, (1.0, 0.0, 1.0))))
    return total * 1e3


def compare(data: list[dict[str, str]]) -> list[Compared]:
    """Every (row, FP8 column) the table fills: measured and modelled BF16 / FP8 time."""
    out = []
    for r in data:
        gemms = shapes(r)
        bf16 = model_ms(gemms, part_rates(r["part"], None, r["power_limit_w"]), r["mode"])
        for column, recipe in RECIPES.items():
            if not r[column]:
                continue
            fp8 = model_ms(gemms, part_rates(r["part"], recipe, r["power_limit_w"]), r["mode"])
            out.append(Compared(r, column, float(r["bf16_ms"]) / float(r[column]), bf16 / fp8))
    return out


def per_layer(data: list[dict[str, str]]) -> list[Compared]:
    """The per-layer sums (forward + dgrad + wgrad, TE's 'Per-layer total') by part, mode and FP8 column."""
    out = []
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in data:
        if r["op"] != "gemm":  # TE's model-config rows
            groups.setdefault((r["part"], r["mode"]), []).append(r)
    for (part, mode), rs in groups.items():
        passes = {r["pass"]: [r] for r in rs if r["op"] == "sum"}
        if "fprop" not in passes:  # the forward printed per op
            passes["fprop"] = [r for r in rs if r["pass"] == "fprop"]
        layer = [r for p in ("fprop", "dgrad", "wgrad") for r in passes[p]]
        gemms = [g for r in layer for g in shapes(r)]
        bf16 = model_ms(gemms, part_rates(part, None), mode)
        for column, recipe in RECIPES.items():
            if not all(r[column] for r in layer):
                continue
            fp8 = model_ms(gemms, part_rates(part, recipe), mode)
            measured = sum(float(r["bf16_ms"]) for r in layer) / sum(float(r[column]) for r in layer)
            out.append(Compared({**layer[0], "pass": "layer", "op": "sum"}, column, measured, bf16 / fp8))
    return out


def bf16_share(r: dict[str, str]) -> tuple[float, float]:
    """(measured, modelled) BF16 TFLOP/s of a row as a share of the part's dense BF16 peak."""
    flops = sum(2.0 * m * k * n for m, k, n in shapes(r)) * (3.0 if r["mode"] == "fwd_bwd" else 1.0)
    system = _system(r["part"], r["power_limit_w"])
    peak = system.peak("bf16") * 1e12
    modelled = model_ms(shapes(r), part_rates(r["part"], None, r["power_limit_w"]), r["mode"])
    return flops / (float(r["bf16_ms"]) * 1e-3) / peak, flops / (modelled * 1e-3) / peak


def grouped_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(GROUPED.open(encoding="utf-8")))


def fp8_peak_share(r: dict[str, str], recipe: str | None = None) -> float:
    """A DeepGEMM row's FP8 TFLOP/s as a share of the part's dense FP8 peak: measured (`recipe` None) or the model's
    at the same `groups` GEMMs of (m x k)(k x n) under `recipe`."""
    peak = _system(r["part"]).peak("fp8")
    if recipe is None:
        return float(r["fp8_tflops"]) / peak
    g, m, n, k = (float(r[c]) for c in ("groups", "m", "n", "k"))
    t = float(compute.gemm_time(m, n, k, part_rates(r["part"], recipe), batch=g))
    return 2.0 * g * m * n * k / t / 1e12 / peak


def grouped_h100_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(GROUPED_H100.open(encoding="utf-8")))


def group_rows(r: dict[str, str]) -> list[float]:
    """Rows of each group of a grouped-GEMM row: its printed splits, else `total_m` balanced over `groups`."""
    if r["splits"]:
        return [float(x) for x in r["splits"].split(";")]
    return [float(r["total_m"]) / float(r["groups"])] * int(r["groups"])


def grouped_ms(r: dict[str, str], recipe: str | None) -> float:
    """The model's milliseconds of a grouped-GEMM row: each group's (rows x k)(k x n) GEMM on the soft roofline at the
    part's bf16 rates (`recipe` None) or the FP8 recipe's, one kernel launch for the group (one grouped kernel)."""
    rt = part_rates(r["part"], recipe)
    k, n = float(r["k"]), float(r["n"])
    t = sum(float(compute.gemm_time(m, n, k, rt, fixed=False)) for m in group_rows(r)) + rt.kernel_fixed_s
    return t * 1e3


def grouped_ratio(r: dict[str, str]) -> tuple[float, float]:
    """(measured, modelled) BF16 / FP8 time of a grouped-GEMM row, the FP8 side at torchao's row-scaled recipe (the
    estimate's rowwise: the per-tensor GEMM rate, perf_constants.yaml fp8.recipes.rowwise)."""
    return float(r["bf16_ms"]) / float(r["fp8_ms"]), grouped_ms(r, None) / grouped_ms(r, "rowwise")


def expert_layer_gemms(rows: int, hidden: int, ffn: int, etp: int) -> list[tuple[float, float, float]]:
    """(M, K, N) of a routed expert's six GEMMs on one GPU: up (gate + up fused) and down forwards over `rows`, their
    dgrads and wgrads as TE's compute_gemm_shapes derives them (layer_gemms)."""
    m, h, f = float(rows), float(hidden), float(ffn) / etp
    fprop = [(m, h, 2.0 * f), (m, f, h)]
    return fprop + [(a, n, k) for a, k, n in fprop] + [(k, a, n) for a, k, n in fprop]


def expert_gemms(tokens: int, etp: int) -> list[tuple[float, float, float]]:
    """(M, K, N) of Grok-1's routed-expert forward GEMMs on one GPU: up (gate + up fused) and down, split over `etp`."""
    h, f = 6144.0, 32768.0
    return [(float(tokens), h, 2.0 * f / etp), (float(tokens), f / etp, h)]


def _print(rows_: list[Compared]) -> None:
    print(f"  {'part':15} {'mode':9} {'pass':6} {'op (M x K x N)':19} {'recipe':13} {'meas':>6} {'model':>6} {'err%':>6}")
    for c in rows_:
        r = c.row
        op = "x".join(r[x] for x in ("m", "k", "n")) if r["op"] == "gemm" else r["op"]
        print(f"  {r['part']:15} {r['mode']:9} {r['pass']:6} {op:19} {c.column[:-3]:13} {c.measured:6.3f} "
              f"{c.model:6.3f} {100 * c.error:+6.1f}")


def main() -> None:
    data = rows()
    print("BF16 / FP8 time of linear GEMMs: the published tables (benchmarks/data/fp8_gemm_shapes.csv) vs the model")
    print("(+ err = the model gives FP8 more gain than measured)")
    _print(compare(data))
    print("per layer (forward + dgrad + wgrad):")
    layer = per_layer(data)
    _print(layer)
    for mode in ("prequant", "autocast"):
        errs = [c.error for c in layer if c.row["mode"] == mode]
        print(f"  {mode}: mean error {100 * statistics.mean(errs):+.1f}% over {len(errs)} (part, recipe) pairs")
    print("the model's BF16 / FP8 GEMM time at the development pairs' per-GPU linears (H100 SXM, no casts):")
    for name, model, tokens, tp in PAIR_LAYERS:
        gemms = layer_gemms(model, tokens, tp)
        ratio = model_ms(gemms, part_rates("h100-sxm-80gb", None), "prequant") / model_ms(
            gemms, part_rates("h100-sxm-80gb", "delayed"), "prequant")
        short = sum(m * k * n for m, k, n in gemms if k < 4096) / sum(m * k * n for m, k, n in gemms)
        print(f"  {name:28} {tokens:>5} tokens TP {tp}  model {ratio:.3f}  smallest K {min(k for _, k, _ in gemms):>6,.0f}"
              f"  FLOPs at K < 4,096: {100 * short:4.1f}%")
    print("BF16 GEMM share of the dense BF16 peak, measured vs the model (efficiency_max and the soft roofline):")
    for r in data:
        if r["op"] in ("sum", "gemm") and r["mode"] in ("prequant", "fwd_bwd"):
            meas, model = bf16_share(r)
            what = r["pass"] if r["op"] == "sum" else "x".join(r[c] for c in ("m", "k", "n"))
            print(f"  {r['part']:15} {what:17} measured {meas:.3f}  model {model:.3f}")
    print("FP8 GEMM share of the dense FP8 peak at DeepSeek-V3's MoE shapes: DeepGEMM on H800 (block-scaled) vs the model")
    for r in grouped_rows():
        what = f"{r['kernel']} {r['groups']} x {r['m']}x{r['k']}x{r['n']}"
        print(f"  {what:37} measured {fp8_peak_share(r):.3f}  model per-tensor {fp8_peak_share(r, 'delayed'):.3f}"
              f"  block-scaled {fp8_peak_share(r, 'blockwise'):.3f}")
    print("BF16 / FP8 time of grouped GEMMs on H100 at Llama 4 Scout's expert shapes: torchao's kernels alone "
          "(benchmarks/data/fp8_grouped_gemm_h100.csv) vs the model (docs/known-gaps.md 342)")
    for r in grouped_h100_rows():
        meas, model = grouped_ratio(r)
        rows_ = group_rows(r)
        what = f"{r['groups']} x {r['total_m']}x{r['k']}x{r['n']}"
        print(f"  {what:22} rows a group {min(rows_):5.0f}-{max(rows_):5.0f}  measured {meas:.3f}  model {model:.3f}"
              f"  err {100 * (model / meas - 1):+5.1f}%")
    print("the model's BF16 / FP8 time of the over-predicted MoE pairs' routed-expert GEMMs (H100 SXM, forward + dgrad + "
          "wgrad, kernels alone):")
    for name, rows_, h, f, etp in MOE_EXPERTS:
        gemms = expert_layer_gemms(rows_, h, f, etp)
        ratio = model_ms(gemms, part_rates("h100-sxm-80gb", None), "prequant") / model_ms(
            gemms, part_rates("h100-sxm-80gb", "delayed"), "prequant")
        print(f"  {name:38} {rows_:>5} rows a local expert  smallest K {min(k for _, k, _ in gemms):>6,.0f}"
              f"  model {ratio:.3f}")
    print("the model's FP8 / BF16 time of Grok-1's routed-expert GEMMs (H100 SXM, forward + dgrad + wgrad, casts "
          "included) beside the measured FP8 / BF16 step:")
    for name, tokens, etp, step in GROK_EXPERTS:
        gemms = expert_gemms(tokens, etp)
        ratio = model_ms(gemms, part_rates("h100-sxm-80gb", "delayed"), "fwd_bwd") / model_ms(
            gemms, part_rates("h100-sxm-80gb", None), "fwd_bwd")
        print(f"  {name:36} {tokens:>5} rows a local expert  model {ratio:.3f}  (measured step FP8 / BF16 {step:.3f})")


if __name__ == "__main__":
    main()
