"""One framework switch: `Strategy.framework` -> the memory profile and the performance style.

Every estimator reads the training framework from `Strategy.framework` (one of `inputs.FRAMEWORKS`, one
value for a whole batch of strategies) through this module; explicit arguments (`MemoryOptions.framework`,
`step_time(..., framework_style=...)`) still override it, so the validation benchmarks can pin a source's
exact stack.

Mapping (memory profile = how model states and activations are stored, `memory.PROFILES`; perf style = how
communication overlaps, `perf_constants.yaml` `frameworks:`):

    framework           memory profile   perf style
    megatron            megatron         megatron
    megatron-core       megatron         megatron-core
    deepseek-dualpipe   megatron         deepseek-dualpipe
    deepspeed           hf               deepspeed
    fsdp                hf               fsdp
    hf                  hf               hf
    torchtitan          hf               torchtitan

The "auto" rule (elementwise, one decision per strategy, so a strategy's answer never depends on which
other strategies share its batch): a strategy is Megatron-style -- memory profile `megatron`, perf style
`megatron` -- when it uses TP, PP, CP or EP > 1 or the distributed optimizer (only Megatron-LM / -Core run
those layouts in practice); otherwise it is an HF Trainer job on DDP / DeepSpeed ZeRO / FSDP -- memory
profile `hf`, perf style `hf`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.inputs import FRAMEWORKS

MEMORY_PROFILE = {
    "megatron": "megatron",
    "megatron-core": "megatron",
    "deepseek-dualpipe": "megatron",
    "deepspeed": "hf",
    "fsdp": "hf",
    "hf": "hf",
    "torchtitan": "hf",  # FSDP2 shards model states like ZeRO-3; fp32 loss on full logits (cross_entropy .float())
}
PERF_STYLE = {name: name for name in MEMORY_PROFILE}
AUTO_MEGATRON = "megatron"  # what "auto" resolves to for Megatron-style strategies
AUTO_OTHER = "hf"  # ... and for the rest


def check_framework(name: str, where: str = "strategy.framework") -> str:
    """`name` if it is one of FRAMEWORKS, else SpecError with a suggestion."""
    if name not in FRAMEWORKS:
        from trainsizer.errors import unknown_name

        raise unknown_name(where, "training framework", name, FRAMEWORKS)
    return name


def megatron_style(tp: Any, pp: Any, cp: Any, ep: Any, dist_opt: Any) -> Any:
    """The "auto" rule: True where a strategy uses TP/PP/CP/EP > 1 or the distributed optimizer."""
    return (np.greater(tp, 1) | np.greater(pp, 1) | np.greater(cp, 1) | np.greater(ep, 1)
            | np.asarray(dist_opt, dtype=bool))


def megatron_style_of(strategy: Any) -> Any:
    return megatron_style(strategy.tp, strategy.pp, strategy.cp, strategy.ep, strategy.distributed_optimizer)


def memory_profile(name: str) -> str | None:
    """Memory profile of a framework; None for "auto" (resolved per strategy by `megatron_style`)."""
    check_framework(name)
    return None if name == "auto" else MEMORY_PROFILE[name]


def perf_styles(name: str) -> tuple[str, str] | str:
    """Perf style of a framework, or for "auto" the pair (Megatron-style strategies, the others)."""
    check_framework(name)
    return (AUTO_MEGATRON, AUTO_OTHER) if name == "auto" else PERF_STYLE[name]


def resolve(name: str, strategy: Any) -> dict[str, Any]:
    """Resolved framework of one strategy (scalar fields): {"memory_profile", "perf_style"}."""
    check_framework(name)
    if name == "auto":
        mega = bool(np.asarray(megatron_style_of(strategy)).reshape(-1)[0])
        return {"memory_profile": "megatron" if mega else "hf",
                "perf_style": AUTO_MEGATRON if mega else AUTO_OTHER}
    return {"memory_profile": MEMORY_PROFILE[name], "perf_style": PERF_STYLE[name]}
