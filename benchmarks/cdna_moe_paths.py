"""Megatron MoE on CDNA (accuracy_bands megatron/moe/cdna): the class's time rows split by the path their MoE layer runs.

The class is Primus's Megatron-LM backend on AMD Instinct parts: perf_heldout30 (AMD's MoE package, DeepSeek-V2(-Lite)
on MI355X, 2025-12; GPT-OSS 20B, 2026-08) and perf_heldout70 (Mixtral on MI300X, 2025-05; Qwen3-30B-A3B on MI355X,
2026-08). Nothing here is fitted and nothing changes the estimate (docs/known-gaps.md 326, 338).

Printed:
1. Each time row: signed error, the token permutation's path (Megatron-Core's unfused index_select / scatter_add_, or
   Transformer Engine's fused permute / Primus-Turbo's sync-free path), the part's GPU architecture, the run's month,
   the measured step less the estimate's (s) and that miss spread over the unfused permutation's atomic bf16 adds a
   step (ps an element: index_select's backward is index_add_, one atomic add per routed copy's element; what a per-
   element cost of the atomics would have to be to close the row), and the share of the part's dense GEMM rate at which
   the routed experts' GEMMs would close the row (a what-if: the estimate run again with that share; the floor rows
   need a far lower one than the rows past it).
2. The rows by path x architecture: n, median signed %, MAPE.
3. The unfused rows' counted router and permutation ops as the estimate charges them (the step less the same job
   stated fused: step_time._moe_unfused_time / _moe_unfused_host, docs/known-gaps.md 82 and 338) against the miss.
4. The attention backward over forward of DeepSeek-V2-Lite's MLA (d_qk 192, d_v 128) against a head-dim-128 model on
   the same part, as the estimate times them (AITER's assembly backward, strategy.aiter_mla_bwd_asm true, and CK's
   padded tile, false) against the kernel times of AMD's own Primus traces (AMD-AGI/TraceLens issue 536, 2026-03-17:
   DeepSeek-V2-Lite aiter::mha_bwd 2,345 ms over aiter::fmha_v3_fwd 335 ms; Llama3-70B 5,903 over 1,178).
5. The per-kernel fixed cost (gemm.kernel_fixed_s, 4 us: a CUDA launch-to-launch figure, no AMD one is held) as a
   what-if: each row's signed error with it at 4 / 8 / 16 us on these parts, and the class's MAPE (docs/known-gaps.md
   346 (b)): a per-kernel gap a source might put higher on ROCm moves the unfused rows a few points and the fused
   rows, already slow, further slow.
6. The same model on the same part under two stacks (docs/known-gaps.md 308 (d) (b), 346 (c)): perf_heldout70's
   TorchTitan DeepSeek-V3 16B (the Lite shape) on 8 MI355X against the Megatron Lite micro-batch-8 row, per token
   and GPU (us): the estimate's decoder-layer forward and backward, their attention parts, the all-to-all, the step,
   and the measured step; then the Megatron row with its attention backward at the TorchTitan path's time a token
   (torch SDPA's measured backward on MI355X, attention.sdpa_rocm): the pair's speed ratio, estimated either way,
   against the measured one.
7. The unfused gfx950 rows with their MLA backward on CK's tile kernel (a what-if for docs/known-gaps.md 346 (c)):
   strategy.aiter_mla_bwd_asm false (the 256 pad, 195 (b)), then that pad at CK's own rate (CK_RATE_OVER_NATIVE).

Run: python benchmarks/cdna_moe_paths.py
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any
from unittest import mock

import numpy as np

import perf_heldout as ph
import perf_heldout30 as p30
import perf_heldout70 as p70
from harness import Case, mape
from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time as st
from trainsizer.estimate.calibration import load_constants
from trainsizer.models import load_model
from trainsizer.scenario import resolve_job

# CDNA generation of each AMD part in the class (AMD's ISA names: MI300X / MI325X gfx942, MI350X / MI355X gfx950)
ARCH = {"mi300x": "gfx942", "mi325x": "gfx942", "mi350x": "gfx950", "mi355x": "gfx950"}
# AMD-AGI/TraceLens issue 536 (2026-03-17), "TraceLens Op Coverage - Primus Workloads": kernel ms summed over the
# profiled steps of Primus runs; (backward op, forward op) of the attention for a DeepSeek-V2-Lite run (MLA, d_qk 192 /
# d_v 128) and a Llama3-70B run (d 128). The runs' part, image and batch are not stated.
TRACE_ATTENTION_MS = {"deepseek-v2-lite": (2345.0, 335.0), "llama3-70b": (5903.0, 1178.0)}
LITE_ROW = "primus_2025-12_mi355x_dsv2lite_mbs8_baseline_8gpu"
# perf_heldout70 (1): Primus's TorchTitan DeepSeek-V3 16B (the DeepSeek-V2-Lite shape) on 8 MI355X, no recompute
TITAN_ROW = "primus_titan_2026-07_mi355x_dsv3_16b_bf16_lbs9_8gpu"
KERNEL_FIXED_S = (4e-6, 8e-6, 16e-6)  # the what-if's per-kernel fixed costs (s); the shipped figure first
# CK's tile backward against the estimate's native MI355X backward at Lite's shape: HipKittens' MI355X baseline, CK 456
# TFLOPS at head dim 128, 4K, against the native 687 the estimate runs there (docs/known-gaps.md 195 (a), (c) (b))
CK_RATE_OVER_NATIVE = 687.0 / 456.0
D128_MODEL = "llama-3.1-8b"  # a head-dim-128 model run at the Lite row's layout: only its head dims are read here


def arch_of(row: dict[str, str]) -> Any:
    """The row's model architecture, as perf_heldout.job_of names it (a batch's models yaml entry, else a preset)."""
    models = {**ph.model_data(ph.MODELS), **ph.model_data(p70.MODELS)}
    return load_model(models[row["model"]]["model"] if row["model"] in models else row["model"])


def class_run() -> ph.Run:
    """The class's time rows as the two batches estimate them: Megatron-Core on an AMD part, a model with routed
    experts, a throughput metric; refused rows left out."""
    run = p30.BATCH.run_all() + p70.BATCH.run_listed()
    return [(c, res, r) for c, res, r in run
            if not c.skipped and r["framework"] == "megatron-core" and r["accelerator"] in ARCH
            and r["metric"] not in ph.MEMORY_METRICS and arch_of(r).is_moe]


def extra(row: dict[str, str]) -> dict[str, str]:
    """The row's strategy_extra as key -> value text."""
    return dict(kv.split("=", 1) for kv in row["strategy_extra"].split(";") if "=" in kv)


