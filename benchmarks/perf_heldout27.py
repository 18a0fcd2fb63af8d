"""Held-out check on published runs added 2026-12-02 (second batch; nothing is fitted on them):

- Megatron-Bridge 26.04.01 and 26.06.01 pre-training tables (benchmarks/data/heldout_2026c_mbridge.csv): every line of
  the 26.04.01 and 26.06.01 NeMo Container sections of docs/performance-summary-archive.md at Megatron-Bridge commit
  067f987d whose model has a preset -- Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, GPT-OSS 120B, Qwen3 30B-A3B /
  235B-A22B on DGX-GB300, -GB200, -B300, -B200 and -H100 (41 rows). Kimi-K2 (its runs use the Muon optimizer, which no
  job option states), Nemotron 3 Super (no preset) and Nemotron 3 Nano (perf_hybrid.py holds it) are left out.
  Each row is stated from the workload base config its release's performance scripts load (the V2 variant, else V1,
  as utils.get_workload_base_config picks): 26.04.01 from the r0.4.0 release branch at c5d4ab462 (2026-05-15, the
  last change to scripts/performance before the table was committed at 17a381f95 on 2026-05-16; v0.4.0's configs
  match only 31 of its 33 lines, DeepSeek-V3 on B300 / B200 having moved to PP 8), 26.06.01 from v0.5.1 (tagged
  2026-07-20, the table committed at 381d0b825 the next day). Every table layout, batch and GPU count equals its
  config's. The columns read the config exactly as perf_mbridge26.py's 26.04 / 26.06 rows do (its `job` builds these
  rows; the reading reproduces every derived column of those rows from v0.4.0 / v0.5.0): Megatron-FSDP and
  cpu_offloading_num_layers, recompute_modules, CUDA graphs (full_iteration where the config captures the whole
  iteration; Transformer Engine graphs of parts of a layer written none), the MoE dispatcher (flex where
  moe_flex_dispatcher_backend is set, else alltoall: utils/overrides.py set_workload_base_configs), moe_a2a_overlap and
  fp8_dot_product_attention. What the rows cannot state is in the `assumed` column (partial CUDA graphs, DeepSeek-V3's
  pp_layout, cutedsl_fused_grouped_mlp, 405B NVFP4's parameter-gather overlap switched off on GB200, MXFP8's
  fp8_output_proj under v0.5.1, the DGX-B300 network); the two 26.06.01 GPT-OSS lines carry the table's own footnote
  that they are a known regression. The 26.02.01 table is not here: six of its 36 preset lines match no config of
  the r0.3.0 branch or any tag around it (e.g. Llama 3 70B MXFP8 on GB300 at MBS 2, PP 4 without VP).

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout27.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from harness import Fit, job_fits, print_cases, print_fits, row_cases
from perf_mbridge26 import job as mbridge_job
from perf_mbridge26 import print_groups, print_worst

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026c_mbridge.csv"


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU)."""
    return row_cases(rows(), mbridge_job)


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits((r["id"], mbridge_job(r)) for r in rows())


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMegatron-Bridge 26.04.01 / 26.06.01 (held out, nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    rest = [e for (rid, _, _, _), e in zip(cs, errs, strict=True) if "gpt_oss" not in rid]
    print(f"  without GPT-OSS 120B: n={len(rest)} MAPE {100 * sum(rest) / len(rest):.1f}%")
    print_groups(cs, {r["id"]: r for r in rows()}, ("release", "system", "precision", "model"))
    print_worst(cs, 8)
    print_fits(fits(), "perf_heldout27")


if __name__ == "__main__":
    main()
