"""The Mamba-2 mixer of a hybrid model's M layers: FLOPs, compute time and saved activations.

Sources (one line each):
- The mixer: Dao & Gu 2024 ("Transformers are SSMs", arXiv:2405.21060) s7 (Mamba-2 block); Megatron-Core
  megatron/core/ssm/mamba_mixer.py MambaMixer: in_proj hidden -> z, x (d_inner each), B, C (ngroups x d_state each),
  dt (nheads); depthwise causal conv1d over x, B, C; the SSD scan; a gated RMSNorm over d_inner (norm_before_gate
  False); out_proj d_inner -> hidden. TP splits heads and groups (nheads % tp == 0, ngroups % tp == 0): in_proj is
  column-parallel, out_proj row-parallel, conv1d / dt_bias / A_log / D / the norm weight are split with the heads.
- The SSD scan, chunked with chunk length Q (s6, "the SSD algorithm"; mamba_ssm ops/triton/ssd_combined.py): per
  chunk C B^T (Q x Q x N per group, _bmm_chunk_fwd), the masked (L o C B^T) X (Q x Q x P per head, _chunk_scan_fwd),
  the chunk states B^T X (N x P over Q per head, _chunk_state_fwd), passed between chunks in fp32
  (_state_passing_fwd) and read back as C h (Q x N x P per head). Forward FLOPs per token: 2 Q N G + H (2 Q P + 4 N P),
  counted over the whole Q x Q block as the attention core is counted non-causal. Backward: the kernels of
  _mamba_chunk_scan_combined_bwd, which first recomputes the chunk states and C B^T (perf_constants.yaml mamba.scan_*,
  kernel by kernel), and the fused path re-runs the conv1d.
- Layout (Megatron-Core MambaMixer._ssm_training): activations are sequence-first, the fused kernels batch-first, so a
  micro-batch of more than one sequence copies in_proj's output and the scan output across (perf_constants.yaml
  mamba.layout_copies_*).
- Saved for backward (mamba_split_conv1d_scan_combined, MambaSplitConv1dScanCombinedFn.forward save_for_backward,
  the path MambaMixer._ssm_training takes with use_mem_eff_path): the in_proj output zxBCdt, the scan output before
  the gate (out_x), the gated norm's fp32 rstd per group; the conv1d output is recomputed in backward. Around it:
  the layer norm fused into in_proj (TELayerNormColumnParallelLinear: input + fp32 rstd, and in_proj's input) and
  out_proj's input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.calibration import load_constants
from trainsizer.models.arch import HYBRID_SYMBOLS, ModelArch

# the SSD scan's kernels and the layout copies, counted from the code (perf_constants.yaml `mamba:`)
MAMBA: dict[str, dict[str, float]] = {name: {k: float(v) for k, v in d.items()}
                                      for name, d in load_constants().raw["mamba"].items() if name != "scan_sm_bound"}


def mixer_gemm_weights(model: ModelArch) -> int:
    """Weight elements of one mixer's GEMMs: in_proj and out_proj (conv1d is depthwise, not a GEMM)."""
    return model.hidden * model.ssm_in_proj_out + model.ssm_inner * model.hidden


def scan_flops_per_token(model: ModelArch) -> float:
    """Forward FLOPs per token of one layer's SSD chunked scan: 2 Q N G + H (2 Q P + 4 N P) (module docstring)."""
    q, n, g = float(model.ssm_chunk), float(model.ssm_state), float(model.ssm_groups)
    h, p = float(model.ssm_heads), float(model.ssm_head_dim)
    return 2.0 * q * n * g + h * (2.0 * q * p + 4.0 * n * p)


def scan_time(model: ModelArch, tok: Any, t: Any, rates: Any, kernels: dict[str, float]) -> Any:
    """Seconds of one pass of the SSD chunked scan on one GPU (`kernels`: perf_constants.yaml mamba.scan_forward or
    scan_backward): its group and head GEMMs per chunk as batched 16-bit GEMMs on the roofline, plus its chunk states'
    passes through HBM (fp32, P x N per head and chunk); on Hopper / Blackwell at the per-SM rate of perf_constants.yaml
    mamba.scan_sm_bound (Rates.ssd_gemm_flops / ssd_hbm_bytes_s)."""
    from dataclasses import replace

    from trainsizer.estimate.compute import gemm_time, stream_time

    if rates.ssd_gemm_flops or rates.ssd_hbm_bytes_s:  # a per-SM rate (calibration._ssd_rates)
        rates = replace(rates, gemm16_flops=rates.ssd_gemm_flops or rates.gemm16_flops,
                        hbm_bytes_s=rates.ssd_hbm_bytes_s or rates.hbm_bytes_s)
    q, n, g = float(model.ssm_chunk), float(model.ssm_state), float(model.ssm_groups)
    heads, p = float(model.ssm_heads), float(model.ssm_head_dim)
    t = np.asarray(t, float)
    chunks = np.asarray(tok, float) / q
    return (kernels["group"] * gemm_time(q, q, n, rates, batch=chunks * g / t, linear=False)
            + kernels["qq"] * gemm_time(q, p, q, rates, batch=chunks * heads / t, linear=False)
            + kernels["qn"] * gemm_time(q, p, n, rates, batch=chunks * heads / t, linear=False)
            + stream_time(kernels["state_passes"] * 4.0 * chunks * heads / t * p * n, rates))


