"""The kernels transformers' eager MoE layers issue a pass, by release, against what the estimate charges a pass for the
hf MoE rows' two loop forms (docs/known-gaps.md 289 (a)).

GraniteMoeDecoderLayer (perf_heldout66's granite-3.0-3b-a800m: 40 experts top-8, GraniteMoeParallelExperts' split loop)
and MixtralSparseMoeBlock (8 experts top-2, the hit-expert loop) at tiny widths in bf16, 64 positions (every expert
hit), under hf_layer_host's TorchDispatchMode count (views, selects and bare allocations left out; SDPA on the CPU where
a GPU runs FlashAttention-2, one call for one): the kernels a forward and a backward, the GEMMs among them and the
forward's nonzero calls (torch.where's count, a host sync on a GPU; GraniteMoe's one expert_size.tolist() a layer reads
a CPU tensor here and is not seen). Beside them the estimate's charge a pass at NVIDIA's launch-bound op
(perf_constants.yaml host_sync launch_bound_op_s), in op-equivalents: the layer's floor (host_s_per_layer_pass a pass,
the backward two) and, in the forward, the loop's ops (kernels moe_split_loop_forward_ops an expert for GraniteMoe,
moe_expert_loop_forward a hit expert for Mixtral's form). transformers is not a project dependency: without it the
script says so and counts nothing.

    PYTHONPATH=/path/to/transformers-4.45.2 python benchmarks/hf_moe_layer_ops.py
"""

from __future__ import annotations

import warnings
from collections import Counter

import torch

from hf_layer_host import count_pass
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure

WIDTH, POSITIONS = 64, 64


def granite_layer(experts: int = 40, topk: int = 8):
    """(transformers' GraniteMoeDecoderLayer at tiny widths, a call of it on 64 positions); None without transformers."""
    try:
        from transformers.models.granitemoe import modeling_granitemoe as gm
    except ImportError:
        return None
    cfg = gm.GraniteMoeConfig(hidden_size=WIDTH, intermediate_size=32, num_attention_heads=4, num_key_value_heads=2,
                              num_hidden_layers=1, num_local_experts=experts, num_experts_per_tok=topk)
    cfg._attn_implementation = "sdpa"
    layer = gm.GraniteMoeDecoderLayer(cfg, 0).to(torch.bfloat16)
    x = torch.randn(1, POSITIONS, WIDTH, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(POSITIONS)[None]
    kw = {"position_ids": pos}
    if hasattr(gm, "GraniteMoeRotaryEmbedding"):  # 4.45+: the model computes cos / sin once and hands them down
        kw["position_embeddings"] = gm.GraniteMoeRotaryEmbedding(config=cfg)(x, pos)
    return layer, (lambda: layer(x, **kw)[0])


def mixtral_block(experts: int = 8, topk: int = 2):
    """(transformers' MixtralSparseMoeBlock at tiny widths, a call of it on 64 positions); None without transformers."""
    try:
        from transformers.models.mixtral import modeling_mixtral as mm
    except ImportError:
        return None
    cfg = mm.MixtralConfig(hidden_size=WIDTH, intermediate_size=32, num_local_experts=experts, num_experts_per_tok=topk)
    block = mm.MixtralSparseMoeBlock(cfg).to(torch.bfloat16)
    h = torch.randn(1, POSITIONS, WIDTH, dtype=torch.bfloat16, requires_grad=True)
    return block, (lambda: block(h)[0])


def summary(fwd: Counter, bwd: Counter) -> dict[str, int]:
    """Kernels a forward and a backward, GEMMs in each, and the forward's nonzero calls (torch.where's syncs)."""
    return {"forward": sum(fwd.values()), "backward": sum(bwd.values()), "forward_mm": fwd["mm"] + fwd["addmm"],
            "backward_mm": bwd["mm"] + bwd["addmm"], "nonzero": fwd["nonzero"]}


def charged_ops(experts: int, split: bool) -> tuple[float, float]:
    """(forward, backward) op-equivalents a layer pass the estimate charges at NVIDIA's launch-bound op: the floor
    (host_s_per_layer_pass; the backward two passes) and, in the forward, the loop's ops for every expert (hit)."""
    op_s = host_figure("launch_bound_op_s", "nvidia") or 1.0
    floor = load_constants().host_s_per_layer_pass / op_s
    loop = KERNELS["moe_split_loop_forward_ops" if split else "moe_expert_loop_forward"] * experts
    return floor + loop, 2.0 * floor


def main() -> None:
    built = granite_layer()
    if built is None:
        print("transformers: not installed (PYTHONPATH to a release), nothing to count")
        return
    import transformers
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}: kernels a pass at {POSITIONS} positions "
          "(every expert hit); the estimate's charge in op-equivalents at NVIDIA's launch-bound op")
    for name, (_, call), experts, split in (("GraniteMoeDecoderLayer E40 k8", built, 40, True),
                                            ("MixtralSparseMoeBlock E8 k2", mixtral_block(), 8, False)):
        fwd, bwd = count_pass(call)
        s = summary(fwd, bwd)
        f_ops, b_ops = charged_ops(experts, split)
        print(f"  {name:30s} forward {s['forward']:4d} (mm {s['forward_mm']:3d}, nonzero {s['nonzero']:2d}) "
              f"backward {s['backward']:4d} (mm {s['backward_mm']:3d}); charged forward {f_ops:6.1f}"
              f"{' (the block alone: no layer floor in the count)' if not split else ''} backward {b_ops:5.1f}")
        print("    forward: " + ", ".join(f"{k} {v}" for k, v in sorted(fwd.items())))
        print("    backward: " + ", ".join(f"{k} {v}" for k, v in sorted(bwd.items())))


if __name__ == "__main__":
    main()
