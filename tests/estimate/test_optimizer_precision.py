"""strategy.optimizer_precision: what AdamW keeps per parameter besides the 16-bit weights. bf16-moments halves the
moments and keeps the fp32 master (DeepSeek-V3 s3.3.3, Megatron-Core's precision-aware optimizer); bf16 also drops
the master copy (Apex DistributedFusedAdam with dtype bf16 under NeMo 1), so its step also streams bf16 states and
gradients (the style flag model_dtype_states, step time); 8-bit AdamW takes bf16 (no master: it steps the parameter's
own dtype), other optimizers refuse it."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate import memory
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.names import OPTIMIZER_PRECISIONS
from trainsizer.spec import job

from .test_perf_common import a100_cluster, llama8b

GIB = 2**30


def _items(precision, optimizer="adamw", zero=1, framework="megatron-core"):
    # no recompute, two sequences a micro-batch: the training steps peak above Megatron-Core DDP's model-init peak (the
    # weights twice and the gradient buffer, known-gaps 270 (f)), so the items are the steps' states these tests compare
    training = Training(method="pretrain", seq_len=2048, global_batch_seqs=64, optimizer=optimizer)
    st = Strategy(dp=8, zero=zero, micro_batch=2, recompute="none", framework=framework,
                  optimizer_precision=precision)
    return estimate_memory(llama8b(), training, a100_cluster(8), st).items_bytes


def test_bf16_moments_halve_adams_states_and_keep_the_master():
    fp32, moments = _items(None), _items("bf16-moments")
    assert _items("fp32") == fp32
    assert moments["optimizer_states"] == pytest.approx(fp32["optimizer_states"] / 2)
    assert moments["master_weights"] == pytest.approx(fp32["master_weights"])
    # 8B over 8 ZeRO-1 ranks: 4 B of moments less per parameter, about 3.7 GiB
    saved = (fp32["optimizer_states"] - moments["optimizer_states"]) / GIB
    assert 3.0 < saved < 4.5


def test_bf16_drops_the_master_copy():
    fp32, bf16 = _items(None), _items("bf16")
    assert bf16.get("master_weights", 0.0) == 0.0
    assert bf16["optimizer_states"] == pytest.approx(fp32["optimizer_states"] / 2)
    assert bf16["weights"] == pytest.approx(fp32["weights"])


def test_torchtunes_model_dtype_states_are_not_raised():
    # torchtune already keeps bf16 states and no master: the option never adds memory
    base, bf16 = _items(None, framework="torchtune", zero=3), _items("bf16", framework="torchtune", zero=3)
    assert sum(bf16.values()) == pytest.approx(sum(base.values()))


def _step_s(precision, framework="megatron-core", method="pretrain", style=None, **kw):
    training = Training(method=method, seq_len=2048, global_batch_seqs=64)
    st = Strategy(**({"dp": 8, "zero": 1, "framework": framework, "optimizer_precision": precision} | kw))
    return estimate_time(llama8b(), training, a100_cluster(st.dp), st, framework_style=style).step_s


def test_the_fp32_master_keeps_the_step_time():
    # bf16-moments keeps the fp32 master and gradients the update reads: its step time is the default's
    assert _step_s("bf16-moments") == _step_s("fp32") == _step_s(None)


def test_bf16_states_step_as_the_model_dtype_style():
    """No master: the update reads and writes bf16 weights, gradients and moments, as a style that keeps its states
    in the model dtype (torchtune) does; less time than the fp32 master's update, the rest of the step the same."""
    style = dataclasses.replace(perf_style("megatron-core"), model_dtype_states=True)
    assert _step_s("bf16") == pytest.approx(_step_s(None, style=style), rel=1e-12)
    assert _step_s("bf16") < _step_s(None)


def test_a_bf16_loaded_hf_full_fine_tune_casts_no_fp32_weights():
    """The HF Trainer's autocast over an fp32-loaded model casts every weight (amp_fp32_weights); a model loaded in
    bf16 (optimizer_precision bf16: ms-swift 1.5's dtype AUTO) has none to cast and steps in bf16."""
    kw = {"framework": "hf", "method": "full", "dp": 1, "zero": 0, "micro_batch": 1, "recompute": "full"}
    bf16_style = dataclasses.replace(perf_style("hf"), amp_fp32_weights=False, model_dtype_states=True)
    assert _step_s("bf16", **kw) == pytest.approx(_step_s(None, style=bf16_style, **kw), rel=1e-12)
    assert _step_s("bf16", **kw) < 0.9 * _step_s(None, **kw)  # the casts and the fp32 update: a tenth of the step


def test_bad_values_are_refused():
    with pytest.raises(SpecError) as err:
        _items("bf-16")
    assert err.value.where == "strategy.optimizer_precision"
    with pytest.raises(SpecError) as err:
        _items("bf16-moments", optimizer="adamw8bit")  # its moments are 1 byte already
    assert "adamw8bit" in str(err.value)
    with pytest.raises(SpecError):
        _items("bf16", optimizer="sgd")
    assert _items("fp32", optimizer="adamw8bit")  # fp32 is every optimizer's own


