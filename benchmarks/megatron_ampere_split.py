"""megatron/dense on Ampere split by job fact: where the A100 multi-host offset sits (docs/known-gaps.md 324).

megatron/dense/ampere/multi reads +9.9% median over 52 rows (predicted too fast), its Hopper twin +3.2%, the A100
one-host class -1.5%. This lists every held-out megatron/dense time row on Ampere (one host and several: the rows and
jobs are the held-out benchmarks' own, accuracy_bands.collect; nothing fitted, no row written here) and groups the
signed errors by what the job states and the estimate resolves:

- source (the row id's series), hosts (one / several), recompute (none / selective / full), attention (a flash
  kernel or Megatron's eager fused-softmax path), stack (Megatron-LM's legacy path or Megatron-Core), network kind
  (catalog id or a hand-described network's kind), PP (1 / > 1) and TP;
- each source on one host beside its rows across hosts (an offset a source carries where the network carries
  nothing is not the network's);
- the same source's rows that differ in the recompute setting only at one GPU count (twins);
- the development set's one A100 Megatron figure split into forward and backward (Korthikanti et al. 2022 Table 4,
  GPT 22B, TP 8, no recompute): what a charge on the backward of a layer without recompute would have to pass.

Sign: + = predicted too fast (accuracy_bands.Row.err).

Run: python benchmarks/megatron_ampere_split.py
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

import accuracy_bands as ab

CLASS = "megatron/dense/ampere"
FACTS = ("source", "hosts", "recompute", "attention", "stack", "network", "pp", "tp", "memory")
MEMORY_BINS = (0.6, 0.9)  # the estimate's memory a GPU over the part's usable memory: where the listing splits
# Korthikanti et al. 2022 (arXiv:2205.05198) Table 4, GPT 22B layer (h 6144, 64 heads, s 2048, b 4, TP 8), the
# "baseline no recompute" line: forward 7.7 ms, backward 11.9 ms (benchmarks/data/throughput.csv's notes column)
KORTHIKANTI_T4_MS = (7.7, 11.9)


def network_kind(job: dict[str, Any]) -> str:
    """The network a job names: its catalog id, or a hand-described network's kind ('inline:roce')."""
    net = (job.get("hardware") or {}).get("network", "-")
    return str(net) if isinstance(net, str) else f"inline:{net.get('kind', '?')}"


def row_facts(row: ab.Row, parts: dict[str, float] | None = None, memory_share: float | None = None) -> dict[str, str]:
    """The facts the listing groups by (FACTS); pp and tp from the resolved job where `parts` (accuracy_bands.step_parts)
    is given, else as the job states them; memory = the estimate's memory a GPU over the usable memory (MEMORY_BINS,
    '-' where not given): a caching allocator near the card's capacity retries and frees, which a full-memory run
    pays and the estimate does not."""
    job = row.job
    st, hw = job.get("strategy") or {}, job.get("hardware") or {}
    per_node = int(hw.get("per_node", 8) or 8)
    layout = parts or {"pp": float(st.get("pp", 1) or 1), "tp": float(st.get("tp", 1) or 1)}
    return {"source": ab.release_of(row.row_id),
            "hosts": "1" if int(hw.get("count", 0)) <= per_node else ">1",
            "recompute": str(st.get("recompute", "-")),
            "attention": "flash" if job.get("flash_attention", True) else "eager",
            "stack": str(st.get("framework", "-")),
            "network": network_kind(job),
            "pp": "1" if layout["pp"] <= 1 else ">1",
            "tp": f"{layout['tp']:.0f}",
            "memory": "-" if memory_share is None else ab._bin(memory_share, MEMORY_BINS, "{:.0%}")}


def groups(rows: list[ab.Row], facts: list[dict[str, str]], fact: str) -> list[tuple[str, int, float, float]]:
    """(value, rows, median signed %, MAPE %) per value of `fact`, most rows first."""
    by: dict[str, list[float]] = defaultdict(list)
    for row, f in zip(rows, facts, strict=True):
        by[f[fact]].append(100.0 * row.err)
    out = [(k, len(v), float(np.median(v)), float(np.mean(np.abs(v)))) for k, v in by.items()]
    return sorted(out, key=lambda g: (-g[1], g[0]))


