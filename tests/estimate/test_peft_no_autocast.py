"""strategy.autocast false: a loop over a 16-bit-loaded model without torch.autocast (universal-llm-trainer's
amp_training False). HF PEFT keeps its adapters fp32 and casts each adapted linear's input to them (peft 0.14.0
lora/layer.py Linear.forward: `x = x.to(lora_A.weight.dtype)`, `result = result + lora_B(lora_A(dropout(x))) *
scaling`, `result.to(torch_result_dtype)`), so without autocast every adapter op runs in fp32 and the sum is promoted
to fp32 and cast back: perf_constants.yaml lora.peft_fp32_no_autocast in place of lora.peft_fp32_input_cast
(docs/known-gaps.md 191 (e)). Null = the framework's (hf: the Trainer's autocast)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _job(autocast: object = None, method: str = "lora", precision: str = "bf16", accelerator: str = "h100-sxm-80gb",
         targets: list[str] | None = None, seq_len: int = 4096) -> dict:
    strategy = {"micro_batch": 2, "recompute": "full", "framework": "hf"}
    if autocast is not None:
        strategy["autocast"] = autocast
    job = {"model": "llama-3.1-8b", "method": method, "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": 2}, "precision": precision,
           "hardware": {"accelerator": accelerator, "count": 1}, "strategy": strategy}
    if method in ("lora", "qlora"):
        job["lora"] = {"rank": 8, "targets": targets or ALL_LINEAR}
    return job


def _step_s(**kw) -> float:
    return evaluate(resolve_job(_job(**kw), CAT), CAT)["time"]["step_s"]


def _x(**kw) -> step_time._Step:
    sc = resolve_job(_job(**kw), CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def test_null_and_true_are_the_frameworks_autocast():
    assert _step_s(autocast=True) == _step_s()


@pytest.mark.parametrize("bad", ["maybe", 2, "sometimes"])
def test_a_value_other_than_true_or_false_is_refused_naming_the_field(bad):
    with pytest.raises(Exception, match="autocast"):
        resolve_job(_job(autocast=bad), CAT)


def test_without_autocast_the_peft_adapters_cost_more():
    assert _step_s(autocast=False) > _step_s()


@pytest.mark.parametrize("kw", [{"method": "full"}, {"precision": "fp32"}])
def test_no_adapter_or_an_fp32_model_is_unchanged(kw):
    """A full fine-tune has no adapter; an fp32 model has no 16-bit input to cast (the fp32 QLoRA rows)."""
    assert _step_s(autocast=False, **kw) == _step_s(**kw)


@settings(max_examples=12, deadline=None)
@given(targets=st.sampled_from([["q_proj", "v_proj"], ["o_proj", "down_proj"], ["gate_proj", "up_proj"], ALL_LINEAR]),
       seq_len=st.sampled_from([1024, 4096, 8192]))
def test_the_extra_is_the_counted_fp32_bytes(targets, seq_len):
    """On a part without a measured dynamic-cast rate (the RTX PRO 6000) the extra adapter time of an average layer is
    the counted difference of the two entries over the part's stream rate, plus their kernel difference."""
    kw = {"accelerator": "rtx-pro-6000", "targets": targets, "seq_len": seq_len}
    x_off, x_on = _x(autocast=False, **kw), _x(**kw)
    extra = float(step_time._lora_adapters(x_off) - step_time._lora_adapters(x_on))
    lc = x_on.k.raw["lora"]
    off, on = lc["peft_fp32_no_autocast"], lc["peft_fp32_input_cast"]
    w_in, w_out, _, _, n_lin = lora_adapted_widths(x_on.model, x_on.training)
    d = {k: float(off.get(k, 0.0)) - float(on.get(k, 0.0))
         for k in ("fwd_in_elems", "fwd_out_elems", "bwd_in_elems", "bwd_out_elems", "fwd_kernels", "bwd_kernels")}
    fs, r = float(x_on.full_share), x_on.r
    elems = (d["fwd_in_elems"] * w_in + d["fwd_out_elems"] * w_out) * (1.0 + fs) \
        + d["bwd_in_elems"] * w_in + d["bwd_out_elems"] * w_out
    kernels = n_lin * (d["fwd_kernels"] * (1.0 + fs) + d["bwd_kernels"])
    expected = float(x_on.tok) * elems * r.act_bytes / r.hbm_bytes_s + kernels * r.kernel_fixed_s
    assert extra == pytest.approx(expected, rel=1e-9)
    assert extra > 0.0