def permute_path(row: dict[str, str]) -> str:
    """'fused' where Transformer Engine's permute (moe_permute_fusion) or Primus-Turbo's sync-free MoE runs the
    permutation, else 'unfused' (Megatron-Core's index_select / scatter_add_, moe_utils.permute / unpermute)."""
    e = extra(row)
    return "fused" if e.get("moe_permute_fusion") == "true" or e.get("moe_sync_free") == "true" else "unfused"


def router_path(row: dict[str, str]) -> str:
    """'unfused' where the row states Megatron-Core's own router (moe_router_fusion false: the 2025 releases, whose
    Megatron-LM has no fused router at 5a676b36 or leaves it off), 'fused' where Transformer Engine's runs it, else
    'style' (the megatron-core style's default, fused)."""
    value = extra(row).get("moe_router_fusion")
    return "style" if value is None else ("fused" if value == "true" else "unfused")


def step_s(row: dict[str, str], strategy_extra: dict[str, Any] | None = None) -> float:
    """The estimate's step (s) for the row's job with `strategy_extra` over its strategy fields."""
    sc = scenario_of(row, strategy_extra)
    return float(np.asarray(st.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])


def unfused_charge_s(row: dict[str, str]) -> float:
    """Seconds a step the estimate charges for the row's unfused router and permutation (their counted kernels,
    host calls and syncs: step_time._moe_unfused_time / _moe_unfused_host): the row's step less the same job with
    both stated fused. Primus's forced-balance map (round-robin rows) runs either way and stays in both."""
    return step_s(row) - step_s(row, {"moe_router_fusion": True, "moe_permute_fusion": True})


def step_miss_s(c: Case, res: dict[str, Any]) -> float:
    """Measured step less the estimate's, in seconds: both metrics of the class (tokens/s and Megatron's logged
    TFLOP/s a GPU) are a fixed amount of work over the step, so the measured step is the estimate's x predicted /
    measured."""
    step = float(res["time"]["step_s"])
    return step * c.predicted / c.measured - step


def atomic_elements(row: dict[str, str], model: Any) -> float:
    """bf16 elements index_select's backward adds atomically on one rank in one step (perf_heldout30
    cas_elements_per_step), each rank's permute taking its sequence-parallel share of the tokens (1 / TP)."""
    return p30.cas_elements_per_step(row, model) / int(row["tp"] or 1)


