"""Megatron MoE on Blackwell where the estimate charges no host term: the miss by die, model and EP (issue #13).

The time rows of the megatron/moe/blackwell classes whose predicted step holds no host excess (step_parts host_s 0:
Megatron-Core under a full-iteration CUDA graph, sync-free, no per-layer floor and no per-expert launches) miss what
they miss on the GPU or the fabric alone, so they split the class's GPT-OSS offset without the host terms that carry
the eager rows (docs/known-gaps.md 88 (a), 319 (b)). Each row prints its die (sm100: B200 / GB200; sm103: B300 /
GB300), model, EP and CP degrees, tokens a micro-batch and sequence, the time it misses per decoder layer and
micro-batch (accuracy_bands.missing_ms_per_layer), that miss scaled to 16,384 tokens a micro-batch, the estimate's
attention core per layer and micro-batch (the step less the step with the attention at an unbounded rate, as
perf_blackwell.job_split) and the factor on that attention that would carry the miss alone. The summary groups by
model, die and EP > 1. GPT-OSS 20B and 120B share one decoder layer (hidden 2,880, 64 query / 8 KV heads of 64,
the expert's 2,880 x 5,760 / 2,880 x 2,880, top-4): only the expert count and the depth differ. Nothing fitted, no
estimate changed: a diagnostic for docs/known-gaps.md 328 (a).

Run: python benchmarks/moe_host_free.py   (about 2 minutes: every held-out benchmark is scored)
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy_bands as ab  # noqa: E402
from trainsizer.catalog import load_catalog  # noqa: E402
from trainsizer.estimate.calibration import Calibration  # noqa: E402
from trainsizer.estimate.step_time import step_time_arrays  # noqa: E402
from trainsizer.scenario import resolve_job  # noqa: E402

CLASS_PREFIX = "megatron/moe/blackwell"
TOKENS_REF = 16384  # tokens a micro-batch the misses are scaled to (the GPT-OSS 120B and Qwen3 30B-A3B rows' own)
# the die a part carries: sm100 (Blackwell) or sm103 (Blackwell Ultra: twice the SFU's MUFU.EX2 rate, 160 SMs)
DIES = {"b200": "sm100", "gb200": "sm100", "b300": "sm103", "gb300": "sm103"}
_UNBOUNDED_TFLOPS = 1e9


@dataclass(frozen=True)
class HostFree:
    row_id: str
    die: str
    model: str
    ep: int
    cp: int
    tokens: float  # tokens a micro-batch on one GPU (sequence x micro-batch / CP)
    seq_len: int
    err: float  # signed, + = predicted too fast
    miss_ms: float  # per decoder layer and micro-batch
    attention_ms: float  # the estimate's attention core per decoder layer and micro-batch

    @property
    def miss_ref_ms(self) -> float:
        """The miss scaled to TOKENS_REF tokens a micro-batch (a cost per token)."""
        return self.miss_ms * TOKENS_REF / self.tokens

    @property
    def attention_factor(self) -> float:
        """The factor on the estimate's attention core that would carry the miss alone."""
        return attention_factor(self.attention_ms, self.miss_ms)


def die_of(part: str) -> str:
    """sm100 / sm103 for the Blackwell parts, the part's own name otherwise."""
    return DIES.get(part, part)


def attention_factor(attention_ms: float, miss_ms: float) -> float:
    """(attention + miss) / attention: the attention core's time over the estimate's if it alone held the miss."""
    return (attention_ms + miss_ms) / attention_ms if attention_ms > 0 else float("nan")


def attention_ms_per_layer(job: dict, catalog, parts: dict[str, float]) -> float:
    """The estimate's attention core in the row's step, per decoder layer and micro-batch: the step less the step
    with the attention at an unbounded rate (Calibration.flash_tflops, as perf_blackwell.job_split)."""
    sc = resolve_job(job, catalog)

    def step(cal: Calibration | None = None) -> float:
        out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, calibration=cal)
        return float(np.asarray(out["step_s"]).reshape(-1)[0])

    return 1e3 * (step() - step(Calibration(flash_tflops=_UNBOUNDED_TFLOPS))) / (parts["micro_batches"] * parts["layers"])


