"""Efficiency constants of the performance model, and a user's measured figures that replace them.

`PerfConstants` is loaded from `estimate/data/perf_constants.yaml` (every constant there names its source and
the data it was tuned on). `Calibration` is what a user passes: measured GEMM TFLOP/s, nccl-tests bus
bandwidth inside and between nodes, HBM and storage bandwidth. A measured figure replaces the modelled
one exactly; it is not blended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import act_bytes
from trainsizer.messages import msg


@dataclass(frozen=True)
class PerfConstants:
    gemm_efficiency_max: dict[str, float]
    fp32_efficiency_ratio: float
    kernel_fixed_s: float
    host_s_per_layer_pass: float
    host_gpu_blend_norm: float
    eager_bytes_per_element: dict[str, float]  # forward HBM bytes per element of eager element-wise ops, by op
    moe_host_s_per_expert_kernel: dict[str, float]  # exposed host time per expert kernel, by dispatcher
    expert_bias_deepep_bytes: dict[str, float]  # HBM bytes per element of AutoModel's eager expert biases
    moe_eager_glue_bytes: dict[str, float]  # torchtitan's eager MoE glue, bytes per routed copy element
    expert_loop_glue_bytes: dict[str, float]  # transformers' eager expert loop's glue beyond the permutation, bytes
    expert_bias_mcore_bytes: dict[str, float]  # HBM bytes per element of Megatron-Core's eager fc2 expert bias
    expert_bias_index_add: dict[str, float]  # torchtitan gpt-oss' eager expert biases: bytes, kernels, index_add_ rate
    activation_clamp_mcore_bytes: dict[str, float]  # HBM bytes per element of its eager activation clamp
    fused_dglu_us: dict[str, float]  # TE's fused grouped MLP's dGLU kernel with / without fc1's bias gradient, us
    fused_fc2_scaled_dbias_bytes: float  # TE's grouped dbias / dscales kernel, B a hidden element of a routed slot
    rope_unfused_mcore_bytes: dict[str, float]  # HBM bytes per q / k element of its unfused RoPE (YaRN factor)
    eager_swiglu_backward_bytes: dict[str, float]  # an eager SwiGLU's backward, bytes per inner element, by op
    eager_backward_bytes_per_element: dict[str, float]  # eager chains' counted backward bytes per element, by chain
    flash_efficiency: dict[str, float]
    flash_efficiency_native: dict[str, float]  # vendor-tuned fused attention (cuDNN / FA3) where it differs
    flash_efficiency_triton: dict[str, float]  # FlashAttention in Triton (llm-foundry's attn_impl triton)
    triton_bwd_over_fwd_vs_fa2: float  # its backward / forward time over FA2's (attention.flash_efficiency_triton)
    # PyTorch SDPA's flash backend where it is not FlashAttention-2 (ROCm: AOTriton), by family: forward share of the
    # 16-bit peak and backward / forward time (attention.flash_efficiency_sdpa, flash_bwd_over_fwd_sdpa)
    flash_efficiency_sdpa: dict[str, float]
    flash_bwd_over_fwd_sdpa: dict[str, float]
    # NVIDIA families whose SDPA dispatch runs cuDNN first under torch 2.9 / >= 2.11 (attention.sdpa_cudnn_first)
    sdpa_cudnn_families: tuple[str, ...]
    # Transformer Engine's cuDNN fused attention in training on sm100 (attention.te_fused_training_sm100): the families,
    # the widest head dim it trains with d_qk and d_v both at most that, and the (d_qk, d_v) pairs it trains beyond it
    te_sm100_families: tuple[str, ...]
    te_sm100_max_head_dim: int
    te_sm100_pairs: tuple[tuple[int, int], ...]
    flash_efficiency_flex: dict[str, float]  # FlexAttention's Triton template, where measured (attention section)
    flex_bwd_over_fwd: dict[str, float]  # its backward / forward time, where measured
    flash_bwd_over_fwd: float
    flash_bwd_over_fwd_native: dict[str, float]  # the native kernels' ratio by family (Hopper); else the above
    fa1_over_fa2: float  # FlashAttention (v1) throughput relative to FlashAttention-2 (attention section)
    # PyTorch SDPA's memory-efficient backend (run under an explicit mask) relative to FlashAttention-2 (attention section)
    mem_efficient_over_fa2: float
    mem_efficient_is_flash_vendors: tuple[str, ...]  # SDPA's memory-efficient backend = its flash kernel (ROCm)
    mem_efficient_tiles: dict[str, tuple[int, ...]]  # its kernels' tiles by kMaxK (attention.mem_efficient_tiles)
    mem_efficient_k64_over_fa2: float  # its kMaxK 64 kernels' rate over FA2's head-dim-128 figure (attention section)
    flash_efficiency_fa1: dict[str, float]  # FlashAttention (v1) where measured on the family (else fa1_over_fa2)
    softmax_share_fwd: float  # exponentials' share of a Blackwell attention forward (attention section)
    # head-dim-independent (softmax) share of a native attention score's time at ref_head_dim, (forward, backward),
    # and that head dim (attention.narrow_head)
    narrow_head_share: tuple[float, float]
    narrow_head_ref: float
    # CK's compiled fused-attention backward head dims on AMD parts and the families whose AITER has an assembly MLA
    # backward (attention.ck_bwd; step_time._ck_mla_bwd_pad)
    ck_bwd_head_dims: tuple[int, ...]
    ck_bwd_mla_asm_families: tuple[str, ...]
    sfu_ex2_speedup: dict[str, float]  # SFU ex2 throughput relative to Blackwell, by family
    # FP8 / BF16 fused-attention throughput (forward, backward) by family (attention.fp8_attention_speedup)
    fp8_attention_speedup: dict[str, tuple[float, float]]
    # the same by query / key head dim, then family, where it differs from Llama's 128
    # (attention.fp8_attention_speedup_by_head_dim)
    fp8_attention_speedup_by_head_dim: dict[str, dict[str, tuple[float, float]]]
    # MXFP8 / BF16 fused-attention throughput, by family and by head dim (attention.mxfp8_attention_speedup*)
    mxfp8_attention_speedup: dict[str, tuple[float, float]]
    mxfp8_attention_speedup_by_head_dim: dict[str, dict[str, tuple[float, float]]]
    # native kernels' measured rate by sequence length, by family: (lengths, fwd, bwd) (attention.native_length_scaling)
    native_length_scaling: dict[str, tuple[tuple[float, ...], ...]]
    native_length_ref: float  # the length flash_efficiency_native is taken at
    # FA2 / Triton kernels' measured rate by length: kernel -> (ref, family -> (lengths, rate)) (flash_length_scaling)
    flash_length: dict[str, tuple[float, dict[str, tuple[tuple[float, ...], tuple[float, ...]]]]]
    # the same by cuDNN release (strategy.cudnn_release): release -> family -> (lengths, fwd, bwd)
    native_length_release: dict[str, dict[str, tuple[tuple[float, ...], ...]]]
    # fused-attention throughput (forward, backward) over the base release, by cuDNN release and family
    # (attention.cudnn_release_speedup)
    cudnn_release_speedup: dict[str, dict[str, tuple[float, float]]]
    hbm_efficiency: float
    intra_busbw_fraction: float
    intra_busbw_fraction_mesh: float  # the same on a switchless full mesh (AMD xGMI)
    nvls_allreduce_gain: float
    tp_overlap_fraction: float
    overlap_interference: float
    optimizer_bytes_per_param: dict[str, float]
    optimizer_model_dtype_bytes_per_param: dict[str, float]  # the update in the model dtype (torchtune)
    p2p_exposed_fraction: float
    data_loading_exposed_s: float
    cpu_adam_params_per_s_per_gpu: float  # ZeRO-Offload CPU optimizer rate (offload section)
    cpu_adam_bytes_per_param: float  # host bytes CPU-Adam streams per parameter at that rate
    fp8_recipes: dict[str, dict[str, float]] = field(default_factory=dict)  # fp8 section: recipe -> figures
    fp8_default_recipe: dict[str, str] = field(default_factory=dict)  # accelerator family -> recipe
    fp4_recipes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # FP4-peak recipe -> families that run it
    fp8_recipe_families: dict[str, tuple[str, ...]] = field(default_factory=dict)  # recipe -> the only families running it
    # recipe -> (the recipe whose GEMMs Transformer Engine runs instead, the families where it does: fp8.emulated_gemms)
    fp8_emulated_gemms: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # torch._grouped_mm's rate over the dense GEMM rate of the same part and precision, by family
    # (gemm.grouped_mm_over_dense)
    grouped_mm_over_dense_table: dict[str, float] = field(default_factory=lambda: {"default": 1.0})
    # Primus-Turbo's grouped GEMM rate over the dense GEMM rate of the same part, by precision ("bf16" / "fp8") and
    # family (gemm.turbo_grouped_gemm_over_dense)
    turbo_grouped_gemm_over_dense_table: dict[str, dict[str, float]] = field(
        default_factory=lambda: {"bf16": {"default": 1.0}, "fp8": {"default": 1.0}})
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def gemm_efficiency(self, accelerator: str) -> float:
        """Large-GEMM fraction of dense peak for a catalog accelerator id (longest family prefix wins)."""
        return _by_family(self.gemm_efficiency_max, accelerator)

    def grouped_mm_over_dense(self, accelerator: str) -> float:
        """torch._grouped_mm's GEMM rate over the dense one on this part (gemm.grouped_mm_over_dense)."""
        return _by_family(self.grouped_mm_over_dense_table, accelerator)

    def turbo_grouped_gemm_over_dense(self, accelerator: str, precision: str) -> float:
        """Primus-Turbo's grouped GEMM rate over the dense one on this part in `precision` (fp8: its table; every
        16-bit precision: the bf16 one; gemm.turbo_grouped_gemm_over_dense)."""
        return _by_family(self.turbo_grouped_gemm_over_dense_table["fp8" if precision == "fp8" else "bf16"],
                          accelerator)

    def fp8_recipe(self, accelerator: str, recipe: str = "auto") -> dict[str, float]:
        """Figures of an FP8 scaling recipe ("auto": the accelerator family's default, e.g. MXFP8 on
        Blackwell, delayed scaling elsewhere)."""
        if recipe == "auto":
            recipe = _family_entry(self.fp8_default_recipe, accelerator, self.fp8_default_recipe.get("default", "delayed"))
        if recipe not in self.fp8_recipes:
            from trainsizer.errors import unknown_name

            raise unknown_name("training.fp8_recipe", "FP8 scaling recipe", recipe, ("auto", *self.fp8_recipes))
        families = self.fp8_recipe_families.get(recipe)
        # blockwise: Hopper / Blackwell; mxfp8: Blackwell / CDNA 4
        if families is not None and not accelerator.lower().startswith(families):
            raise SpecError("training.fp8_recipe", msg(f"fp8_recipe_parts_{recipe}", recipe=recipe, accelerator=accelerator,
                                                       parts=", ".join(families)),
                            value=recipe, allowed=self.recipes_on(accelerator))
        return {"name": recipe, **self.fp8_recipes[recipe]}  # type: ignore[dict-item]

    def recipes_on(self, accelerator: str) -> list[str]:
        """The fp8_recipe values a part runs, auto first (the family's own default): the allowed list of a refusal."""
        acc = accelerator.lower()
        runs = {r: self.fp4_recipes.get(r, self.fp8_recipe_families.get(r)) for r in self.fp8_recipes}
        return ["auto", *sorted(r for r, families in runs.items() if families is None or acc.startswith(families))]

    def fp8_gemm_recipe(self, accelerator: str, recipe: dict[str, float]) -> dict[str, float]:
        """The recipe whose GEMMs run for `recipe` (a fp8_recipe result) on this part: another recipe's where
        Transformer Engine emulates it with that one's GEMMs (fp8.emulated_gemms: Float8BlockScaling as MXFP8 on
        SM >= 10.0), else the recipe itself."""
        emulated = self.fp8_emulated_gemms.get(str(recipe["name"]))
        if emulated is None or not accelerator.lower().startswith(emulated[1]):
            return recipe
        return {"name": emulated[0], **self.fp8_recipes[emulated[0]]}  # type: ignore[dict-item]

    def flash_fraction(self, accelerator: str, kernel: str = "fa2") -> float:
        """Fused-attention forward fraction of the 16-bit dense peak for an accelerator family.

        `kernel`: "fa2" (FlashAttention-2), "native" (cuDNN fused attention / FA3, which use Hopper TMA + wgmma;
        families without a native entry use the fa2 figure), "triton" (FlashAttention in Triton, its own figure),
        "sdpa" (PyTorch SDPA's flash backend: AOTriton's figure on ROCm families, flash_efficiency_sdpa, else FA2's),
        "flex" (FlexAttention's Triton template: flash_efficiency_flex where measured, else FA2's) or "fa1"
        (FlashAttention v1: its measured figure where the family has one, flash_efficiency_fa1, else the fa2 figure
        times `fa1_over_fa2`).
        """
        if kernel == "sdpa":
            return float(_family_entry(self.flash_efficiency_sdpa, accelerator, self.flash_fraction(accelerator)))
        if kernel == "triton":
            return _by_family(self.flash_efficiency_triton, accelerator)
        if kernel == "flex":
            return float(_family_entry(self.flash_efficiency_flex, accelerator, self.flash_fraction(accelerator)))
        if kernel == "fa1":
            fa1 = _family_entry(self.flash_efficiency_fa1, accelerator)
            return float(fa1) if fa1 is not None else _by_family(self.flash_efficiency, accelerator) * self.fa1_over_fa2
        if kernel == "native" and self._has_native(accelerator):
            return _by_family(self.flash_efficiency_native, accelerator)
        return _by_family(self.flash_efficiency, accelerator)

    def sdpa_own_rate(self, accelerator: str) -> bool:
        """Whether PyTorch SDPA's flash backend runs at a figure of its own on this part (ROCm's AOTriton on CDNA 3,
        attention.flash_efficiency_sdpa), not FlashAttention-2's."""
        return _family_entry(self.flash_efficiency_sdpa, accelerator) is not None

    def sdpa_rate_words(self, accelerator: str) -> dict[str, str]:
        """The SDPA figures of a part as a note states them: {"share": "25%", "bwd": "7.0"}."""
        return {"share": f"{self.flash_fraction(accelerator, 'sdpa'):.0%}",
                "bwd": f"{self.flash_bwd_ratio(accelerator, 'sdpa'):.1f}"}

    def sdpa_cudnn_first(self, accelerator: str) -> bool:
        """Whether PyTorch's SDPA runs cuDNN's fused attention before FlashAttention-2 on this part under torch 2.9 and
        >= 2.11 (datacenter Hopper / Blackwell, attention.sdpa_cudnn_first); FA2 first elsewhere and in other releases."""
        return _family_entry(dict.fromkeys(self.sdpa_cudnn_families, True), accelerator, False)

    def te_fused_trains(self, accelerator: str, d_qk: int, d_v: int) -> bool:
        """Whether Transformer Engine's cuDNN fused attention trains these head dims on this part: always off the sm100
        families, there d_qk and d_v both at most te_sm100_max_head_dim or a listed pair (attention.
        te_fused_training_sm100)."""
        if not _family_entry(dict.fromkeys(self.te_sm100_families, True), accelerator, False):
            return True
        return max(d_qk, d_v) <= self.te_sm100_max_head_dim or (int(d_qk), int(d_v)) in self.te_sm100_pairs

    def dynamic_cast_elems_s(self, accelerator: str) -> float | None:
        """Elements a second of PyTorch's unvectorised dtype-casting copy on this part (SMs x max boost clock x
        elements per SM-cycle, perf_constants.yaml dynamic_cast); None where no figure is listed (the HBM stream)."""
        dc = self.raw["dynamic_cast"]
        part = _family_entry(dc["parts"], accelerator)
        if part is None:
            return None
        return float(dc["elems_per_sm_cycle"]) * float(part["sms"]) * float(part["clock_ghz"]) * 1e9

    def nf4_tree_decode_values_s(self, accelerator: str) -> float | None:
        """Values a second of bitsandbytes' NF4 dequantisation through dDequantizeNF4's branching tree (0.39-0.47)
        on this part, issue-bound (SMs x max boost clock x values per SM-cycle, perf_constants.yaml nf4_tree_decode,
        on dynamic_cast's parts); None where no part figure is listed (the HBM stream)."""
        part = _family_entry(self.raw["dynamic_cast"]["parts"], accelerator)
        if part is None:
            return None
        return float(self.raw["nf4_tree_decode"]["values_per_sm_cycle"]) * float(part["sms"]) * float(
            part["clock_ghz"]) * 1e9

    def flex_own_rate(self, accelerator: str) -> bool:
        """Whether FlexAttention's Triton template runs at a figure measured on this part (attention.
        flash_efficiency_flex: B200 / GB200), not FlashAttention-2's."""
        return _family_entry(self.flash_efficiency_flex, accelerator) is not None

    def _has_native(self, accelerator: str) -> bool:
        acc = accelerator.lower()
        return any(acc.startswith(key) for key in self.flash_efficiency_native if key != "default")

    def flash_bwd_ratio(self, accelerator: str, kernel: str = "fa2") -> float:
        """Attention backward / forward time: the native kernels' measured ratio where the family has one (cuDNN /
        FA3 on Hopper: flash_bwd_over_fwd_native), PyTorch SDPA's where it is not FA2 (flash_bwd_over_fwd_sdpa: ROCm),
        FlexAttention's where measured (flex_bwd_over_fwd), else FlashAttention-2's (attention section)."""
        if kernel == "sdpa":
            return float(_family_entry(self.flash_bwd_over_fwd_sdpa, accelerator, self.flash_bwd_over_fwd))
        if kernel == "triton":
            return self.flash_bwd_over_fwd * self.triton_bwd_over_fwd_vs_fa2
        if kernel == "flex":
            return float(_family_entry(self.flex_bwd_over_fwd, accelerator, self.flash_bwd_over_fwd))
        if kernel == "native":
            return _family_entry(self.flash_bwd_over_fwd_native, accelerator, self.flash_bwd_over_fwd)
        return self.flash_bwd_over_fwd

    def fp8_attention(self, accelerator: str, d_qk: int = 128, recipe: str = "") -> tuple[float, float]:
        """(forward, backward) throughput of FP8 fused attention relative to BF16 on this part's family
        (strategy.fp8_attention), at the query / key head dim `d_qk` where one was measured (MLA's 192), else the
        family's figure; under the resolved FP8 `recipe` "mxfp8" cuDNN's MXFP8 kernel's figures where the family has
        them; (1, 1) where no FP8 measurement is held (the BF16 rate is kept)."""
        tables = (self.fp8_attention_speedup_by_head_dim.get(str(d_qk), {}), self.fp8_attention_speedup)
        if recipe == "mxfp8":
            tables = (self.mxfp8_attention_speedup_by_head_dim.get(str(d_qk), {}), self.mxfp8_attention_speedup, *tables)
        for table in tables:
            hit = _family_entry(table, accelerator)
            if hit is not None:
                return hit
        return 1.0, 1.0

    def _native_curve(self, accelerator: str, release: str | None) -> Any:
        """(lengths, forward rates, backward rates) the native kernels were measured at on the part's family, at
        the cuDNN `release` where it has its own curve (attention.native_length_scaling); None without data."""
        table = {**self.native_length_scaling, **self.native_length_release.get(str(release), {})}
        return _family_entry(table, accelerator)

    def native_length_factors(self, accelerator: str, kernel: Any, length: Any,
                              release: str | None = None) -> tuple[Any, Any]:
        """(forward, backward) rate of the native kernels at a kernel call's sequence `length` relative to the
        length flash_efficiency_native is taken at: log-linear between the family's measured lengths, the end values
        beyond them, 1 below that length (attention.native_length_scaling; a cuDNN `release` with its own curve
        reads that one); 1 for other kernels (an array of kernels under framework auto) and families without data."""
        curve = self._native_curve(accelerator, release)
        native = np.asarray(kernel) == "native"
        if curve is None or not np.any(native):
            return 1.0, 1.0
        lengths, fwd, bwd = curve
        x, ref = np.log2(lengths), np.log2(self.native_length_ref)
        at = np.maximum(np.log2(np.maximum(np.asarray(length, float), 1.0)), ref)
        return tuple(np.where(native, np.interp(at, x, rate) / np.interp(ref, x, rate), 1.0)  # type: ignore[return-value]
                     for rate in (fwd, bwd))

    def flash_length_factor(self, accelerator: str, kernel: Any, length: Any) -> Any:
        """Rate of the FA2 / Triton kernels at a kernel call's sequence `length` relative to the length their
        efficiency is taken at (attention.flash_length_scaling: log-linear between the measured lengths, the end values
        beyond them); 1 for other kernels (an array of kernels under framework auto) and families without a curve.
        PyTorch SDPA runs FA2's curve where it runs FA2 (no family has both a curve and an SDPA figure of its own)."""
        names = np.where(np.asarray(kernel) == "sdpa", "fa2", np.asarray(kernel))
        at = np.log2(np.maximum(np.asarray(length, float), 1.0))
        factor: Any = 1.0
        for name, (ref, families) in self.flash_length.items():
            curve = _family_entry(families, accelerator, families.get("default"))
            if curve is None or not np.any(names == name):
                continue
            x, rate = np.log2(curve[0]), curve[1]
            factor = np.where(names == name, np.interp(at, x, rate) / np.interp(np.log2(ref), x, rate), factor)
        return factor

    def narrow_head(self, d_qk: int, d_v: int) -> tuple[float, float]:
        """(forward, backward) time per FLOP of the native kernels at a mean head dim d = (d_qk + d_v) / 2 below
        narrow_head_ref, relative to that head dim: (1 - s) + s ref / d, s the score's head-dim-independent
        (softmax) share (attention.narrow_head); 1 at and above it."""
        d = 0.5 * (d_qk + d_v)
        if d >= self.narrow_head_ref or d <= 0:
            return 1.0, 1.0
        f, b = self.narrow_head_share
        return 1.0 - f + f * self.narrow_head_ref / d, 1.0 - b + b * self.narrow_head_ref / d

    def mem_efficient_over_fa2_at(self, d_qk: int, d_v: int) -> float:
        """SDPA's memory-efficient kernels' rate over FA2's head-dim-128 figure at these head dims: the kMaxK 64 kernels'
        measured figure where max(d_qk, d_v) <= 64 (attention.mem_efficient_k64_over_fa2), else mem_efficient_over_fa2
        (the kMaxK 128 kernels'; the wider ones unmeasured)."""
        if max(d_qk, d_v) <= self.mem_efficient_tiles["max_k"][0]:
            return self.mem_efficient_k64_over_fa2
        return self.mem_efficient_over_fa2

    def mem_efficient_bwd_over_fa2_at(self, accelerator: str, d_qk: int, d_v: int) -> float:
        """The memory-efficient backward's rate over FA2's head-dim-128 figure on this part (16-bit): where the part's
        shared memory a block does not hold the kMaxK 128 backward's 128x128 tiles (attention.mem_efficient_small_smem:
        sm_86 / 89 / 120) and no specialised kernel keeps the output in registers (kMaxK 96 on sm_86 / 89), a head dim
        in (64, 128] runs the 64x64 kernel, at the kMaxK 64 kernels' measured 64x64-tile figure
        (mem_efficient_k64_over_fa2); elsewhere the forward's figure (mem_efficient_over_fa2_at)."""
        d, t = max(d_qk, d_v), self.mem_efficient_tiles["max_k"]
        sm = self.raw["attention"]["mem_efficient_small_smem"]
        small = _family_entry(dict.fromkeys(sm["families"], True), accelerator, False)
        rf96 = d <= int(sm["rf_max_k"]) and _family_entry(dict.fromkeys(sm["rf_families"], True), accelerator, False)
        if t[0] < d <= t[1] and small and not rf96:
            return self.mem_efficient_k64_over_fa2
        return self.mem_efficient_over_fa2_at(d_qk, d_v)

    def mem_efficient_head_pad(self, d_qk: int, d_v: int) -> tuple[float, float]:
        """(forward, backward) executed over counted attention work of SDPA's memory-efficient (CUTLASS) kernels at
        these head dims (attention.mem_efficient_tiles): the kernel with the first kMaxK >= max(d_qk, d_v) runs the
        head dim a GEMM reduces over in k_step steps and the one it writes (P V's d_v; dV's, dK's and dQ's) a whole tile
        wide. Forward Q K^T + P V against d_qk + d_v; backward Q K^T, dO V^T, dV, dQ, dK against 3 d_qk + 2 d_v (the
        counted backward's weighting, as ck_mla_bwd_pad). 1 at head dims the tiles divide (64, 128, 256)."""
        t = self.mem_efficient_tiles
        i = next((n for n, k in enumerate(t["max_k"]) if k >= max(d_qk, d_v)), len(t["max_k"]) - 1)
        step = t["k_step"][0]

        def up(d: int, tile: int) -> float:
            return float(-(-d // tile) * tile)

        fwd = (up(d_qk, step) + up(d_v, t["fwd_n"][i])) / float(d_qk + d_v)
        bwd = (up(d_qk, step) + up(d_v, step) + up(d_v, t["bwd_i"][i]) + up(d_qk, t["bwd_i"][i])
               + up(d_qk, t["bwd_j"][i])) / float(3 * d_qk + 2 * d_v)
        return fwd, bwd

    def ck_mla_bwd_pad(self, accelerator: str, d_qk: int, d_v: int, asm: bool = True) -> float:
        """Executed over counted work of an AMD part's fused-attention backward where d_qk != d_v (MLA) runs CK's tile
        kernel (attention.ck_bwd): both head dims at the first compiled tile at or above the wider, in the backward's
        own weighting (recomputed S, dQ and dK span d_qk; dV and dP span d_v: 3 d_qk + 2 d_v, FlashAttention-2's
        backward, Dao 2023 Algorithm 2). 1 where AITER's assembly kernel runs it (`asm` on a family that has one), for
        equal head dims and above the widest tile."""
        if d_qk == d_v or (asm and _family_entry({f: True for f in self.ck_bwd_mla_asm_families}, accelerator, False)):
            return 1.0
        tile = next((k for k in self.ck_bwd_head_dims if k >= max(d_qk, d_v)), 0)
        return 5.0 * tile / (3.0 * d_qk + 2.0 * d_v) if tile else 1.0

    def native_block_tiles(self, accelerator: str, release: str | None = None) -> tuple[float, float]:
        """(forward, backward) fixed work of one query block of the native kernels, in 128-key tiles: a query block
        that executes n key tiles takes n + c tile times, so its rate is n / (n + c) of a long row's. c is read from the
        part's measured rate at the two shortest lengths L1, L2 of its curve (attention.native_length_scaling, the
        release's where it has one), a causal row's query averaging n = (L / 2 + 64) / 128 tiles: with rho = rate(L1) /
        rate(L2), c = n1 n2 (1 - rho) / (rho n2 - n1). (0, 0) for a family without a curve."""
        curve = self._native_curve(accelerator, release)
        if curve is None:
            return 0.0, 0.0
        lengths, fwd, bwd = curve
        return (block_tiles(lengths[0], lengths[1], fwd[0] / fwd[1]),
                block_tiles(lengths[0], lengths[1], bwd[0] / bwd[1]))

    def attention_grid(self, accelerator: str) -> tuple[float, float, float] | None:
        """(SMs, query rows a forward CTA owns, key rows a backward CTA owns) of the native attention kernels on this
        part's family (attention.grid); None for a family without an entry."""
        hit = _family_entry(self.raw.get("attention", {}).get("grid", {}), accelerator)
        return None if hit is None else (float(hit["sms"]), float(hit["q_rows"]), float(hit["k_rows"]))

    def cudnn_release(self, accelerator: str, release: str | None) -> tuple[float, float] | None:
        """(forward, backward) fused-attention throughput of cuDNN `release` over the base release on this part's
        family (strategy.cudnn_release); (1, 1) for the base release (None / 9.13); None where the family has no
        measurement at that release (validate.py refuses the job)."""
        if release in (None, "9.13"):
            return 1.0, 1.0
        return _family_entry(self.cudnn_release_speedup.get(str(release), {}), accelerator)

    def attention_sfu(self, accelerator: str, kernel: str = "fa2") -> tuple[float, float]:
        """(attention forward time factor, backward / forward time ratio) for a part whose SFUs compute the
        softmax exponentials `sfu_ex2_speedup` times faster: the forward's exponential share s shrinks by that
        factor r (1 - s + s/r), the backward saves the same exponential time once (attention section)."""
        r = _by_family(self.sfu_ex2_speedup, accelerator)
        s = self.softmax_share_fwd if r != 1.0 else 0.0
        fwd = 1.0 - s + s / r
        return fwd, (self.flash_bwd_ratio(accelerator, kernel) - s * (1.0 - 1.0 / r)) / fwd


def causal_tiles(length: Any) -> Any:
    """128-key tiles a query of a causal row of `length` executes on average: (L / 2 + 64) / 128, the diagonal tile
    whole (flops.causal_fraction)."""
    return np.asarray(length, float) / 256.0 + 0.5


def block_tiles(short: float, long: float, rho: float) -> float:
    """Fixed work c of a query block, in key tiles, from a kernel's rate at two causal lengths (rho = rate(short) /
    rate(long)): n / (n + c) at each, n = causal_tiles, so c = n1 n2 (1 - rho) / (rho n2 - n1); 0 where the shorter
    length is not slower."""
    n1, n2 = float(causal_tiles(short)), float(causal_tiles(long))
    return max(n1 * n2 * (1.0 - rho) / (rho * n2 - n1), 0.0) if rho < 1.0 and rho * n2 > n1 else 0.0


def _length_curves(table: dict[str, Any]) -> dict[str, tuple[tuple[float, ...], ...]]:
    """attention.native_length_scaling's family entries as (lengths, forward, backward) tuples."""
    return {str(k): (tuple(map(float, v["lengths"])), tuple(map(float, v["fwd"])), tuple(map(float, v["bwd"])))
            for k, v in table.items() if k not in ("ref", "release")}


def _family_entry(table: dict[str, Any], accelerator: str, fallback: Any = None) -> Any:
    """The entry of the longest family key the accelerator's id starts with ("h100" for "h100-sxm-80gb"; "default"
    is never a family), else `fallback`."""
    acc = accelerator.lower()
    keys = [key for key in table if key != "default" and acc.startswith(key)]
    return table[max(keys, key=len)] if keys else fallback


def _by_family(table: dict[str, float], accelerator: str) -> float:
    """A per-family figure, the table's `default` where no family matches."""
    return float(_family_entry(table, accelerator, table["default"]))


@lru_cache(maxsize=1)
def load_constants() -> PerfConstants:
    """The shipped constants (cached)."""
    text = resources.files("trainsizer.estimate").joinpath("data/perf_constants.yaml").read_text()
    d = yaml.safe_load(text)
    g, a, m, c = d["gemm"], d["attention"], d["memory"], d["comm"]
    return PerfConstants(
        gemm_efficiency_max={str(k): float(v) for k, v in g["efficiency_max"].items()},
        grouped_mm_over_dense_table={str(k): float(v) for k, v in g["grouped_mm_over_dense"].items()},
        turbo_grouped_gemm_over_dense_table={str(p): {str(k): float(v) for k, v in t.items()}
                                             for p, t in g["turbo_grouped_gemm_over_dense"].items()},
        fp32_efficiency_ratio=float(g["fp32_efficiency_ratio"]),
        kernel_fixed_s=float(g["kernel_fixed_s"]),
        host_s_per_layer_pass=float(g["host_s_per_layer_pass"]),
        host_gpu_blend_norm=float(g["host_gpu_blend_norm"]),
        eager_bytes_per_element={str(k): float(v) for k, v in g["eager_bytes_per_element"].items()},
        moe_host_s_per_expert_kernel={str(k): float(v) for k, v in g["moe_host_s_per_expert_kernel"].items()},
        expert_bias_deepep_bytes={str(k): float(v) for k, v in g["expert_bias_deepep_bytes"].items()},
        moe_eager_glue_bytes={str(k): float(v) for k, v in g["moe_eager_glue_bytes"].items()},
        expert_loop_glue_bytes={str(k): float(v) for k, v in g["expert_loop_glue_bytes"].items()},
        expert_bias_mcore_bytes={str(k): float(v) for k, v in g["expert_bias_mcore_bytes"].items()},
        expert_bias_index_add={str(k): float(v) for k, v in g["expert_bias_index_add"].items()},
        activation_clamp_mcore_bytes={str(k): float(v) for k, v in g["activation_clamp_mcore_bytes"].items()},
        fused_dglu_us={str(k): float(v) for k, v in g["fused_dglu_us"].items()},
        fused_fc2_scaled_dbias_bytes=float(g["fused_fc2_scaled_dbias_bytes"]),
        rope_unfused_mcore_bytes={str(k): float(v) for k, v in g["rope_unfused_mcore_bytes"].items()},
        eager_swiglu_backward_bytes={str(k): float(v) for k, v in g["eager_swiglu_backward_bytes"].items()},
        eager_backward_bytes_per_element={str(k): float(v) for k, v in g["eager_backward_bytes_per_element"].items()},
        flash_efficiency={str(k): float(v) for k, v in a["flash_efficiency"].items()},
        flash_efficiency_native={str(k): float(v) for k, v in a["flash_efficiency_native"].items()},
        flash_efficiency_triton={str(k): float(v) for k, v in a["flash_efficiency_triton"].items()},
        triton_bwd_over_fwd_vs_fa2=float(a["triton_bwd_over_fwd_vs_fa2"]),
        flash_efficiency_sdpa={str(k): float(v) for k, v in a["flash_efficiency_sdpa"].items()},
        flash_bwd_over_fwd_sdpa={str(k): float(v) for k, v in a["flash_bwd_over_fwd_sdpa"].items()},
        sdpa_cudnn_families=tuple(str(k) for k in a["sdpa_cudnn_first"]),
        te_sm100_families=tuple(str(k) for k in a["te_fused_training_sm100"]["families"]),
        te_sm100_max_head_dim=int(a["te_fused_training_sm100"]["max_head_dim"]),
        te_sm100_pairs=tuple((int(q), int(v)) for q, v in a["te_fused_training_sm100"]["pairs"]),
        flash_efficiency_flex={str(k): float(v) for k, v in a["flash_efficiency_flex"].items()},
        flex_bwd_over_fwd={str(k): float(v) for k, v in a["flex_bwd_over_fwd"].items()},
        flash_bwd_over_fwd=float(a["flash_bwd_over_fwd"]),
        flash_bwd_over_fwd_native={str(k): float(v) for k, v in a["flash_bwd_over_fwd_native"].items()},
        fa1_over_fa2=float(a["fa1_over_fa2"]),
        mem_efficient_over_fa2=float(a["mem_efficient_over_fa2"]),
        mem_efficient_is_flash_vendors=tuple(str(v) for v in a["mem_efficient_is_flash_vendors"]),
        mem_efficient_tiles={str(k): tuple(int(d) for d in np.atleast_1d(v)) for k, v in a["mem_efficient_tiles"].items()},
        mem_efficient_k64_over_fa2=float(a["mem_efficient_k64_over_fa2"]),
        flash_efficiency_fa1={str(k): float(v) for k, v in a["flash_efficiency_fa1"].items()},
        softmax_share_fwd=float(a["softmax_share_fwd"]),
        narrow_head_share=(float(a["narrow_head"]["fwd_share"]), float(a["narrow_head"]["bwd_share"])),
        narrow_head_ref=float(a["narrow_head"]["ref_head_dim"]),
        ck_bwd_head_dims=tuple(int(d) for d in a["ck_bwd"]["head_dims"]),
        ck_bwd_mla_asm_families=tuple(str(f) for f in a["ck_bwd"]["mla_asm_families"]),
        sfu_ex2_speedup={str(k): float(v) for k, v in a["sfu_ex2_speedup"].items()},
        fp8_attention_speedup={str(k): (float(v["fwd"]), float(v["bwd"]))
                               for k, v in a["fp8_attention_speedup"].items()},
        fp8_attention_speedup_by_head_dim={str(d): {str(k): (float(v["fwd"]), float(v["bwd"])) for k, v in fam.items()}
                                           for d, fam in a["fp8_attention_speedup_by_head_dim"].items()},
        mxfp8_attention_speedup={str(k): (float(v["fwd"]), float(v["bwd"]))
                                 for k, v in a["mxfp8_attention_speedup"].items()},
        mxfp8_attention_speedup_by_head_dim={str(d): {str(k): (float(v["fwd"]), float(v["bwd"])) for k, v in fam.items()}
                                             for d, fam in a["mxfp8_attention_speedup_by_head_dim"].items()},
        native_length_scaling=_length_curves(a["native_length_scaling"]),
        native_length_ref=float(a["native_length_scaling"]["ref"]),
        flash_length={str(kernel): (float(t["ref"]), {str(fam): (tuple(map(float, c["lengths"])),
                                                               tuple(map(float, c["fwd_bwd"])))
                                                        for fam, c in t.items() if fam != "ref"})
                      for kernel, t in a["flash_length_scaling"].items()},
        native_length_release={str(rel): _length_curves(fam)
                               for rel, fam in a["native_length_scaling"].get("release", {}).items()},
        cudnn_release_speedup={str(rel): {str(k): (float(v["fwd"]), float(v["bwd"])) for k, v in fam.items()}
                               for rel, fam in a["cudnn_release_speedup"].items()},
        hbm_efficiency=float(m["hbm_efficiency"]),
        intra_busbw_fraction=float(c["intra_busbw_fraction"]),
        intra_busbw_fraction_mesh=float(c["intra_busbw_fraction_mesh"]),
        nvls_allreduce_gain=float(c["nvls_allreduce_gain"]),
        tp_overlap_fraction=float(c["tp_overlap_fraction"]),
        overlap_interference=float(c["overlap_interference"]),
        optimizer_bytes_per_param={str(k): float(v) for k, v in d["optimizer"]["bytes_per_param"].items()},
        optimizer_model_dtype_bytes_per_param={str(k): float(v) for k, v in
                                               d["optimizer"]["model_dtype_bytes_per_param"].items()},
        p2p_exposed_fraction=float(d["pipeline"]["p2p_exposed_fraction"]),
        data_loading_exposed_s=float(d["data_loading"]["exposed_s"]),
        cpu_adam_params_per_s_per_gpu=float(d["offload"]["cpu_adam_params_per_s_per_gpu"]),
        cpu_adam_bytes_per_param=float(d["offload"]["cpu_adam_bytes_per_param"]),
        fp8_recipes={str(n): {str(k): float(v) for k, v in r.items()} for n, r in d["fp8"]["recipes"].items()},
        fp8_default_recipe={str(k): str(v) for k, v in d["fp8"]["default_recipe"].items()},
        fp4_recipes={str(k): tuple(str(f) for f in v) for k, v in d["fp8"].get("fp4_recipes", {}).items()},
        fp8_recipe_families={str(k): tuple(str(f) for f in v) for k, v in d["fp8"].get("recipe_families", {}).items()},
        fp8_emulated_gemms={str(k): (str(v["as"]), tuple(str(f) for f in v["families"]))
                            for k, v in d["fp8"].get("emulated_gemms", {}).items()},
        raw=d,
    )


class Calibration(BaseModel):
    """Measured figures that replace modelled ones (all optional; None = use the model).

    - `gemm_tflops`: sustained TFLOP/s of a large GEMM in the training precision (e.g. from a cuBLAS
      benchmark); replaces peak x efficiency_max.
    - `busbw_intra_gb_s` / `busbw_inter_gb_s`: nccl-tests all-reduce bus bandwidth (`busbw` column, GB/s)
      inside one scale-up domain and across nodes. The cross-node figure is what the node's NICs carry
      together (8x NDR400: ~370 GB/s); `rates` divides it by gpus_per_node for the per-GPU network rate.
    - `hbm_gb_s`: achieved device-memory bandwidth (e.g. STREAM copy), GB/s.
    - `storage_gb_s`: aggregate checkpoint write bandwidth of the job, GB/s.
    - `flash_tflops`: sustained FlashAttention forward TFLOP/s.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    gemm_tflops: float | None = Field(default=None, gt=0)
    flash_tflops: float | None = Field(default=None, gt=0)
    busbw_intra_gb_s: float | None = Field(default=None, gt=0)
    busbw_inter_gb_s: float | None = Field(default=None, gt=0)
    hbm_gb_s: float | None = Field(default=None, gt=0)
    storage_gb_s: float | None = Field(default=None, gt=0)
    source: str = ""  # where the measurements come from (free text)


@dataclass(frozen=True)
class Rates:
    """Effective rates the formulas use, after constants and calibration are applied."""

    gemm_flops: float  # FLOP/s of a large GEMM in the training precision
    gemm_peak_flops: float  # dense peak FLOP/s of that precision (MFU denominator)
    flash_flops: float  # FLOP/s of a FlashAttention forward (16-bit)
    hbm_bytes_s: float  # achieved HBM bytes/s for streaming kernels
    intra_busbw: float  # bytes/s, ring busbw inside the scale-up domain
    inter_nic: float  # bytes/s per GPU of achieved network bandwidth
    kernel_fixed_s: float
    act_bytes: float  # bytes per activation element (2 for 16-bit, 4 for fp32)
    gemm16_flops: float = 0.0  # FLOP/s of the 16-bit GEMMs kept out of FP8 (LM head, router); 0 = gemm_flops
    fp8_cast_bytes: float = 0.0  # HBM bytes per FP8 GEMM operand element for scaling + cast (0: not FP8)
    fp8_cast_kernels: float = 0.0  # kernels per FP8 cast of one tensor (by recipe)
    # HBM-equivalent bytes per output-gradient element of the backward's casts where the recipe's backward casts cost
    # more than its forward ones (torchao NVFP4: stochastic rounding, fp8.recipes cast_time_over_bytes_backward);
    # 0 = fp8_cast_bytes
    fp8_cast_bwd_bytes: float = 0.0
    fp8_weight_cast_bytes: float = 4.0  # HBM bytes per weight element of its FP8 cast (read 16-bit, write FP8 + transpose)
    # HBM bytes per weight element the backward adds (torchao rowwise: the weight re-cast along its other axis and
    # the weight-gradient GEMM's output rescaled; fp8.recipes weight_backward_bytes_per_element); 0 elsewhere
    fp8_weight_bwd_bytes: float = 0.0
    flash_bwd_over_fwd: float = 0.0  # attention backward / forward time (0: the attention section's constant)
    # FP32 GEMMs on the CUDA cores (torch.mm on float32 without TF32, PyTorch's default): the fp32 MoE router;
    # 0 where the catalog has no FP32 figure (the router is then timed at the 16-bit rate)
    fp32_flops: float = 0.0
    # the Mamba-2 SSD scan's tile GEMMs and their HBM traffic where they run at a per-SM rate below the part's own
    # (perf_constants.yaml mamba.scan_sm_bound, `_ssd_rates`); 0 = gemm16_flops / hbm_bytes_s
    ssd_gemm_flops: float = 0.0
    ssd_hbm_bytes_s: float = 0.0
    # FLOP/s of the routed experts' grouped GEMMs where the style runs torch._grouped_mm (step_time._grouped_mm_rate)
    # or the job states Primus-Turbo's (step_time._turbo_grouped_rate); 0 = gemm_flops
    grouped_gemm_flops: Any = 0.0
    # bytes/s, ring busbw inside one NVLink bridge of a PCIe host whose bridges join fewer GPUs than it holds
    # (System.bridge_gb_s; comm.bridge_rates); 0 = no such bridge
    bridge_busbw: float = 0.0
    # the L2's measured re-read rate (bytes/s) and the largest data set read back at it (bytes); 0 = no L2 term
    # (catalog l2_cache read_tb_s / resident_mib; compute.l2_reread_credit)
    l2_read_bytes_s: float = 0.0
    l2_resident_bytes: float = 0.0
    # HBM bytes per output element of a weight-gradient GEMM that accumulates into the main gradient (Megatron's
    # gradient_accumulation_fusion: read and written in the main gradient's dtype, averaged over a step's micro-batches;
    # step_time._wgrad_accum_rate); 0 = act_bytes, a fresh 16-bit gradient written
    wgrad_out_bytes: Any = 0.0

    def __post_init__(self) -> None:
        if np.ndim(self.gemm16_flops) == 0 and not self.gemm16_flops:  # an array: per strategy, set (_tf32_rates)
            object.__setattr__(self, "gemm16_flops", self.gemm_flops)


def power_clock_factor(system: Any, constants: PerfConstants | None = None) -> float:
    """Sustained tensor-rate ratio of a part capped below its TDP.

    Families in perf_constants.yaml gemm.power_cap_static_share: linear in power above a static floor,
    (limit / TDP - share) / (1 - share): Blackwell, the line through a GB300's cuBLAS rates measured at 500 and 1,400 W;
    the full-rate GDDR PCIe parts (L40S, RTX 6000 Ada, RTX A6000), share 0, one die's matmul rate per watt measured
    flat over 72-350 W (the yaml's comment). Others: (limit / TDP)^(1/3), from CMOS dynamic power P = C V^2 f with
    voltage about linear in frequency across the DVFS range, so P ~ f^3 (Horowitz et al. 2005 / the usual DVFS model);
    a GEMM-bound GPU already runs at its power limit, so the clock follows the cap (H100 at 500 of 700 W: 0.894)."""
    limit, tdp = float(getattr(system, "power_limit_w", 0.0) or 0.0), float(system.tdp_w or 0.0)
    if limit <= 0 or tdp <= 0 or limit >= tdp:
        return 1.0
    k = constants or load_constants()
    share = _family_entry(k.raw.get("gemm", {}).get("power_cap_static_share", {}), system.accelerator)
    if share is None:
        return (limit / tdp) ** (1.0 / 3.0)
    if limit <= share * tdp:
        raise SpecError(f"accelerators.{system.accelerator}.power_limit_w", msg(
            "power_limit_below_static_floor", floor_w=f"{share * tdp:,.0f}", accelerator=system.accelerator,
            share=f"{float(share):g}", tdp_w=f"{tdp:,.0f}"), value=limit)
    return (limit / tdp - float(share)) / (1.0 - float(share))


def rates(system: Any, precision: str, constants: PerfConstants | None = None,
          calibration: Calibration | None = None, attention_kernel: str = "fa2", fp8_recipe: str = "auto",
          fused_cast: bool = False, te_quantizer: bool = False, tf32: bool = True, per_dim_cast: bool = False) -> Rates:
    """Effective rates for `system` (a `trainsizer.estimate.inputs.System`) in `precision`.

    fp32: the GEMMs and the attention at the part's TF32 / XF32 rate where `tf32` (the stack allows it:
    PerfStyle.fp32_matmul_tf32, strategy.tf32), else at its full-fp32 rate (inputs.fp32_matmul_key).

    FP8: the linear layers' GEMMs at the FP8 peak x the bf16 efficiency x the recipe's GEMM ratio
    (perf_constants.yaml `fp8`), the other GEMMs at the 16-bit rate, and the recipe's cast bytes -- its
    `fused_cast_bytes_per_element` when the framework fuses the cast into the producing norm / activation kernel
    (`fused_cast`, Transformer Engine LayerNormLinear) and the recipe has such a figure; less the transpose the
    cast writes where Transformer Engine's quantizers make none (`te_quantizer`, fp8_transpose_free); the recipe's
    `per_dim_` figures where the stack casts each operand along dim 0 and dim 1 in separate passes (`per_dim_cast`,
    torchao's MX linears: _per_dim_recipe)."""
    k = constants or load_constants()
    cal = calibration or Calibration()
    peak = system.peak(precision, tf32) * 1e12
    eff16 = k.gemm_efficiency(system.accelerator) * power_clock_factor(system, k)
    gemm, gemm16, cast_bytes, cast_kernels = _gemm_rates(system, precision, k, cal, eff16, fp8_recipe, fused_cast,
                                                         tf32, per_dim_cast)
    transpose = fp8_transpose_free(system.accelerator, k, fp8_recipe) if precision == "fp8" and te_quantizer else 0.0
    w_fwd, w_bwd = _weight_cast_bytes(system, precision, k, fp8_recipe, per_dim_cast)
    slow_fwd, slow_bwd, slow_w = _cast_time_over_bytes(system, precision, k, fp8_recipe, per_dim_cast)
    p32 = system.peak_tflops.get("fp32")
    fp32 = float(p32) * 1e12 * eff16 if p32 else 0.0
    flash, bwd_over_fwd = _flash_rate(system, precision, k, cal, attention_kernel, tf32)
    hbm, intra, inter = _memory_and_link_rates(system, k, cal)
    ssd_gemm, ssd_hbm = _ssd_rates(system, k, gemm16, hbm)
    return Rates(
        gemm_flops=gemm,
        gemm_peak_flops=peak,
        flash_flops=flash,
        hbm_bytes_s=hbm,
        intra_busbw=max(intra, 1.0),
        inter_nic=max(inter, 1.0),
        kernel_fixed_s=k.kernel_fixed_s,
        act_bytes=float(act_bytes(precision)),
        gemm16_flops=gemm16,
        fp8_cast_bytes=(cast_bytes - transpose) * slow_fwd,
        fp8_cast_kernels=cast_kernels,
        fp8_cast_bwd_bytes=(cast_bytes - transpose) * slow_bwd if slow_bwd != slow_fwd else 0.0,
        fp8_weight_cast_bytes=(w_fwd - transpose) * slow_w,
        fp8_weight_bwd_bytes=w_bwd,
        flash_bwd_over_fwd=bwd_over_fwd,
        fp32_flops=fp32,
        ssd_gemm_flops=ssd_gemm,
        ssd_hbm_bytes_s=ssd_hbm,
        bridge_busbw=_bridge_busbw(system, k),
        l2_read_bytes_s=float(getattr(system, "l2_read_gb_s", 0.0) or 0.0) * 1e9,
        l2_resident_bytes=float(getattr(system, "l2_resident_mib", 0.0) or 0.0) * 2.0**20,
    )


def _bridge_busbw(system: Any, k: PerfConstants) -> float:
    """Ring busbw inside one NVLink bridge of a PCIe host (System.bridge_gb_s): the bridge's rate x the ring's share of
    a link, the full mesh's (intra_busbw_fraction_mesh) where the bridge joins more than a pair; 0 without a bridge."""
    gb_s = float(getattr(system, "bridge_gb_s", 0.0) or 0.0)
    mesh = int(getattr(system, "bridge_mesh_links", 0) or 0)
    return gb_s * 1e9 * (k.intra_busbw_fraction_mesh if mesh else k.intra_busbw_fraction)


def _cast_time_over_bytes(system: Any, precision: str, k: PerfConstants, fp8_recipe: str,
                          per_dim: bool = False) -> tuple[float, float, float]:
    """(forward activation, backward gradient, weight) cast time over what the counted bytes take at the streaming
    rate: 1 where the recipe's casts stream at the HBM rate; torchao's NVFP4 Triton kernels, compute-bound, measured
    by torchao's own kernel benchmarks on GB200 (perf_constants.yaml fp8.recipes.nvfp4-torchao
    cast_time_over_bytes_*). (1, 1, 1) outside FP8."""
    if precision != "fp8":
        return 1.0, 1.0, 1.0
    recipe = _per_dim_recipe(k.fp8_recipe(system.accelerator, fp8_recipe), per_dim)
    fwd = float(recipe.get("cast_time_over_bytes_forward", 1.0))
    return fwd, float(recipe.get("cast_time_over_bytes_backward", fwd)), float(recipe.get("weight_cast_time_over_bytes", 1.0))


def _weight_cast_bytes(system: Any, precision: str, k: PerfConstants, fp8_recipe: str,
                       per_dim: bool = False) -> tuple[float, float]:
    """(forward, backward) HBM bytes per weight element of a micro-batch's FP8 weight casts: the recipe's
    weight_cast_bytes_per_element (4: read 16-bit, write FP8 + its transpose) and weight_backward_bytes_per_element
    (0), perf_constants.yaml fp8.recipes; (4, 0) outside FP8, where no cast is charged."""
    if precision != "fp8":
        return 4.0, 0.0
    recipe = _per_dim_recipe(k.fp8_recipe(system.accelerator, fp8_recipe), per_dim)
    return (float(recipe.get("weight_cast_bytes_per_element", 4.0)),
            float(recipe.get("weight_backward_bytes_per_element", 0.0)))


def _ssd_rates(system: Any, k: PerfConstants, gemm16: float, hbm: float) -> tuple[float, float]:
    """(16-bit GEMM FLOP/s, HBM bytes/s) of the Mamba-2 SSD scan's Triton kernels on a part whose family is in
    perf_constants.yaml mamba.scan_sm_bound.families (Hopper and Blackwell datacenter parts), (0, 0) elsewhere: the reference
    part's rates (H100 SXM: its catalog BF16 peak x gemm efficiency, its HBM x hbm_efficiency) times the ratio of SMs x clock,
    read as the rated FP32 (CUDA-core) peaks (128 FP32 lanes per SM on both architectures), at most the part's own.
    Why: the yaml's comment (the kernels' time follows the SMs and their clock, not the per-SM tensor rate Blackwell
    doubled, nor the HBM of H200 or Blackwell)."""
    cfg = k.raw.get("mamba", {}).get("scan_sm_bound")
    p32 = system.peak_tflops.get("fp32")
    if not cfg or not p32 or not any(system.accelerator.lower().startswith(f) for f in cfg["families"]):
        return 0.0, 0.0
    ref = _catalog_part(str(cfg["reference"]["part"]))
    sm_clock = float(p32) * power_clock_factor(system, k) / float(ref.tflops_dense["fp32"])
    ref_gemm = float(ref.tflops_dense["bf16"]) * 1e12 * k.gemm_efficiency(ref.id) * sm_clock
    ref_hbm = float(ref.memory_bw_tb_s) * 1e12 * k.hbm_efficiency * sm_clock
    return min(gemm16, ref_gemm), min(hbm, ref_hbm)


def _catalog_part(part: str) -> Any:
    """An accelerator of the built-in catalog (its rated peaks and HBM): a reference part a constant is stated
    against, read where the catalog holds the figures rather than copied into perf_constants.yaml."""
    from trainsizer.catalog.catalog import load_catalog

    return load_catalog().accelerator(part)


def fp8_transpose_free(accelerator: str, k: PerfConstants, fp8_recipe: str = "auto") -> float:
    """Bytes per element of the FP8 transpose a cast does not write (the recipe's transpose_bytes_per_element) on
    a part whose FP8 GEMMs take every layout (memory_constants.yaml fp8.non_tn_fp8_gemm_families): Transformer
    Engine >= 2.0 makes no transpose there under per-tensor scaling (pytorch/csrc/extensions/quantizer.cpp
    Float8Quantizer::create_tensor: create_transpose = columnwise_usage && !non_tn_fp8_gemm_supported(), SM >= 10.0);
    0 elsewhere."""
    from trainsizer.estimate.model_states import load_memory_constants

    families = load_memory_constants()["fp8"]["non_tn_fp8_gemm_families"]
    if not any(accelerator.lower().startswith(f) for f in families):
        return 0.0
    return float(k.fp8_recipe(accelerator, fp8_recipe).get("transpose_bytes_per_element", 0.0))


def _gemm_rates(system: Any, precision: str, k: PerfConstants, cal: Calibration, eff16: float, fp8_recipe: str,
                fused_cast: bool, tf32: bool = True, per_dim: bool = False) -> tuple[float, float, float, float]:
    """(GEMM FLOP/s of the linear layers, FLOP/s of the 16-bit GEMMs, FP8 cast bytes per element, FP8 cast
    kernels per tensor); the cast figures are 0 outside FP8."""
    peak = system.peak(precision, tf32) * 1e12
    eff = eff16
    cast_bytes = cast_kernels = 0.0
    if precision == "fp8":
        recipe = _per_dim_recipe(k.fp8_recipe(system.accelerator, fp8_recipe), per_dim)
        if recipe["name"] in k.fp4_recipes:  # NVFP4 / MXFP4: the linear layers' GEMMs on the FP4 tensor cores
            peak, eff = _fp4_gemm_rate(system, k, str(recipe["name"]), eff16)
        else:
            eff *= _fp8_gemm_ratio(k, k.fp8_gemm_recipe(system.accelerator, recipe), system.accelerator)
        cast_bytes = recipe.get("fused_cast_bytes_per_element", recipe["cast_bytes_per_element"]) if fused_cast \
            else recipe["cast_bytes_per_element"]
        cast_kernels = recipe.get("fused_cast_kernels_per_tensor", recipe["cast_kernels_per_tensor"]) if fused_cast \
            else recipe["cast_kernels_per_tensor"]
    elif precision == "fp32":
        eff *= k.fp32_efficiency_ratio
    gemm = cal.gemm_tflops * 1e12 if cal.gemm_tflops else peak * eff
    gemm16 = gemm
    if precision == "fp8":
        p16 = "bf16" if system.peak_tflops.get("bf16") else precision
        gemm16 = system.peak(p16) * 1e12 * eff16
    return gemm, gemm16, cast_bytes, cast_kernels


def _per_dim_recipe(recipe: dict[str, float], per_dim: bool) -> dict[str, float]:
    """The recipe's figures with its `per_dim_` ones in place of the plain keys where the stack casts each operand
    along dim 0 and dim 1 in separate passes (PerfStyle.fp8_cast_per_dim: torchao's MX linears); the recipe as it is
    otherwise, or where it has no such figures (perf_constants.yaml fp8.recipes.mxfp8)."""
    if not per_dim:
        return recipe
    return {**recipe, **{key[len("per_dim_"):]: v for key, v in recipe.items() if key.startswith("per_dim_")}}


def _fp8_gemm_ratio(k: PerfConstants, recipe: dict[str, float], accelerator: str = "") -> float:
    """An FP8 recipe's GEMM share of the FP8 peak over the bf16 one: the part's own measured ratio where its family has
    one (fp8.gemm_ratio_by_family: the H20), else the recipe's gemm_efficiency_ratio, or the per-tensor recipes' ratio
    times its measured kernel ratio over them (gemm_rate_over_tensorwise: block scaling on Hopper, TE's GEMM profiling
    guide, perf_constants.yaml fp8.recipes.blockwise)."""
    measured = _family_entry(k.raw.get("fp8", {}).get("gemm_ratio_by_family", {}), accelerator)
    if measured is not None:
        return float(measured)
    if "gemm_efficiency_ratio" in recipe:
        return float(recipe["gemm_efficiency_ratio"])
    return k.fp8_recipes["tensorwise"]["gemm_efficiency_ratio"] * float(recipe["gemm_rate_over_tensorwise"])


def _fp4_gemm_rate(system: Any, k: PerfConstants, recipe: str, eff16: float) -> tuple[float, float]:
    """(peak FLOP/s, share of it) of an FP4-peak recipe's linear GEMMs (NVFP4): the part's per-tensor FP8 GEMM rate
    (FP8 peak x the bf16 share x fp8.recipes.tensorwise gemm_efficiency_ratio) times the recipe's measured kernel
    ratio over it (gemm_rate_over_tensorwise: Transformer Engine's GEMM profiling guide, B300, pre-quantized), at most
    the FP4 peak at that share. Not a share of the rated FP4 peak: Blackwell Ultra's 1.46-1.5x FP4 peak over Blackwell
    does not show in its NVFP4 GEMMs (B300 runs them at 0.39 of its FP4 peak where its FP8 GEMMs reach 0.63 of the FP8
    peak) nor in NVFP4 training (MLPerf v5.1 Llama 3.1 8B, 8 GPUs: B300 / B200 1.09, GB300 / GB200 1.17).
    docs/known-gaps.md 30. Refused where the part runs no such recipe (fp4_peak)."""
    peak4 = fp4_peak(system, k, recipe) * 1e12
    share8 = eff16 * k.fp8_recipes["tensorwise"]["gemm_efficiency_ratio"]
    rate = k.fp8_recipes[recipe]["gemm_rate_over_tensorwise"] * system.peak("fp8") * 1e12 * share8
    return peak4, min(rate, peak4 * share8) / peak4


def fp4_training(training: Any, constants: PerfConstants | None = None) -> bool:
    """Whether the job's linear layers train at the FP4 peak (precision fp8 with an fp8.fp4_recipes recipe: NVFP4).
    Such recipes keep 16-bit primary weights with a per-step NVFP4 copy (MLPerf Training v5.1 NVIDIA
    config_common_fp4.sh: FP8_PARAM_GATHER False), so FP8 primary weights never apply to them."""
    k = constants or load_constants()
    return training.precision == "fp8" and training.fp8_recipe in k.fp4_recipes


def fp4_peak(system: Any, k: PerfConstants, recipe: str) -> float:
    """Dense FP4 TFLOP/s an FP4-peak recipe (NVFP4) runs its GEMMs at; refused on a part whose family does not run
    the recipe (perf_constants.yaml fp8.fp4_recipes) or that has no FP4 tensor cores in the catalog."""
    acc = system.accelerator.lower()
    value = system.peak_tflops.get("fp4")
    if not value or not any(acc.startswith(f) for f in k.fp4_recipes[recipe]):
        raise SpecError("training.fp8_recipe", msg("fp4_recipe_unsupported", recipe=recipe,
                                                    accelerator=system.accelerator,
                                                    parts=", ".join(k.fp4_recipes[recipe])),
                        value=recipe, allowed=k.recipes_on(system.accelerator))
    return float(value)


def _flash_rate(system: Any, precision: str, k: PerfConstants, cal: Calibration,
                attention_kernel: str, tf32: bool = True) -> tuple[float, float]:
    """(attention-core forward FLOP/s, backward / forward time ratio)."""
    # Attention stays in 16-bit under FP8 training (Transformer Engine); flash efficiency rides on the bf16 GEMM.
    attn_precision = "bf16" if precision == "fp8" else precision
    if attn_precision == "bf16" and not system.peak_tflops.get("bf16"):
        attn_precision = precision
    attn_peak = system.peak(attn_precision, tf32) * 1e12
    attn_eff = k.flash_fraction(system.accelerator, attention_kernel) * (
        k.fp32_efficiency_ratio if precision == "fp32" else 1.0) * power_clock_factor(system, k)
    sfu_fwd, bwd_over_fwd = k.attention_sfu(system.accelerator, attention_kernel)
    flash = cal.flash_tflops * 1e12 if cal.flash_tflops else attn_peak * attn_eff / sfu_fwd
    return flash, bwd_over_fwd


def _memory_and_link_rates(system: Any, k: PerfConstants, cal: Calibration) -> tuple[float, float, float]:
    """(HBM bytes/s, intra-node bus bandwidth, inter-node bytes/s per GPU), measured figures first."""
    if system.hbm_gb_s <= 0:
        raise SpecError("system.hbm_gb_s", msg("spec_gt", limit=0), value=system.hbm_gb_s)
    hbm = cal.hbm_gb_s * 1e9 if cal.hbm_gb_s else system.hbm_gb_s * 1e9 * k.hbm_efficiency
    intra = (
        cal.busbw_intra_gb_s * 1e9
        if cal.busbw_intra_gb_s
        else system.intra_node_gb_s * 1e9 * (k.intra_busbw_fraction_mesh if getattr(system, "scaleup_mesh_links", 0)
                                             else k.intra_busbw_fraction)
    )
    if cal.busbw_inter_gb_s:
        # busbw across nodes ~= NICs per node x per-NIC rate; per GPU rate = busbw / GPUs per node
        inter = cal.busbw_inter_gb_s * 1e9 / max(1, system.gpus_per_node)
    else:
        # already the achieved payload (line rate x the network's measured efficiency, scenario.NetworkView):
        # no second efficiency factor here
        inter = system.inter_node_gb_s * 1e9
    return hbm, intra, inter
