"""Checks of a hybrid Mamba-2 / attention layer pattern (ModelArch.layer_pattern), shared by the config.json adapter
and the inline model keys. Megatron-Core's hybrid layer allocation (megatron/core/ssm/mamba_hybrid_layer_allocation.py)
takes one symbol per layer: M a Mamba-2 mixer, * attention, - a dense MLP, E a mixture-of-experts MLP."""

from __future__ import annotations

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.models.arch import HYBRID_SYMBOLS


def check_layer_pattern(pattern: str, layers: int, where: str) -> None:
    """Refuse a pattern with a symbol outside HYBRID_SYMBOLS or whose length is not the layer count."""
    bad = sorted({ch for ch in pattern if ch not in HYBRID_SYMBOLS})
    if bad:
        raise SpecError(where, msg("hybrid_pattern_symbol", symbols=" ".join(repr(b) for b in bad)), value=pattern,
                        allowed=[f"{k} ({v})" for k, v in HYBRID_SYMBOLS.items()])
    if len(pattern) != layers:
        raise SpecError(where, msg("hybrid_pattern_length", n=len(pattern), layers=layers), value=pattern)


def check_mixer(heads: int, groups: int, where: str) -> None:
    """Mamba-2's B and C groups must divide its heads (Megatron-Core MambaMixer: nheads % ngroups == 0)."""
    if groups < 1 or heads % groups:
        raise SpecError(where, msg("hybrid_groups_divide", heads=heads), value=groups)