def layout_copy_time(model: ModelArch, tok: Any, t: Any, sequences: Any, rates: Any, copies: dict[str, float]) -> Any:
    """Seconds of the sequence-first / batch-first copies of one pass (perf_constants.yaml mamba.layout_copies_*): read
    and write each element once, only where a micro-batch holds more than one sequence (`sequences`; 0 where the
    framework keeps activations batch-first)."""
    from trainsizer.estimate.compute import stream_time

    width = (copies["in_proj_out"] * model.ssm_in_proj_out + copies["inner"] * model.ssm_inner) / np.asarray(t, float)
    kernels = float(copies["in_proj_out"] + copies["inner"])
    copy = stream_time(2.0 * rates.act_bytes * width * np.asarray(tok, float), rates, kernels=kernels)
    return np.where(np.asarray(sequences, float) > 1.0, copy, 0.0)


def mixer_times(model: ModelArch, tok: Any, t: Any, rates: Any, *, weights: bool = True, elementwise_passes: Any = 1.0,
                fp8_weight_casts: Any = 1.0, sequences: Any = 1.0) -> tuple[Any, Any]:
    """(forward, backward) seconds of one Mamba-2 mixer on one GPU for `tok` tokens of `sequences` sequences per
    sequence-first micro-batch (0: batch-first), TP degree `t` (arrays): in_proj and out_proj as linear GEMMs (FP8 under FP8 training), the SSD scan
    (`scan_time`), the layout copies (`layout_copy_time`), and the conv1d, dt and gated-norm traffic. The layer's
    pre-norm and residual are the caller's."""
    from trainsizer.estimate.compute import _fp8_casts, linear_gemms, stream_time

    h, di, inp = float(model.hidden), float(model.ssm_inner), float(model.ssm_in_proj_out)
    n, g = float(model.ssm_state), float(model.ssm_groups)
    heads = float(model.ssm_heads)
    t = np.asarray(t, float)
    a = rates.act_bytes
    in_f, in_b = linear_gemms(tok, inp / t, h, rates, weights)
    out_f, out_b = linear_gemms(tok, h, di / t, rates, weights)
    scan_f = scan_time(model, tok, t, rates, MAMBA["scan_forward"])
    scan_b = scan_time(model, tok, t, rates, MAMBA["scan_backward"])
    copy_f = layout_copy_time(model, tok, t, sequences, rates, MAMBA["layout_copies_forward"])
    copy_b = layout_copy_time(model, tok, t, sequences, rates, MAMBA["layout_copies_backward"])
    conv_w = di + 2.0 * g * n
    # conv1d + SiLU (read, write x B C), dt softplus / cumsum (fp32), gated norm (read y and z, write the output)
    ew = (2.0 * conv_w * a + 3.0 * 4.0 * heads + 3.0 * di * a) / t * tok * elementwise_passes
    ew_f = stream_time(ew, rates, kernels=3.0)
    c_f, c_b = _fp8_casts(tok, h + di / t, inp / t + h, (inp * h + di * h) / t, rates, fp8_weight_casts,
                          (2.0, 2.0, 2.0))
    conv_again = stream_time(2.0 * conv_w * a / t * tok * elementwise_passes, rates)
    fwd = in_f + out_f + scan_f + copy_f + ew_f + c_f
    bwd = in_b + out_b + scan_b + copy_b + 2.0 * ew_f + conv_again + c_b
    return fwd, bwd


