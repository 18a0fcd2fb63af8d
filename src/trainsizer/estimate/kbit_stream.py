"""QLoRA's fp32 stream: what one decoder layer (dense, or MoE under transformers 4.x's expert loop) casts and
streams, per token, beyond the same layer in 16 bit, where PEFT's prepare_model_for_kbit_training leaves the norms
fp32 under the Trainer's 16-bit autocast.

Origins (one line each; docs/known-gaps.md 243 (a)):
- Linear4bit returns its input's dtype, taking an fp32 or bf16 input's dtype as its compute dtype before
  bitsandbytes 0.47 (bitsandbytes nn/modules.py at 0.43.3, 2e03d344: set_compute_type, `out.to(inp_dtype)`).
- MatMul4Bit casts the dequantised weight to its input's dtype, `F.dequantize_4bit(B, quant_state).to(A.dtype)`,
  and runs F.linear under the caller's autocast (autograd/_functions.py at 0.43.3: no custom_fwd); its backward uses
  `.to(grad_output.dtype)`, 16-bit there.
- PEFT's bnb LoRA layer clones the base output and leaves the cast of lora_A's input to autocast (peft
  src/peft/tuners/lora/bnb.py at v0.13.2, 431c0e2d).
- An MoE block gathers each expert's tokens, runs the expert's linears and index_adds the weighted output in the
  norm output's dtype (transformers models/mixtral/modeling_mixtral.py MixtralSparseMoeBlock.forward, 4.x).
- The norms stay fp32: prepare_model_for_kbit_training (peft src/peft/utils/other.py at v0.13.2), TRL's
  peft_module_casting_to_bf16 (trl/trainer/utils.py at v0.13.0, 8d4cc942).
Per-element byte counts: perf_constants.yaml kbit_fp32_stream.

Pure functions of the model and the job.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from trainsizer.estimate.inputs import Training
from trainsizer.estimate.model_states import dense_linears, trainable
from trainsizer.models.arch import ModelArch

# the linears reading an fp32 tensor: the norms' outputs (q, k, v; gate, up) and the MLP's fp32 product (down);
# o_proj reads the attention kernel's 16-bit output
FP32_INPUT_LINEARS = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Fp32Stream:
    """Per token of one decoder layer, one forward: 16-bit -> fp32 copies (`up_elems`), fp32 -> 16-bit copies
    (`down_elems`), cast kernels (`casts`), element-wise HBM bytes beyond the 16-bit layer's (`extra_bytes`); and
    the weight elements of the 4-bit linears reading an fp32 input, cast twice a forward where the compute dtype is
    the input's fp32: the layer's own (`weight_elems`) and its routed experts' (`expert_weight_elems`, every expert)."""

    up_elems: float
    down_elems: float
    casts: float
    extra_bytes: float
    weight_elems: float
    expert_weight_elems: float = 0.0

    def __add__(self, other: Fp32Stream) -> Fp32Stream:
        return Fp32Stream(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def scaled(self, share: float) -> Fp32Stream:
        return Fp32Stream(*(share * a for a in astuple(self)))


def _mlp(model: ModelArch, c: dict[str, Any], width: float, slots: float, adapted: bool = True,
         training: Training | None = None) -> Fp32Stream:
    """An MLP of inner width `width` run `slots` times a token: its input linears (gate and up, or up) read the norm's
    fp32 output, down_proj the fp32 product; each returns fp32."""
    h = float(model.hidden)
    gated = model.mlp == "swiglu"
    n_in = 2.0 if gated else 1.0
    names = (("gate_proj", "up_proj") if gated else ("up_proj",), "down_proj")
    a_in = sum(h for n in names[0] if adapted and training is not None and trainable(n, training)) \
        + (width if adapted and training is not None and trainable(names[1], training) else 0.0)
    a_out = sum(width for n in names[0] if adapted and training is not None and trainable(n, training)) \
        + (h if adapted and training is not None and trainable(names[1], training) else 0.0)
    n_adapted = sum(1.0 for n in (*names[0], names[1]) if adapted and training is not None and trainable(n, training))
    return Fp32Stream(up_elems=slots * (n_in * width + h), down_elems=slots * (n_in * h + width + a_in),
                      casts=2.0 * (n_in + 1.0) + n_adapted,
                      extra_bytes=slots * ((c["swiglu"] if gated else c["mlp_act"]) * width
                                           + c["adapter_in"] * a_in + c["adapter_out"] * a_out),
                      weight_elems=(n_in + 1.0) * h * width)


def _attention(model: ModelArch, training: Training, c: dict[str, Any]) -> Fp32Stream:
    """The norms, residual adds, q / k / v (o_proj reads the attention's 16-bit output) and RoPE of one layer."""
    linears = [(n, d_in, d_out) for n, d_in, d_out in dense_linears(model) if n in FP32_INPUT_LINEARS[:3]]
    adapted = [(d_in, d_out) for n, d_in, d_out in linears if trainable(n, training)]
    h = float(model.hidden)
    elementwise = (2.0 * c["norm"] * h if model.norm == "rmsnorm" else 0.0) \
        + (c["residual_attention"] + c["residual_mlp"]) * h \
        + (c["rope"] * float(model.q_dim + model.kv_dim) if model.position == "rope" else 0.0) \
        + sum(c["adapter_in"] * d_in + c["adapter_out"] * d_out for d_in, d_out in adapted)
    qkv = float(model.q_dim + model.kv_dim + model.v_dim)
    return Fp32Stream(up_elems=float(sum(d_out for _, _, d_out in linears)),
                      down_elems=float(sum(d_in for _, d_in, _ in linears) + sum(d_in for d_in, _ in adapted)) + qkv,
                      casts=2.0 * len(linears) + len(adapted) + 3.0, extra_bytes=elementwise,
                      weight_elems=float(sum(d_in * d_out for _, d_in, d_out in linears)))


def _routed(model: ModelArch, c: dict[str, Any]) -> Fp32Stream:
    """An MoE layer's router (a 4-bit linear on the fp32 norm output) and its routed experts as transformers 4.x's
    loop runs them (modeling_mixtral.py MixtralSparseMoeBlock: the fp32 tokens gathered per expert, each expert's
    MLP, the fp32 routing-weight product and index_add_ into an fp32 output), top-k slots a token; every expert's
    weights (each one dequantised and, computing in fp32, cast). Shared experts as a dense MLP of their width."""
    h, e, k = float(model.hidden), float(model.experts), float(model.experts_per_token)
    expert = _mlp(model, c, float(model.expert_ffn), k, adapted=False)
    out = Fp32Stream(up_elems=e + expert.up_elems, down_elems=h + expert.down_elems, casts=2.0 + e * expert.casts,
                     extra_bytes=expert.extra_bytes + k * (c["routed_gather"] + c["routed_combine"]) * h,
                     weight_elems=h * e, expert_weight_elems=e * expert.weight_elems)
    if model.shared_expert_ffn:
        out = out + _mlp(model, c, float(model.shared_expert_ffn), 1.0, adapted=False)
    return out


def fp32_stream(model: ModelArch, training: Training, c: dict[str, Any], expert_loop: bool = True) -> Fp32Stream:
    """The counts of `Fp32Stream` for an average decoder layer of `model` (`c`: perf_constants.yaml
    kbit_fp32_stream): dense layers with their MLP; MoE layers with the router and the routed experts where
    transformers' expert loop runs them as 4-bit linears (`expert_loop`), else their attention part only."""
    attention = _attention(model, training, c)
    dense = attention + _mlp(model, c, float(model.ffn), 1.0, training=training)
    moe_share = model.moe_layer_count / model.layers if model.is_moe else 0.0
    if moe_share == 0.0:
        return dense
    moe = attention + _routed(model, c) if expert_loop else attention
    return dense.scaled(1.0 - moe_share) + moe.scaled(moe_share)