def row_lines(run: ph.Run, shares: bool = True) -> list[tuple[str, float, str, str, str, float, float, float]]:
    """(row id, signed %, path, architecture, month, step miss s, ps an element of the unfused permutation's atomic
    adds (nan on the fused path), the experts' closing share of the dense GEMM rate (nan unless `shares`)) per row."""
    out = []
    for c, res, r in run:
        miss = step_miss_s(c, res)
        unfused = permute_path(r) == "unfused"
        ps = miss / atomic_elements(r, arch_of(r)) * 1e12 if unfused else float("nan")
        share = closing_expert_share(c, res, r) if shares else float("nan")
        out.append((r["id"], 100.0 * c.err, permute_path(r), ARCH[r["accelerator"]], r["date"][:7], miss, ps, share))
    return out


def scenario_of(row: dict[str, str], strategy_extra: dict[str, Any] | None = None) -> Any:
    """The row's resolved job (its batch's models), with `strategy_extra` over its strategy fields."""
    spec = ph.job_of(row, {**ph.model_data(ph.MODELS), **ph.model_data(p70.MODELS)})
    if strategy_extra:
        spec = dict(spec, strategy={**spec["strategy"], **strategy_extra})
    return resolve_job(spec, load_catalog())


def step_at_expert_share(row: dict[str, str], share: float) -> float:
    """The estimate's step (s) with the routed experts' GEMMs at `share` of the part's dense rate: the what-if runs
    them through the Primus-Turbo grouped-GEMM path (strategy.moe_turbo_grouped_gemm, whose only effect is that rate,
    step_time._turbo_grouped_rate) with its table set to `share` on every part."""
    sc = scenario_of(row, {"moe_turbo_grouped_gemm": True})
    k = dataclasses.replace(load_constants(), turbo_grouped_gemm_over_dense_table={"bf16": {"default": share},
                                                                                   "fp8": {"default": share}})
    arrays = st.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, constants=k)
    return float(np.asarray(arrays["step_s"]).reshape(-1)[0])


def closing_expert_share(c: Case, res: dict[str, Any], row: dict[str, str], low: float = 0.05) -> float:
    """The share of the dense GEMM rate at which the routed experts' GEMMs would close the row (the estimate's step =
    the measured one), by bisection over [low, 2]; `low` where even that leaves the estimate short; nan for a row the
    estimate already times slow at the dense rate and the sync-free GPT-OSS row (its experts at Turbo's own share)."""
    target = float(res["time"]["step_s"]) + step_miss_s(c, res)
    if extra(row).get("moe_turbo_grouped_gemm") == "true" or target <= step_at_expert_share(row, 1.0):
        return float("nan")
    lo, hi = low, 1.0
    if step_at_expert_share(row, lo) < target:
        return lo
    for _ in range(16):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if step_at_expert_share(row, mid) > target else (lo, mid)
    return 0.5 * (lo + hi)


def charge_lines(run: ph.Run) -> list[tuple[str, str, float, float]]:
    """(row id, router path, the unfused router and permutation's charge a step (s, unfused_charge_s), the step's
    miss (s)) for each row that runs the permutation unfused."""
    return [(r["id"], router_path(r), unfused_charge_s(r), step_miss_s(c, res))
            for c, res, r in run if permute_path(r) == "unfused"]


def groups(run: ph.Run) -> dict[tuple[str, str], list[Case]]:
    """The class's cases by (permutation path, architecture)."""
    out: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c, _, r in run:
        out[(permute_path(r), ARCH[r["accelerator"]])].append(c)
    return dict(out)


def attention_ratio(row: dict[str, str], model: str | None = None, asm: bool | None = None) -> float:
    """The estimate's attention backward over forward (one layer and micro-batch) for `row`'s job, with its model
    replaced by `model` and strategy.aiter_mla_bwd_asm set to `asm` where given."""
    sc = scenario_of(dict(row, model=model) if model else row, {} if asm is None else {"aiter_mla_bwd_asm": asm})
    lt, _ = st._layer_time(st._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None))
    return float(np.asarray(lt.attn_bwd).reshape(-1)[0] / np.asarray(lt.attn_fwd).reshape(-1)[0])


def attention_check() -> dict[str, float]:
    """The Lite row's attention backward over forward (asm and CK-padded), a head-dim-128 model's at the same layout,
    the estimate's Lite-over-d128 ratio each way, and the traces' two ratios and theirs."""
    row = next(r for r in p30.rows() if r["id"] == LITE_ROW)
    asm, pad, d128 = attention_ratio(row), attention_ratio(row, asm=False), attention_ratio(row, D128_MODEL)
    lite, llama = (b / f for b, f in TRACE_ATTENTION_MS.values())
    return {"lite_asm": asm, "lite_pad": pad, "d128": d128, "est_asm_over_d128": asm / d128,
            "est_pad_over_d128": pad / d128, "trace_lite": lite, "trace_llama": llama, "trace_ratio": lite / llama}