def mixer_saved_items(model: ModelArch, a: float, g: float, norm: float, trains: bool) -> tuple[float, float, dict]:
    """(sequence-parallel bytes, TP-split bytes, named items) per token that one M layer keeps for backward (module
    docstring): `a` the activation bytes, `g` a saved GEMM input's bytes (FP8: the cast), `norm` the fused pre-norm's
    bytes, `trains` whether in_proj / out_proj train (their inputs are kept for the weight gradients)."""
    h, di = model.hidden, model.ssm_inner
    d = {"mamba_norm": norm}
    if trains:
        d["mamba_in_proj_input"] = g * h
    d["mamba_zxbcdt"] = a * model.ssm_in_proj_out
    d["mamba_scan_out"] = a * di
    d["mamba_gated_norm_rstd"] = 4.0 * model.ssm_groups
    if trains:
        d["mamba_out_proj_input"] = g * di
    sp = d["mamba_norm"] + d.get("mamba_in_proj_input", 0.0)
    tp = sum(v for k, v in d.items() if k not in ("mamba_norm", "mamba_in_proj_input"))
    return float(sp), float(tp), d


def kind_costs(model: ModelArch, seq_len: float) -> dict[str, float]:
    """Forward FLOPs per token of one layer of each kind of a hybrid model (the cost a pipeline split weighs): a
    Mamba-2 layer its mixer GEMMs and scan, an attention layer its projections and core at `seq_len`, an MLP or MoE
    layer its (active) GEMMs (estimate.flops.layer_flops per kind; 0 for a kind the stack does not hold)."""
    from trainsizer.estimate.flops import layer_flops

    lf = layer_flops(model)
    return {"mamba": (lf.mixer + lf.scan) / max(model.mamba_layers, 1),
            "attention": (lf.attn_proj + float(lf.attn_core(seq_len))) / max(model.attention_layers, 1),
            "mlp": lf.mlp_dense / max(model.dense_mlp_layers, 1),
            "moe": lf.moe_block() / max(model.moe_layer_count, 1)}


def layer_costs(model: ModelArch, seq_len: float) -> np.ndarray:
    """Forward FLOPs per token of each layer of a hybrid model, by its kind (`kind_costs`)."""
    per = kind_costs(model, seq_len)
    return np.array([per[model.layer_kind(i)] for i in range(model.layers)])


def mtp_block_layers(model: ModelArch, seq_len: float) -> float:
    """One MTP module's layers in the model's average decoder layers: 1 for the last layer repeated (DeepSeek-V3's
    form); a hybrid module's pattern (ModelArch.mtp_pattern, Nemotron 3 Super's '*E') by its layers' forward FLOPs
    over the average layer's (`kind_costs`, the weighing `stage_imbalance` gives a pipeline stage)."""
    if not model.mtp_pattern or not model.is_hybrid:
        return 1.0
    per = kind_costs(model, seq_len)
    mean = float(np.mean(layer_costs(model, seq_len)))
    return float(sum(per[HYBRID_SYMBOLS[s]] for s in model.mtp_pattern) / max(mean, 1e-30))


def stage_imbalance(model: ModelArch, seq_len: float, pp: Any, vpp: Any) -> Any:
    """The most loaded pipeline rank's layer work over its layers at the pattern's average (1 without a pattern or
    without PP): Megatron-Core splits a hybrid pattern into pp x vpp chunks of consecutive layers of (nearly) equal
    count (chunk i of rank i mod pp), whatever the layers cost, so the rank whose chunks hold more attention or Mamba-2
    layers than the average sets the pipeline's pace. Costs: `layer_costs`."""
    if not model.is_hybrid:
        return np.ones(np.broadcast(np.asarray(pp), np.asarray(vpp)).shape)
    costs = layer_costs(model, seq_len)
    cum = np.concatenate([[0.0], np.cumsum(costs)])
    mean = cum[-1] / model.layers

    def one(p: float, v: float) -> float:
        p, v = int(p), max(int(v), 1)
        if p <= 1:
            return 1.0
        edges = np.round(np.linspace(0, model.layers, p * v + 1)).astype(int)
        work = np.zeros(p)
        count = np.zeros(p)
        for i in range(p * v):
            work[i % p] += cum[edges[i + 1]] - cum[edges[i]]
            count[i % p] += edges[i + 1] - edges[i]
        return float(np.max(work / np.maximum(count * mean, 1e-30)))

    p_arr, v_arr = np.broadcast_arrays(np.asarray(pp, float), np.maximum(np.asarray(vpp, float), 1.0))
    pairs, inverse = np.unique(np.stack([p_arr.ravel(), v_arr.ravel()], axis=1), axis=0, return_inverse=True)
    values = np.array([one(p, v) for p, v in pairs])
    return values[np.asarray(inverse).ravel()].reshape(p_arr.shape)
