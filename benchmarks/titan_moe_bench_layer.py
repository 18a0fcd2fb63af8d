"""torchtitan's MoE layer alone on one B200: TorchAO's bench_moe_layer measurements against the estimator's layer time
at the same shapes (docs/known-gaps.md 294 (a)). A diagnostic: nothing is fitted and no estimate moves.

TorchAO's benchmarks/prototype/moe_training/bench_moe_layer.py (pytorch/ao fb1450d16, 2025-10-13; forced round-robin
routing from 4b79f9ec5, 2025-10-16) times one torchtitan MoE layer, forward + backward with an mse_loss, compiled
(torch.compile, fullgraph False), bf16, on one GPU: MoEArgs(num_experts=local_num_experts, num_shared_experts=1) with
MoEArgs' defaults at those commits (torchtitan models/moe/moe.py: top_k 1, sigmoid scores weighted before the
experts, torch._grouped_mm, load_balance_coeff 1e-3), local_batch_size x seq_len tokens. Its bf16 lines from three
public posts (benchmarks/data/torchao_moe_layer_b200.csv): Llama 4 and DeepSeek-V3 671B expert shapes, and
DeepSeek-V3 16B's (dim 2,048, expert 1,408) from torchtitan issue 2086.

The estimator's figure: one pretraining job on 1 B200 of an inline model of L decoder layers, each one such MoE layer
(hidden = dim, routed and shared experts of hidden_dim, top-1) behind a one-head, 64-wide attention (seq_len 128 x
batch 1,024 keeps the bench's token count with a negligible attention core), a 128-token vocabulary with tied
embeddings; torchtitan style, torch_compile true, recompute none. A layer's time is the `compute` term of the step at
2 layers less that at 1; the MoE's is that less the same for a dense model of the same width with a 16-wide MLP and
no experts (the decoder layer's norms, residual adds, RoPE and attention, which the bench's MoE module does not run).
Both glue readings are printed: compiled (moe_eager_glue false: torch.compile traces MoE.forward whole on one device,
no EP hooks) and the style's eager glue (the 2025 per-submodule compile of a training run).

Then a forward alone on H100 at Qwen3-30B-A3B's expert shape (and 512 experts of 512, top-10): VeOmni PR 460's
torch._grouped_mm MoE forward (benchmarks/data/veomni_moe_forward_h100.csv; its permutation and combine its own)
against the estimator's forward of such a layer, read as the layer's time under full recompute less its time without
(torchtitan's full AC re-runs the block's forward, glue included), the dense layer's the same way taken off.

Then the same layer at Qwen3-30B-A3B's shapes (dim 2,048, 128 experts of 768, top-8, no shared expert) at the
tokens a GPU of Lambda's EP-1 sweep (perf_heldout48, local batch 8 x 8,192): no measurement; what a device run of the
bench at those shapes would be laid against.

Last, the torchtitan MoE rows of the held-out batches whose steps are predicted too fast, and two that are not: for
each, the scale s on one rate at which the row's prediction meets its measurement (bisection, as
benchmarks/torchao_b200_shared.py): the routed experts' grouped GEMM rate (Rates.grouped_gemm_flops after
step_time._grouped_mm_rate; on Hopper the dense rate, grouped_mm_over_dense 1.0) and the attention core's
(Rates.flash_flops). A mechanism the Qwen3-30B-A3B rows share would close them at one s across their sequence
lengths (4,096 / 8,192 / 16,384), parts and dispatchers, and leave the other families' rows near 1.

Run: python benchmarks/titan_moe_bench_layer.py
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import model_data
from torchao_b200_shared import closing_scale, scaled
from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "torchao_moe_layer_b200.csv"
VEOMNI = DATA.parent / "veomni_moe_forward_h100.csv"
H100 = "h100-sxm-80gb"  # the catalog's SXM part (VeOmni's "H100": the form not stated)
SHORT_SEQ = 128  # the estimate's sequence: the bench's tokens as seq_len x batch with a negligible attention core


@dataclass(frozen=True)
class Layer:
    """One MoE layer configuration: the bench's arguments and MoEArgs' routing."""

    dim: int
    hidden_dim: int
    experts: int
    tokens: int
    top_k: int = 1
    shared: bool = True
    family: str = "llama4"  # MoEArgs' default weights the scores before the experts (the Llama 4 port)


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def layer_of(r: dict[str, str]) -> Layer:
    return Layer(int(r["dim"]), int(r["hidden_dim"]), int(r["local_num_experts"]),
                 int(r["local_batch_size"]) * int(r["seq_len"]), int(r["top_k"]), r["shared_experts"] == "1")


REST_FFN = 16  # the dense reference layer's MLP width (a model needs one): its GEMMs a few launches


def job(layer: Layer, layers: int, compiled_glue: bool, accelerator: str = "b200", recompute: str = "none",
        moe: bool = True) -> dict[str, Any]:
    """A one-GPU pretraining job whose decoder layers are `layer` behind a one-head attention (`moe` False: the same
    layers with a REST_FFN-wide dense MLP for the MoE)."""
    experts = {"experts": layer.experts, "experts_per_token": layer.top_k, "expert_ffn": layer.hidden_dim,
               "shared_expert_ffn": layer.hidden_dim if layer.shared else 0} if moe else {}
    model = {"name": f"moe_bench_{layer.dim}_{layer.hidden_dim}_{layer.experts}_{layer.top_k}_{layers}_{moe}",
             "family": layer.family, "layers": layers, "hidden": layer.dim, "heads": 1, "kv_heads": 1, "head_dim": 64,
             "ffn": layer.hidden_dim if moe else REST_FFN, "vocab": 128, "mlp": "swiglu", "norm": "rmsnorm",
             "position": "rope", "tied_embeddings": True, **experts}
    batch = layer.tokens // SHORT_SEQ
    strategy: dict[str, Any] = {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "micro_batch": batch, "recompute": recompute,
                                "framework": "torchtitan", "torch_compile": True}
    if compiled_glue:
        strategy["moe_eager_glue"] = False
    return {"model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": SHORT_SEQ,
            "global_batch": {"sequences": batch}, "precision": "bf16", "flash_attention": True,
            "hardware": {"accelerator": accelerator, "count": 1, "network": "ib-ndr400"}, "strategy": strategy}


@lru_cache(maxsize=1)
def _catalog() -> Any:
    return load_catalog([])


def layer_ms(layer: Layer, compiled_glue: bool = True, accelerator: str = "b200", recompute: str = "none",
             moe: bool = True) -> float:
    """The estimator's forward + backward of one such decoder layer (with `recompute`'s re-run), ms: the step's
    compute at 2 layers less at 1."""
    cat = _catalog()
    compute = [float(evaluate(resolve_job(job(layer, n, compiled_glue, accelerator, recompute, moe), cat), cat)
                     ["time"]["breakdown_s"]["compute"]) for n in (1, 2)]
    return (compute[1] - compute[0]) * 1e3


def moe_ms(layer: Layer, compiled_glue: bool = True, accelerator: str = "b200", recompute: str = "none") -> float:
    """The MoE's share of the layer, ms: the layer less the dense reference layer of the same width."""
    return (layer_ms(layer, compiled_glue, accelerator, recompute)
            - layer_ms(layer, compiled_glue, accelerator, recompute, moe=False))