@pytest.mark.parametrize("optimizer", ["adamw8bit", "paged_adamw8bit"])
def test_8bit_adamw_on_a_bf16_model_keeps_no_master(optimizer):
    """bitsandbytes' and torchao's 8-bit AdamW update the parameter in its own dtype: on a bf16-loaded model
    (optimizer_precision bf16) there is no fp32 master; the 1-byte moments and the bf16 weights stay as they were."""
    fp32, bf16 = _items(None, optimizer=optimizer), _items("bf16", optimizer=optimizer)
    assert fp32["master_weights"] > 0.0 and bf16.get("master_weights", 0.0) == 0.0
    assert bf16.get("optimizer_states", 0.0) == pytest.approx(fp32.get("optimizer_states", 0.0))
    assert bf16["weights"] == pytest.approx(fp32["weights"])


def test_job_file_names_the_precisions():
    assert typing.get_args(job.OptimizerPrecision) == OPTIMIZER_PRECISIONS
    spec = job.StrategySpec(optimizer_precision="bf16-moments")
    assert spec.optimizer_precision == "bf16-moments"
    with pytest.raises(ValueError):
        job.StrategySpec(optimizer_precision="fp16")


def test_job_file_refuses_a_precision_its_optimizer_does_not_keep():
    """The job file is refused at `check` (spec.Job) by the rule the estimators apply (names.optimizer_precisions_for),
    naming the field, the precision and the optimizer; fp32 and AdamW stay allowed."""
    from trainsizer.spec import load_job

    base = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    for opt in ("sgd", "adamw8bit", "adafactor"):
        with pytest.raises(SpecError, match=f"optimizer_precision bf16-moments does not apply to optimizer {opt}"):
            load_job(base | {"optimizer": opt, "strategy": {"optimizer_precision": "bf16-moments"}})
        assert load_job(base | {"optimizer": opt, "strategy": {"optimizer_precision": "fp32"}})
    assert load_job(base | {"optimizer": "paged_adamw", "strategy": {"optimizer_precision": "bf16"}})
    assert load_job(base | {"optimizer": "adamw8bit", "strategy": {"optimizer_precision": "bf16"}})


def test_fp32_remainders_halve_the_master_and_keep_the_moments():
    """Apex DistributedFusedAdam's store_param_remainders (NeMo 1's default for a bf16 model without fp8_params):
    the fp32 master is the bf16 weight plus an int16 shard of its low bits, 2 B, the moments stay fp32
    (docs/known-gaps.md 245 (a)); the weights and the step time are the default's."""
    fp32, rem = _items(None), _items("fp32-remainders")
    assert rem["master_weights"] == pytest.approx(fp32["master_weights"] / 2)
    assert rem["optimizer_states"] == pytest.approx(fp32["optimizer_states"])
    assert rem["weights"] == pytest.approx(fp32["weights"])
    assert _step_s("fp32-remainders") == _step_s(None)


def _fp8_items(precision, **kw):
    training = Training(method="pretrain", seq_len=2048, global_batch_seqs=64, precision="fp8")
    st = Strategy(**({"dp": 8, "zero": 1, "micro_batch": 1, "recompute": "full", "framework": "megatron-core",
                      "distributed_optimizer": True, "optimizer_precision": precision} | kw))
    return estimate_memory(llama8b(), training, a100_cluster(8), st).items_bytes


def test_fp32_remainders_need_bf16_weights():
    """The low 16 bits complete a master only under a bf16 weight: an fp16 / fp32 model or FP8 primary weights
    (megatron-core's FP8 default with the distributed optimizer) are refused, naming the field and what to set."""
    with pytest.raises(SpecError, match="fp8_param_allgather true") as err:
        _fp8_items("fp32-remainders")
    assert err.value.where == "strategy.optimizer_precision"
    rem, fp32 = _fp8_items("fp32-remainders", fp8_param_allgather=False), _fp8_items(None, fp8_param_allgather=False)
    assert rem["master_weights"] == pytest.approx(fp32["master_weights"] / 2)
    training = Training(method="pretrain", seq_len=2048, global_batch_seqs=64, precision="fp16")
    st = Strategy(dp=8, zero=1, micro_batch=1, recompute="full", optimizer_precision="fp32-remainders")
    with pytest.raises(SpecError, match="precision fp16"):
        estimate_memory(llama8b(), training, a100_cluster(8), st)


def test_job_file_refuses_remainders_without_bf16_weights():
    from trainsizer.spec import load_job

    base = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    rem = {"optimizer_precision": "fp32-remainders"}
    assert load_job(base | {"strategy": rem})
    assert load_job(base | {"precision": "fp8", "strategy": rem | {"fp8_param_allgather": False}})
    with pytest.raises(SpecError, match="not precision fp16"):
        load_job(base | {"precision": "fp16", "strategy": rem})
    with pytest.raises(SpecError, match="not fp8_param_allgather true"):
        load_job(base | {"precision": "fp8", "strategy": rem | {"fp8_param_allgather": True}})
    with pytest.raises(SpecError, match="does not apply to optimizer paged_adamw"):
        load_job(base | {"optimizer": "paged_adamw", "strategy": rem})


