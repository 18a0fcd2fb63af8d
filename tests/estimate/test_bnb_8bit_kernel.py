"""bitsandbytes' blockwise 8-bit AdamW kernel timed as a latency-bound kernel (estimate/optimizer_kernels.py): five
dependent DRAM loads a thread block, the blocks an SM holds by its registers and thread slots, the catalog's SM figures
(sm_occupancy) and strategy.bnb_optimizer_block (docs/known-gaps.md 174)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.catalog.records import SmOccupancy
from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.optimizer_kernels import bnb_8bit_kernel_s, resident_blocks
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models import load_model
from trainsizer.spec.job import StrategySpec

CAT = load_catalog()
LLAMA2 = load_model("llama-2-7b")
KERNELS = {int(b): v for b, v in load_constants().raw["optimizer"]["bnb_8bit_kernels"].items()}
BARE = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=1, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
A100 = replace(BARE, sms=108, threads_per_sm=2048, registers_per_sm=65536, dram_latency_s=405e-9, l2_latency_s=150e-9)


def _optimizer_s(system: System, optimizer: str = "adamw8bit", block: int | None = None, **kw) -> float:
    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer=optimizer)
    strategy = Strategy(micro_batch=2, recompute="full", framework="torchtune", bnb_optimizer_block=block, **kw)
    return float(step_time_arrays(LLAMA2, training, system, strategy)["optimizer"].reshape(-1)[0])


def test_an_a100_holds_five_256_blocks_and_three_2048_blocks():
    """48 registers x 256 threads: 12,288 a block, 5 in 65,536; 80 x 256: 20,480, 3 (the kernel's
    __launch_bounds__(256, 3)); the thread slots would allow 8. No SM figures: 0."""
    assert (resident_blocks(KERNELS[256], A100), resident_blocks(KERNELS[2048], A100)) == (5, 3)
    assert resident_blocks(KERNELS[256], BARE) == 0


def test_the_0_44_kernel_is_latency_bound_on_an_a100():
    """At 256 elements a block: 108 x 5 x 256 elements every 5 x 405 ns, ~68e9 elements/s, a third of the ~204e9 its
    10 B an element allow at 2,039 GB/s: the kernel adds more than the bytes' own time. At 2,048 it streams, but for
    one wave a small tensor (65 norms of 4,096 elements)."""
    stream = _optimizer_s(BARE)
    new, old = _optimizer_s(A100), _optimizer_s(A100, block=2048)
    assert _optimizer_s(BARE, block=2048) == stream  # no SM figures: the old charge
    assert new - stream > 6.7e9 * 10 / 2039e9
    assert 0.0 < old - stream < 0.2e-3


def test_other_optimizers_are_not_charged():
    for opt in ("adamw", "paged_adamw", "sgd"):
        assert _optimizer_s(A100, opt) == _optimizer_s(BARE, opt), opt
    assert _optimizer_s(A100, "paged_adamw8bit") > _optimizer_s(BARE, "paged_adamw8bit")


def test_flat_partitions_and_host_steps_are_not_charged():
    for kw in ({"zero": 3, "dp": 1}, {"offload": "optimizer"}):
        assert _optimizer_s(A100, **kw) == pytest.approx(_optimizer_s(BARE, **kw)), kw


@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=50e-9, max_value=2e-6), st.floats(min_value=1.1, max_value=3.0))
def test_the_extra_time_is_never_negative_and_grows_with_the_latency(latency, factor):
    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer="adamw8bit")
    args = (LLAMA2, training)
    lo = bnb_8bit_kernel_s(*args, replace(A100, dram_latency_s=latency), KERNELS, 256, 10.0, 2039e9, 32, 1.0)
    hi = bnb_8bit_kernel_s(*args, replace(A100, dram_latency_s=latency * factor), KERNELS, 256, 10.0, 2039e9, 32, 1.0)
    assert 0.0 <= float(lo) <= float(hi)


def test_lora_adapters_take_a_wave_each():
    """LoRA r 8 on q / v: A (4,096 x 8) and B (8 x 4,096), 128 blocks each, one wave: 128 tensors x (5 x 405 + 150)
    ns, the quantile maps' L2 hit before the five DRAM loads."""
    training = Training(method="lora", seq_len=2048, global_batch_seqs=2, optimizer="adamw8bit",
                        lora_targets=("q_proj", "v_proj"), lora_rank=8)
    t = bnb_8bit_kernel_s(LLAMA2, training, A100, KERNELS, 256, 10.0, 2039e9, 32, 1.0)
    assert float(t) == pytest.approx(128 * (5 * 405e-9 + 150e-9 - 32768 * 10.0 / 2039e9), rel=1e-6)


def test_catalog_figures_are_sourced_and_reach_the_system():
    for acc in ("a100-sxm-80gb", "a100-sxm-40gb", "h100-pcie-80gb", "h100-sxm-80gb", "gh200-96gb", "rtx-4090",
                "rtx-5090"):
        occ = CAT.accelerator(acc).sm_occupancy
        assert occ.sources and set(occ.sources) <= CAT.accelerator(acc).source_ids() and occ.date
        assert all(s in CAT.sources for s in occ.sources)
    assert (CAT.accelerator("a100-sxm-80gb").sm_occupancy.sms, CAT.accelerator("a100-sxm-80gb").sm_occupancy.l2_latency_ns) == (108, 150)
    assert CAT.accelerator("l40s").sm_occupancy is None  # no latency measured: no latency term
    with pytest.raises(ValidationError, match="sources"):
        SmOccupancy(sms=108, threads_per_sm=2048, registers_per_sm=65536, dram_latency_ns=405, sources=(),
                    date="2026-12-05")


def test_a_block_other_than_the_kernels_is_refused():
    with pytest.raises(ValidationError, match="256"):
        StrategySpec(bnb_optimizer_block=512)
    with pytest.raises(SpecError) as err:
        _optimizer_s(A100, block=512)
    assert err.value.where == "strategy.bnb_optimizer_block" and "256" in str(err.value) and "2048" in str(err.value)


def test_the_consumer_parts_hold_fewer_threads_a_sm():
    """Compute capability 8.9 / 12.0 hold 1,536 threads an SM, the data-centre parts 2,048 (cuda_cc_table); the
    pointer chase's cycles over each part's boost clock (markdewing_latency): the GDDR parts' latency is not the
    HBM parts' (RTX 4090 252 ns, RTX 5090 389, H100 SXM 354)."""
    occ = {a: CAT.accelerator(a).sm_occupancy for a in ("rtx-4090", "rtx-5090", "h100-sxm-80gb", "gh200-96gb")}
    assert occ["rtx-4090"].threads_per_sm == occ["rtx-5090"].threads_per_sm == 1536
    assert occ["h100-sxm-80gb"].threads_per_sm == occ["gh200-96gb"].threads_per_sm == 2048
    assert occ["rtx-4090"].dram_latency_ns < occ["h100-sxm-80gb"].dram_latency_ns < occ["rtx-5090"].dram_latency_ns
    for o in occ.values():
        assert o.l2_latency_ns < o.dram_latency_ns