def forward_ms(layer: Layer, accelerator: str) -> float:
    """The estimator's MoE forward, ms: its time under full recompute less without (compiled glue)."""
    return moe_ms(layer, True, accelerator, "full") - moe_ms(layer, True, accelerator, "none")


def veomni_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(VEOMNI.open(encoding="utf-8")))


def veomni_layer(r: dict[str, str]) -> Layer:
    return Layer(int(r["hidden"]), int(r["ffn"]), int(r["experts"]), int(r["tokens"]), int(r["top_k"]), False,
                 "qwen3_moe")


def layer_tflop(layer: Layer) -> float:
    """The layer's GEMM work, forward + backward (3 x forward), TFLOP: routed copies and the shared expert, three
    projections each."""
    copies = layer.tokens * (layer.top_k + (1 if layer.shared else 0))
    return 3.0 * 2.0 * 3.0 * copies * layer.dim * layer.hidden_dim / 1e12


QWEN3_30B_A3B = Layer(2048, 768, 128, 8 * 8192, top_k=8, shared=False, family="qwen3_moe")


# held-out torchtitan MoE rows (file: ids): Qwen3-30B-A3B on B200 (Lambda EP 1 at 8,192; Nous EP 8 at 4,096, DeepEP
# and all-to-all) and on H200 (prime-rl, FA3, 16,384); other families' rows on Blackwell for comparison
ROWS = {"heldout_2026v_lambda_titan.csv": ("lambda_b200_qwen3_30b_a3b_fsdp8_lbs8_8gpu",
                                           "lambda_b200_qwen3_30b_a3b_fsdp8_lbs12_8gpu",
                                           "lambda_b200_gptoss20b_fsdp8_lbs20_8gpu"),
        "heldout_2027c_titan_deepep_b200.csv": ("nous_torchtitan_2025-11_b200_qwen3_30b_a3b_deepep_ep8_lbs8_8gpu",
                                                "nous_torchtitan_2025-11_b200_qwen3_30b_a3b_alltoall_ep8_lbs8_8gpu",
                                                "nous_torchtitan_2025-11_b200_qwen3_30b_a3b_deepep_ep8_lbs8_128gpu"),
        "heldout_2027a_prime_rl.csv": ("primerl_2026-01_8xh200_qwen3_30b_a3b_sft_16384_fa3",),
        "heldout_2026d.csv": ("torchtitan_2025-12_gb200_llama4_scout_bf16_256gpu",
                              "torchtitan_2026-05_gb200_gpt_oss_20b_compile_4gpu"),
        "heldout_2026e.csv": ("nebius_2026-03_b200_dsv3_671b_bf16_alltoall_256gpu",)}