def test_bf16_moments_remainders_take_the_moments_of_one_and_the_master_of_the_other():
    """Megatron-Core's precision-aware optimizer with bf16 moments over bf16 weights: Transformer Engine's FusedAdam
    keeps the master as int16 remainders (store_param_remainders, on by default) beside bf16 moments
    (docs/known-gaps.md 270 (c)): bf16-moments' moments, fp32-remainders' master; weights and step time as before."""
    moments, rem, both = _items("bf16-moments"), _items("fp32-remainders"), _items("bf16-moments-remainders")
    assert both["optimizer_states"] == pytest.approx(moments["optimizer_states"])
    assert both["master_weights"] == pytest.approx(rem["master_weights"])
    assert both["master_weights"] == pytest.approx(moments["master_weights"] / 2)
    assert both["weights"] == pytest.approx(moments["weights"])
    assert _step_s("bf16-moments-remainders") == _step_s("bf16-moments")


def test_bf16_moments_remainders_need_bf16_weights():
    """As fp32-remainders: refused under FP8 primary weights (Megatron-Core keeps its own fp32 master there), the
    message naming the value the job set."""
    with pytest.raises(SpecError, match="bf16-moments-remainders keeps each fp32 master") as err:
        _fp8_items("bf16-moments-remainders")
    assert err.value.where == "strategy.optimizer_precision"
    from trainsizer.spec import load_job

    base = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    assert load_job(base | {"strategy": {"optimizer_precision": "bf16-moments-remainders"}})
    with pytest.raises(SpecError, match="strategy.optimizer_precision bf16-moments-remainders keeps"):
        load_job(base | {"precision": "fp16", "strategy": {"optimizer_precision": "bf16-moments-remainders"}})


def test_bf16_master_keeps_a_bf16_master_and_bf16_moments():
    """DeepSpeed's bf16_master_weights_and_grads with bf16_optimizer_states (PR 7700): a bf16 master copy beside the
    bf16 weights (half the fp32 master, not none as under bf16) and bf16 moments (docs/known-gaps.md 296 (b)); stepped
    as bf16 (all its states in the model dtype)."""
    fp32, bf16, master = (_items(p, framework="deepspeed") for p in (None, "bf16", "bf16-master"))
    assert master["master_weights"] == pytest.approx(fp32["master_weights"] / 2)
    assert master["optimizer_states"] == pytest.approx(bf16["optimizer_states"])
    assert master["weights"] == pytest.approx(fp32["weights"])
    assert _step_s("bf16-master", framework="deepspeed") == _step_s("bf16", framework="deepspeed")


def test_bf16_master_casts_the_steps_gradient_to_bf16():
    """The ZeRO step casts each sub-group's gradient partition to the master's dtype (stage3.py
    _prepare_fp32_grad_for_sub_group): 2 B a parameter under bf16-master (memory_constants.yaml master_grads), the
    fp32 cast's 4 under a precision with an fp32 master; the flatten's 16-bit copy is that cast itself (none apart)."""
    training = Training(method="pretrain", seq_len=2048, global_batch_seqs=64)
    blocks = {}
    for precision in ("bf16-moments", "bf16-master"):
        st = Strategy(dp=8, zero=3, micro_batch=1, recompute="full", framework="deepspeed",
                      optimizer_precision=precision)
        b = memory._batch(llama8b(), training, st, memory.DEFAULT_OPTIONS)
        blocks[precision] = memory._deepspeed_step_blocks(b, 1e8)
    assert bool(blocks["bf16-master"][0]) and bool(blocks["bf16-moments"][0])
    assert blocks["bf16-moments"][1:] == pytest.approx((2e8, 4e8))
    assert blocks["bf16-master"][1:] == pytest.approx((0.0, 2e8))


def test_bf16_master_needs_bf16_weights():
    """DeepSpeed keeps a bf16 master under its bf16 engine only: fp16 / fp32 / fp8 jobs are refused, in the job file
    and in the estimator, naming the field and the precision to set."""
    from trainsizer.spec import load_job

    training = Training(method="pretrain", seq_len=2048, global_batch_seqs=64, precision="fp16")
    st = Strategy(dp=8, zero=1, micro_batch=1, recompute="full", framework="deepspeed", optimizer_precision="bf16-master")
    with pytest.raises(SpecError, match="bf16-master keeps a bf16 master copy.*not precision fp16") as err:
        estimate_memory(llama8b(), training, a100_cluster(8), st)
    assert err.value.where == "strategy.optimizer_precision"
    base = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    assert load_job(base | {"strategy": {"optimizer_precision": "bf16-master"}})
    for precision in ("fp16", "fp32", "fp8"):
        with pytest.raises(SpecError, match=f"optimizer_precision bf16-master .* not precision {precision}"):
            load_job(base | {"precision": precision, "strategy": {"optimizer_precision": "bf16-master"}})