def crossed(rows: list[ab.Row], facts: list[dict[str, str]], first: str, second: str) -> list[tuple[str, str, int, float]]:
    """(value of `first`, value of `second`, rows, median signed %) for every pair that holds rows."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row, f in zip(rows, facts, strict=True):
        by[(f[first], f[second])].append(100.0 * row.err)
    return sorted((a, b, len(v), float(np.median(v))) for (a, b), v in by.items())


GPUS = re.compile(r"_(\d+)gpu")


@dataclass(frozen=True)
class Twin:
    """The rows of one source, model and GPU count without recompute and those with it (full or selective)."""

    source: str
    model: str
    gpus: int
    without: tuple[ab.Row, ...]
    with_: tuple[ab.Row, ...]

    @property
    def gap(self) -> float:
        """Points the median signed error without recompute reads above the one with it (+ = faster predicted)."""
        return 100.0 * (float(np.median([r.err for r in self.without])) - float(np.median([r.err for r in self.with_])))


def recompute_twins(rows: list[ab.Row], facts: list[dict[str, str]]) -> list[Twin]:
    """Every (source, model, GPU count, from the row id's `_<n>gpu`) that holds rows without recompute and rows with
    it."""
    by: dict[tuple[str, str, int], dict[str, list[ab.Row]]] = defaultdict(lambda: defaultdict(list))
    for row, f in zip(rows, facts, strict=True):
        m = GPUS.search(row.row_id)
        if m:
            key = (f["source"], ab.row_facts(row)["model"], int(m.group(1)))
            by[key]["none" if f["recompute"] == "none" else "with"].append(row)
    return [Twin(s, mdl, g, tuple(pair["none"]), tuple(pair["with"])) for (s, mdl, g), pair in sorted(by.items())
            if len(pair) == 2]


def korthikanti_split() -> tuple[float, float]:
    """The estimate's (forward, backward) ms of Korthikanti's 22B layer without recompute, as perf_validation times
    it (the two-layer less the one-layer step, TP 8 on one A100 node): the forward compute and half the TP
    all-reduces (two a layer each way without sequence parallelism, Megatron's f / g), the rest the backward."""
    import perf_validation as pv
    from trainsizer.estimate.inputs import Strategy, Training
    from trainsizer.estimate.step_time import step_time_arrays

    base = {"hidden": "6144", "heads": "64", "kv_heads": "64", "ffn": str(4 * 6144), "vocab": "51200",
            "seq_len": "2048"}
    training = Training(precision="fp16", seq_len=2048, global_batch_seqs=4, flash_attention=False)
    strategy = Strategy(tp=8, pp=1, dp=1, micro_batch=4, recompute="none", sequence_parallel=False,
                        framework="megatron")
    parts = []
    for layers in (1, 2):
        out = step_time_arrays(pv.gpt_model(dict(base, layers=str(layers))), training, pv.a100(8, 80), strategy)
        parts.append({k: float(np.asarray(out[k]).reshape(-1)[0]) for k in ("compute", "forward_compute", "tp_comm")})
    d = {k: 1e3 * (parts[1][k] - parts[0][k]) for k in parts[0]}
    fwd = d["forward_compute"] + d["tp_comm"] / 2.0
    return fwd, d["compute"] + d["tp_comm"] - fwd


def memory_share(row: ab.Row) -> float | None:
    """The estimate's memory a GPU of the row's job over the part's usable memory; None where the job does not
    resolve."""
    from trainsizer.catalog import load_catalog
    from trainsizer.errors import TrainsizerError
    from trainsizer.evaluate import evaluate
    from trainsizer.scenario import resolve_job

    catalog = ab._CATALOGS.setdefault(row.overlay, load_catalog([ab.DATA / row.overlay] if row.overlay else []))
    try:
        sc = resolve_job(row.job, catalog)
        mem = evaluate(sc, catalog)["memory"]
    except (TrainsizerError, KeyError, TypeError, ValueError):
        return None
    return float(mem["per_gpu_gib"]) / float(sc.system.memory_gib)


def class_rows() -> tuple[list[ab.Row], list[dict[str, str]]]:
    """The held-out megatron/dense Ampere time rows (one host and several) and their facts."""
    rows = ab.class_rows(ab.classify(ab.collect()), CLASS)
    return rows, [row_facts(r, ab._row_parts(r), memory_share(r)) for r in rows]


def main() -> None:
    rows, facts = class_rows()
    e = 100.0 * np.array([r.err for r in rows])
    print(f"{CLASS} time rows: n={len(rows)} median {np.median(e):+.1f} MAPE {np.mean(np.abs(e)):.1f} "
          "(signed %, + = predicted too fast)")
    for fact in FACTS:
        print(f"  by {fact}: " + "; ".join(f"{k} n={n} median {med:+.1f} MAPE {m:.1f}"
                                          for k, n, med, m in groups(rows, facts, fact)))
    for second in ("hosts", "recompute"):
        print(f"\nsource x {second} (rows, median signed %):")
        for a, b, n, med in crossed(rows, facts, "source", second):
            print(f"  {a:22s} {b:10s} n={n:2d} {med:+6.1f}")
    print("\nrecompute twins (one source, model and GPU count): the rows without / with recompute, gap of the medians")
    for t in recompute_twins(rows, facts):
        print(f"  {t.source:18s} {t.model:18s} {t.gpus:5d} GPUs  "
              + " ".join(f"{100 * r.err:+.1f}" for r in t.without) + "  /  "
              + " ".join(f"{100 * r.err:+.1f}" for r in t.with_)
              + f" ({t.with_[0].job['strategy'].get('recompute')})  gap {t.gap:+5.1f}")
    fwd, bwd = korthikanti_split()
    mf, mb = KORTHIKANTI_T4_MS
    print(f"\nKorthikanti 2022 Table 4, 22B layer at TP 8 without recompute (development set): forward {fwd:.2f} ms "
          f"(measured {mf}), backward {bwd:.2f} ms (measured {mb}); backward / forward {bwd / fwd:.2f} "
          f"(measured {mb / mf:.2f})")


if __name__ == "__main__":
    main()