def host_free_rows(classed, catalog) -> list[HostFree]:
    """The time rows of the megatron/moe/blackwell classes (each once) whose predicted step charges no host excess."""
    out, seen = [], set()
    for row, keys in classed:
        if row.quantity != "time" or row.row_id in seen or not any(k.startswith(CLASS_PREFIX) for k in keys):
            continue
        seen.add(row.row_id)
        parts = ab.step_parts(row, catalog)
        if parts is None or not host_free(parts):
            continue
        st, facts = row.job.get("strategy") or {}, ab.row_facts(row)
        cp = int(st.get("cp", 1) or 1)
        tokens = float(row.job["seq_len"]) * float(st.get("micro_batch", 1) or 1) / cp
        out.append(HostFree(row.row_id, die_of(facts["part"]), facts["model"], int(st.get("ep", 1) or 1), cp, tokens,
                            int(row.job["seq_len"]), row.err, ab.missing_ms_per_layer(row, parts),
                            attention_ms_per_layer(row.job, catalog, parts)))
    return out


def host_free(parts: dict[str, float]) -> bool:
    """No host excess in the predicted step (below 1e-9 of it: the blend's floating-point residue)."""
    return parts["host_s"] <= 1e-9 * parts["step_s"]


def family(model: str) -> str:
    """GPT-OSS's sizes as one family (one decoder layer), other models as named."""
    return "gpt-oss" if "gpt-oss" in model.lower() or "gptoss" in model.lower() else model


def group_key(r: HostFree) -> str:
    """family / die / EP degree, with CP where the job splits the sequence (its per-layer costs come apart)."""
    return f"{family(r.model)} / {r.die} / EP {r.ep}" + (f" CP {r.cp}" if r.cp > 1 else "")


def summarise(rows: list[HostFree]) -> list[tuple[str, int, float, float, float, float]]:
    """(group_key, rows, median signed error %, median miss a layer and micro-batch ms, the same at TOKENS_REF
    tokens, median attention factor) per group, in family, die and EP order."""
    groups: dict[str, list[HostFree]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (family(r.model), r.die, r.ep, r.cp)):
        groups[group_key(r)].append(r)
    return [(k, len(v), float(np.median([100.0 * r.err for r in v])), float(np.median([r.miss_ms for r in v])),
             float(np.median([r.miss_ref_ms for r in v])), float(np.median([r.attention_factor for r in v])))
            for k, v in groups.items()]


def main() -> None:
    catalog = load_catalog()
    rows = host_free_rows(ab.classify(ab.collect()), catalog)
    rows.sort(key=lambda r: (family(r.model), r.die, r.ep, r.row_id))
    print(f"{CLASS_PREFIX}* time rows with no host term charged (full-iteration graphs): {len(rows)}")
    print(f"{'row':58s} {'die':5s} {'EP':>3s} {'CP':>2s} {'tokens':>6s} {'seq':>5s} {'err%':>6s} {'miss ms':>7s} "
          f"{'@16K':>6s} {'attn ms':>7s} {'attn x':>6s}")
    for r in rows:
        print(f"{r.row_id:58s} {r.die:5s} {r.ep:3d} {r.cp:2d} {r.tokens:6.0f} {r.seq_len:5d} {100 * r.err:+6.1f} "
              f"{r.miss_ms:+7.2f} {r.miss_ref_ms:+6.2f} {r.attention_ms:7.2f} {r.attention_factor:6.2f}")
    print(f"\nby family / die / EP (rows, median error %, median miss a layer and micro-batch ms, the same at "
          f"{TOKENS_REF:,} tokens, median attention factor):")
    for key, n, med, miss, ref, factor in summarise(rows):
        print(f"  {key:36s} n={n:2d} {med:+6.1f}% {miss:+6.2f} ms {ref:+6.2f} ms  x{factor:.2f}")


if __name__ == "__main__":
    main()
