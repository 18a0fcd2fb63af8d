"""bitsandbytes' blockwise 8-bit AdamW kernel, timed as the latency-bound kernel it is (docs/known-gaps.md 174).

kOptimizerStatic8bit2StateBlockwise (bitsandbytes csrc/kernels.cu, 0.39 to main) runs one thread block per block of
elements. Each block loads its gradient, then state1, then state2 (cub BlockLoad WARP_TRANSPOSE, a __syncthreads
between them: each load's data lands in shared memory before the next is issued), then the two absmax values it
dequantises with, and after two block max-reductions and a __syncthreads the parameter: five dependent DRAM round
trips in series per block, after the quantile maps' copy into shared memory (one L2 hit once the first blocks have
read them; the arithmetic is not counted: a lower bound). A block's lifetime is then at least five DRAM latencies, and an SM holds
as many blocks as its registers and thread slots allow, so a tensor takes ceil(blocks / (SMs x resident blocks))
such lifetimes where that is longer than streaming its bytes at the HBM rate (Little's law: too few bytes in
flight to cover the latency). Per tensor because every tensor is its own launch followed by a synchronise
(step_time._bnb_tensor_sync_s). At 256 elements a block, one a thread (0.44.0+), an A100 holds 5 blocks an SM and
runs near 63e9 elements/s, under a third of the streaming rate of its 10 B an element; at 2,048 elements, eight a
thread (0.39-0.43), it holds 3 blocks of 8x the elements and streams.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.estimate.model_states import module_rest_elements, module_weight_elements
from trainsizer.messages import msg
from trainsizer.names import ADAMW8BIT_OPTIMIZERS, BNB_OPTIMIZER_BLOCKS

# register allocation granularity: registers a warp takes come in units of this many (CUDA occupancy calculator,
# compute capability 7.x-10.x)
_WARP_REGISTER_UNIT = 256


def bnb_block(strategy: Any) -> int:
    """Strategy.bnb_optimizer_block checked against names.BNB_OPTIMIZER_BLOCKS (None = 256, bitsandbytes >= 0.44)."""
    block = getattr(strategy, "bnb_optimizer_block", None) or 256
    if block not in BNB_OPTIMIZER_BLOCKS:
        raise SpecError("strategy.bnb_optimizer_block", msg("error_unknown_name", kind=msg("kind_bnb_optimizer_block")),
                        value=block, allowed=[str(b) for b in BNB_OPTIMIZER_BLOCKS],
                        suggestion=did_you_mean(str(block), [str(b) for b in BNB_OPTIMIZER_BLOCKS]))
    return int(block)


def resident_blocks(kernel: dict, system: Any) -> int:
    """Thread blocks of `kernel` one SM holds at once: the fewer of its thread slots and its register file allow
    (registers per warp rounded up to the allocation unit). 0 where the part's SM figures are not given."""
    threads = int(kernel["threads_per_block"])
    if not (system.sms and system.threads_per_sm and system.registers_per_sm):
        return 0
    warps = -(-threads // 32)
    per_warp = -(-int(kernel["registers_per_thread"]) * 32 // _WARP_REGISTER_UNIT) * _WARP_REGISTER_UNIT
    return int(min(system.threads_per_sm // threads, system.registers_per_sm // (per_warp * warps)))


def bnb_8bit_kernel_s(model: Any, training: Any, system: Any, kernels: dict, block: int, bytes_per_param: Any,
                      hbm_bytes_s: float, layers: Any, shard: Any) -> Any:
    """Seconds the 8-bit kernel spends beyond streaming `bytes_per_param` for every trainable tensor (module docstring):
    sum over tensors of max(0, waves x (loads x DRAM latency + L2 hits x L2 latency) - elements x bytes / HBM rate). `layers`: decoder layers
    this rank updates (per strategy); `shard`: the factor its weight tensors are split by (TP). 0 for optimizers other
    than adamw8bit / paged_adamw8bit and on parts without catalog sm_occupancy."""
    kernel = kernels[block]
    resident = resident_blocks(kernel, system)
    if training.optimizer not in ADAMW8BIT_OPTIMIZERS or resident <= 0 or system.dram_latency_s <= 0.0:
        return 0.0
    life = float(kernel["serial_dram_loads"]) * system.dram_latency_s + float(kernel["serial_l2_loads"]) * system.l2_latency_s
    per_wave = float(kernel["elements_per_block"]) * system.sms * resident
    shard = np.asarray(shard, float)
    bpp = np.asarray(bytes_per_param, float)

    def extra(elements: float) -> Any:
        local = elements / shard
        waves = np.ceil(local / per_wave)
        return np.maximum(waves * life - local * bpp / hbm_bytes_s, 0.0)

    per_layer = sum(count * extra(n) for n, count in module_weight_elements(model, training))
    rest = sum(count * extra(n) for n, count in module_rest_elements(model, training))
    return np.asarray(layers, float) * per_layer + rest
