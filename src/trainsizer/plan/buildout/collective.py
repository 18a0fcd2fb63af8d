"""The gradient all-reduce the strategy needs, on the fabric chosen: the performance model's communication
terms (estimate.comm ring/tree alpha-beta on the real topology, estimate.calibration.rates, NVLS gain inside one
NVSwitch domain: perf_constants nvls_allreduce_gain) applied to the data-parallel gradient reduction of one step,
beside the exposed DP time the step-time model reports."""

from __future__ import annotations

from trainsizer.messages import msg
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import AllReduce


def gradient_bytes_per_rank(b: BuildInput) -> float:
    """bf16 gradients of one model-parallel shard: dense / (tp pp) + routed experts / (tp pp ep);
    LoRA: the adapters only."""
    from trainsizer.estimate.model_states import lora_trainable_params

    model, s = b.scenario.model, b.strategy
    if not b.scenario.training.trains_base_weights:
        return 2.0 * lora_trainable_params(model, b.scenario.training) / max(1, s.tp * s.pp)
    expert = float(sum(model.layer_params(i).experts_total for i in range(model.layers)))
    dense = float(model.params_total) - expert
    return 2.0 * (dense / (s.tp * s.pp) + expert / (s.tp * s.pp * max(1, s.ep)))


def allreduce(b: BuildInput) -> AllReduce | None:
    """None when there is no data parallelism (nothing to reduce across replicas)."""
    from trainsizer.estimate import comm
    from trainsizer.estimate.calibration import load_constants, rates

    s, system = b.strategy, b.system
    ranks = int(s.dp * s.cp)
    if ranks <= 1:
        return None
    precision = b.scenario.training.precision
    # inside one NVLink bridge of a PCIe host (the DP x CP group ranks TP apart), the bridge's rate, as the step model
    r = comm.bridge_rates(rates(system, "bf16" if precision == "fp8" else precision), ranks, s.tp, system)
    k = int(comm.ranks_per_domain(ranks, s.tp, system.domain_gpus))
    m = comm.zone_members(ranks, s.tp, system)  # members per zone of the job's fabric (hardware.fabric)
    nbytes = gradient_bytes_per_rank(b)
    gain = load_constants().nvls_allreduce_gain  # NVLS inside one NVSwitch domain, as the step model times it
    t = float(comm.all_reduce_time(nbytes, ranks, k, r, system, gain, m=m))
    multi = ranks > k
    busbw = float(comm.ring_busbw(ranks, k, r, system, m)) * (gain if system.nvls and not multi else 1.0)
    algo = msg("ar_algo_multi") if multi else msg("ar_algo_nvls") if system.nvls else msg("ar_algo_ring")
    step = float(b.evaluation["time"]["step_s"])
    exposed = float(b.evaluation["time"]["breakdown_s"].get("dp_comm", 0.0))
    return AllReduce(
        group=msg("ar_group", dp=s.dp, cp=s.cp, tp=s.tp), ranks=ranks, ranks_per_domain=k,
        bytes_per_rank_gb=nbytes / 1e9, algorithm=algo, busbw_gb_s=busbw / 1e9, time_s=t,
        exposed_s_per_step=exposed, step_s=step, exposed_share_of_step=exposed / step if step > 0 else 0.0,
        formula=msg("ar_formula", scaleup=_scaleup_name(b)))


def _scaleup_name(b: BuildInput):
    """The part's scale-up link in words (NVLink, xGMI, HCCS ...): the formula's inside-the-domain bus bandwidth."""
    from trainsizer.plan.buildout.acceptance import scaleup_name

    return scaleup_name(b.accelerator)