def step_at_kernel_fixed(row: dict[str, str], fixed_s: float) -> float:
    """The estimate's step (s) for the row's job with every kernel's fixed cost (gemm.kernel_fixed_s) at `fixed_s`."""
    sc = scenario_of(row)
    k = dataclasses.replace(load_constants(), kernel_fixed_s=fixed_s)
    arrays = st.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, constants=k)
    return float(np.asarray(arrays["step_s"]).reshape(-1)[0])


def kernel_gap_lines(run: ph.Run) -> list[tuple[str, str, list[float]]]:
    """(row id, permutation path, signed error at each KERNEL_FIXED_S): both metrics are a fixed amount of work over
    the step, so a row's prediction scales with the estimate's step at the shipped cost over the step at the other."""
    out = []
    for c, res, r in run:
        base = float(res["time"]["step_s"])
        out.append((r["id"], permute_path(r), [(1.0 + c.err) * base / step_at_kernel_fixed(r, v) - 1.0
                                               for v in KERNEL_FIXED_S]))
    return out


def kernel_gap_mapes(lines: list[tuple[str, str, list[float]]]) -> list[float]:
    """The class's MAPE (%) at each KERNEL_FIXED_S."""
    return [100.0 * float(np.mean([abs(errs[i]) for _, _, errs in lines])) for i in range(len(KERNEL_FIXED_S))]


def per_token_terms(c: Case, res: dict[str, Any], row: dict[str, str]) -> dict[str, float]:
    """The row's estimate per token and GPU (us): the decoder layers' forward and backward (one average layer and
    micro-batch x layers over the micro-batch's tokens), their attention parts, the all-to-all, the step, and the
    measured step (the estimate's x predicted / measured)."""
    sc = scenario_of(row)
    lt, _ = st._layer_time(st._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None))
    per = sc.model.layers / (int(row["micro_batch"]) * int(row["seq_len"])) * 1e6
    tokens = int(row["global_batch_seqs"]) * int(row["seq_len"]) / int(row["gpu_count"]) / 1e6
    step = float(res["time"]["step_s"])
    out = {k: float(np.asarray(getattr(lt, k)).reshape(-1)[0]) * per for k in ("fwd", "bwd", "attn_fwd", "attn_bwd")}
    return dict(out, ep=float(res["time"]["breakdown_s"]["ep_comm"]) / tokens, step=step / tokens,
                measured=step * c.predicted / c.measured / tokens)


def lite_pair() -> dict[str, Any]:
    """The TorchTitan / Megatron pair's per-token terms, the measured and estimated Megatron-over-TorchTitan speed,
    and the estimate's with the Megatron row's attention backward at the TorchTitan path's time a token."""
    got = {r["id"]: (c, res, r) for c, res, r in p70.BATCH.estimate([r for r in p70.rows() if r["id"] == TITAN_ROW])}
    got.update({r["id"]: (c, res, r) for c, res, r in p30.BATCH.estimate([r for r in p30.rows() if r["id"] == LITE_ROW])})
    titan, mega = per_token_terms(*got[TITAN_ROW]), per_token_terms(*got[LITE_ROW])
    swapped = mega["step"] + titan["attn_bwd"] - mega["attn_bwd"]
    return {"titan": titan, "megatron": mega, "measured_speed": titan["measured"] / mega["measured"],
            "estimated_speed": titan["step"] / mega["step"], "swapped_speed": titan["step"] / swapped,
            "swapped_err": mega["measured"] / swapped - 1.0}


def step_at_ck_backward(row: dict[str, str], rate_factor: float) -> float:
    """The estimate's step (s) for the row's job with its MLA backward on CK's padded tile (aiter_mla_bwd_asm false)
    and that backward's time x `rate_factor` on top (a what-if: step_time._ck_mla_bwd_pad scaled for this call)."""
    sc = scenario_of(row, {"aiter_mla_bwd_asm": False})
    pad = st._ck_mla_bwd_pad
    with mock.patch.object(st, "_ck_mla_bwd_pad", lambda x: pad(x) * rate_factor):
        arrays = st.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(arrays["step_s"]).reshape(-1)[0])


def ck_backward_lines(run: ph.Run) -> list[tuple[str, float, float, float]]:
    """(row id, signed error as estimated, with CK's padded tile, with that tile at CK's rate) for each unfused gfx950
    row (the 2025-12 MLA rows), each error carried with its step."""
    out = []
    for c, res, r in run:
        if ARCH[r["accelerator"]] == "gfx950" and permute_path(r) == "unfused":
            base = float(res["time"]["step_s"])
            out.append((r["id"], c.err, *((1.0 + c.err) * base / step_at_ck_backward(r, f) - 1.0
                                          for f in (1.0, CK_RATE_OVER_NATIVE))))
    return out