def held_rows() -> list[dict[str, str]]:
    out = []
    for name, ids in ROWS.items():
        by_id = {r["id"]: r for r in csv.DictReader((Path(DATA).parent / name).open(encoding="utf-8"))}
        out += [by_id[i] for i in ids]
    return out


@contextmanager
def grouped_scaled(s: float) -> Iterator[None]:
    """step_time._grouped_mm_rate with the routed experts' grouped GEMM rate times s, for the block."""
    original = step_time._grouped_mm_rate

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        r = original(*args, **kwargs)
        return dataclasses.replace(r, grouped_gemm_flops=r.grouped_gemm_flops * s)

    step_time._grouped_mm_rate = wrapped
    try:
        yield
    finally:
        step_time._grouped_mm_rate = original


def closing_scales(rs: list[dict[str, str]]) -> list[tuple[str, float, float | None, float | None]]:
    """(id, predicted / measured - 1, s closing the row on the grouped GEMM rate, s on the attention core's; None
    where the row is not predicted too fast or s would fall below 0.02)."""
    models: dict[str, Any] = model_data(ph.MODELS)
    catalogs: dict[str, Any] = {}

    def predict(r: dict[str, str], group: str, s: float) -> float:
        with grouped_scaled(s) if group == "grouped" else scaled(("flash_flops",), (), s):
            return ph.estimate_row(r, models, catalogs, ph.predicted_metric)[0].predicted

    out = []
    for r in rs:
        meas, pred = float(r["value"]), predict(r, "grouped", 1.0)
        s_g, s_a = (closing_scale(lambda x, g=g, r=r: predict(r, g, x), meas) if pred > meas else None
                    for g in ("grouped", "attention"))
        out.append((r["id"], pred / meas - 1.0, s_g, s_a))
    return out


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print(f"{'row':24s} {'dim':>5s} {'hidden':>6s} {'E':>3s} {'measured':>9s} {'compiled':>9s} {'err':>7s} "
          f"{'eager':>8s} {'err':>7s} {'TFLOP/s meas.':>13s}")
    for r in rows():
        layer = layer_of(r)
        meas = float(r["bf16_ms"])
        comp, eager = moe_ms(layer, True), moe_ms(layer, False)
        print(f"{r['id']:24s} {layer.dim:5d} {layer.hidden_dim:6d} {layer.experts:3d} {meas:9.2f} {comp:9.2f} "
              f"{(comp / meas - 1) * 100:+6.1f}% {eager:8.2f} {(eager / meas - 1) * 100:+6.1f}% "
              f"{layer_tflop(layer) / meas * 1e3:13.0f}")
    print("(err: estimate over measured - 1; + = the estimate is slower. TFLOP/s: the layer's GEMM work over the "
          "measured time)")
    print("VeOmni PR 460, torch._grouped_mm MoE forward on H100 (no shared expert), against the estimator's forward")
    for r in veomni_rows():
        layer, meas = veomni_layer(r), float(r["ms"])
        est = forward_ms(layer, H100)
        print(f"  {r['id']:24s} {layer.experts:3d} experts of {layer.hidden_dim:4d}, top-{layer.top_k:<2d} "
              f"{layer.tokens * layer.top_k // layer.experts:5d} rows a group: measured {meas:6.2f} ms, estimate "
              f"{est:6.2f} ms ({(est / meas - 1) * 100:+.1f}%)")
    q = QWEN3_30B_A3B
    comp = moe_ms(q, True)
    print(f"Qwen3-30B-A3B shapes (dim {q.dim}, {q.experts} experts of {q.hidden_dim}, top-{q.top_k}, "
          f"{q.tokens:,} tokens, no measurement): {comp:.2f} ms compiled, {layer_tflop(q) / comp * 1e3:.0f} TFLOP/s "
          "of GEMM work")
    print("Held-out torchtitan MoE rows: the scale on one rate that closes each (+ = predicted too fast)")
    for rid, err, s_g, s_a in closing_scales(held_rows()):
        cells = "  ".join(f"{name} {'-' if s is None else f'{s:.3f}'}" for name, s in (("grouped", s_g),
                                                                                      ("attention", s_a)))
        print(f"  {rid:64s} {err:+7.1%}  {cells}")


if __name__ == "__main__":
    main()