def main() -> None:
    run = class_run()
    print(f"megatron/moe/cdna time rows ({len(run)}): signed %, permutation path, architecture, month, measured step "
          "less the estimate's, that miss over the unfused permutation's atomic bf16 adds a step, and the share of the "
          "dense GEMM rate at which the routed experts' GEMMs would close the row (what-if, nothing applied)")
    for rid, pct, path, arch, month, miss, ps, share in sorted(row_lines(run), key=lambda t: (t[2], t[3], t[1])):
        print(f"  {rid:62s} {pct:+7.1f}%  {path:7s} {arch}  {month}  miss {miss:+7.3f} s  "
              f"{ps:7.1f} ps an element  experts at {share:.2f}")
    print("by permutation path x architecture:")
    for (path, arch), cs in sorted(groups(run).items()):
        med = 100.0 * float(np.median([c.err for c in cs]))
        print(f"  {path:7s} {arch}  n={len(cs):2d}  median {med:+6.1f}%  MAPE {mape(cs):5.1f}%")
    print("the unfused rows' counted router and permutation ops (kernels, host calls at the ROCm launch-bound op, "
          "masked_select syncs; docs/known-gaps.md 338): the step less the same job stated fused, against the miss")
    for rid, router, charge, miss in sorted(charge_lines(run), key=lambda t: t[0]):
        print(f"  {rid:62s} router {router:7s} charged {charge:6.3f} s a step  miss {miss:+7.3f} s  "
              f"charge / miss {charge / miss:+6.1%}")
    a = attention_check()
    print("attention backward over forward (one layer and micro-batch), estimate vs Primus traces (TraceLens #536):")
    print(f"  estimate, Lite row: AITER assembly {a['lite_asm']:.2f}, CK padded tile {a['lite_pad']:.2f}; "
          f"head dim 128 at the same layout {a['d128']:.2f}")
    print(f"  Lite over d128: estimate {a['est_asm_over_d128']:.2f} (assembly) / {a['est_pad_over_d128']:.2f} (padded); "
          f"traces {a['trace_lite']:.2f} / {a['trace_llama']:.2f} = {a['trace_ratio']:.2f}")
    gap = kernel_gap_lines(run)
    print("the per-kernel fixed cost (gemm.kernel_fixed_s) as a what-if on these parts: signed % at "
          + " / ".join(f"{v * 1e6:.0f}" for v in KERNEL_FIXED_S) + " us (docs/known-gaps.md 346 (b))")
    for rid, path, errs in sorted(gap, key=lambda t: (t[1], t[2][0])):
        print(f"  {rid:62s} {path:7s} " + " / ".join(f"{100 * e:+6.1f}" for e in errs))
    print("  class MAPE " + " / ".join(f"{m:.1f}%" for m in kernel_gap_mapes(gap)))
    p = lite_pair()
    print("DeepSeek-V2-Lite's shape on 8 MI355X under two stacks, per token and GPU (us): decoder layers forward / "
          "backward (attention forward / backward in them), all-to-all, step, measured step (docs/known-gaps.md 346 (c))")
    for name in ("titan", "megatron"):
        t = p[name]
        print(f"  {name:8s} layers {t['fwd']:5.2f} / {t['bwd']:5.2f} (attention {t['attn_fwd']:4.2f} / "
              f"{t['attn_bwd']:4.2f})  all-to-all {t['ep']:4.2f}  step {t['step']:5.2f}  measured {t['measured']:5.2f}")
    print(f"  Megatron over TorchTitan, speed a token: measured {p['measured_speed']:.3f}, estimated "
          f"{p['estimated_speed']:.3f}; with the Megatron row's attention backward at the TorchTitan path's time "
          f"{p['swapped_speed']:.3f} (the Megatron row {100 * p['swapped_err']:+.1f}%)")
    print("the unfused gfx950 rows with their MLA backward on CK's tile kernel: signed % as estimated (AITER's assembly "
          f"backward) / CK's 256 pad / the pad at CK's rate (x{CK_RATE_OVER_NATIVE:.2f}) (docs/known-gaps.md 346 (c))")
    for rid, err, pad, rate in sorted(ck_backward_lines(run), key=lambda t: t[1]):
        print(f"  {rid:62s} {100 * err:+7.1f} / {100 * pad:+7.1f} / {100 * rate:+7.1f}")


if __name__ == "__main__":
    main()
