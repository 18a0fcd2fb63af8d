"""Diagnostic, not scored and not fitted into the estimate (docs/known-gaps.md 210 (b)): how the Answer.AI RTX 3090
rig's FSDP rows (perf_heldout40, benchmarks/data/heldout_2026o_fsdp_qlora.csv: two RTX 3090 without NVLink or PCIe
peer-to-peer, "an older motherboard and slow PCI lanes") split into the GPUs' work and the link's, from the rows
alone.

Each 7B FSDP row's step (FULL_SHARD over 2 GPUs, accumulation 1: gpus x micro_batch x context tokens over its tokens/s)
is set against two things the rig's other rows fix without the estimate:
- the GPU work a sample: the DDP twin of the same method (no weight traffic; its step over its micro-batch) for the
  batched rows; for the batch-1 rows, which have no DDP twin, the LoRA and QLoRA rows of one context, whose work is
  taken as equal (the QLoRA dequantisation, ~0.05 s a step on this card, is left in);
- the bytes a GPU receives a step: FSDP1 all-gathers each decoder layer's flat parameter in the forward and again in
  the backward (the reentrant checkpoint re-runs the layer inside the backward's gather: one gather for both), a GPU
  receiving (n - 1) / n of it, and the root unit's embedding and LM head once (FSDP1 keeps the root unsharded after
  the forward). LoRA: 2 B a base parameter (bf16); QLoRA: the decoder linears' NF4 codes (0.5 B) and their double-
  quantised constants (memory_constants.yaml qlora double_quant_constants_bits_per_param), stored as bf16 (quant_storage),
  the norms and the root in bf16. The LoRA adapters' own units and gradients (~80 MB) are left out.

Two ways the link can sit in the step: added to the GPU work (serial: step = work + bytes / link) or hidden behind it
(overlapped: step = max(work, bytes / link)). Each row gives the link rate that would make it hold; one link serves
every row, so the hypothesis whose rates agree is the one the rig ran.

The RTX 4090 rig's two 7B FSDP rows (the same train.py and NCCL path: GeForce, no peer-to-peer; its CPU-offload rows
left out) are split the same way against their DDP twins, and each rig's exposed seconds are fitted as a line in the
bytes (`exposure_fit`): what the step pays a GB says whether the bytes are on its critical path. `rows_at_link` runs the
estimate on the 3090 rows with the link set to a what-if rate (never scored; known-gaps 223).
Run: python benchmarks/fsdp_link_split.py
"""

from __future__ import annotations

import csv
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from trainsizer.models import load_model

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2026o_fsdp_qlora.csv"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks beside it
MEMORY_CONSTANTS = Path(__file__).resolve().parents[1] / "src" / "trainsizer" / "estimate" / "data" / "memory_constants.yaml"
RIG = "fq_3090_7b_"
RIG_4090 = "fq_4090_7b_"  # the same code on two RTX 4090 (no P2P either), a full x16 link each (known-gaps 223)
GB = 1e9


@dataclass(frozen=True)
class Split:
    row: str
    step_s: float
    work_s: float
    received_gb: float
    serial_gb_s: float
    overlapped_gb_s: float | None  # None: the step is no longer than its work, so no link rate makes it link-bound


def step_s(r: dict[str, str]) -> float:
    """Seconds a step: every GPU's micro-batch of full-context samples (the dummy dataset: no padding) over the
    rows' total tokens/s (accumulation 1: global_batch_seqs = GPUs x micro_batch, checked)."""
    gpus, mb = int(r["gpu_count"]), int(r["micro_batch"])
    if int(r["global_batch_seqs"]) != gpus * mb:
        raise ValueError(f"{r['id']}: accumulation is not 1")
    return gpus * mb * int(r["seq_len"]) / float(r["tokens_per_s"])


def received_gb(method: str, gpus: int = 2) -> float:
    """GB a GPU receives a step under FSDP1 FULL_SHARD (module docstring) for Llama-2-7B."""
    m = load_model("llama-2-7b")
    k = yaml.safe_load(MEMORY_CONSTANTS.read_text(encoding="utf-8"))["qlora"]
    lp = m.layer_params(0)  # every Llama-2-7B layer is alike
    linears, norms = m.layers * (lp.attention + lp.mlp_dense), m.layers * lp.norms
    root = m.embedding_params + m.lm_head_params + m.final_norm_params
    if method == "lora":
        layer_bytes = 2.0 * (linears + norms)
    else:
        layer_bytes = linears * (0.5 + k["double_quant_constants_bits_per_param"] / 8.0) + 2.0 * norms
    return (gpus - 1) / gpus * (2.0 * layer_bytes + 2.0 * root) / GB


def _split(rid: str, step: float, work: float, gb: float) -> Split:
    return Split(rid, step, work, gb, gb / (step - work), gb / step if step > work else None)


def splits(rig: str = RIG) -> list[Split]:
    """The 7B FSDP rows of one rig (`rig`: the id prefix), split as the module docstring says; rows with CPU offload
    (the 4090 rig's) are left out: their parameters cross the host link from pinned memory, not from a peer."""
    rows = {r["id"]: r for r in csv.DictReader(ROWS.open(encoding="utf-8")) if r["id"].startswith(rig)}
    gb = {method: received_gb(method) for method in ("lora", "qlora")}
    out = []
    for method, ddp in (("lora", "lora_ddp_bs4"), ("qlora", "qlora_ddp_bs8")):
        d = rows[rig + ddp]
        per_sample = step_s(d) / int(d["micro_batch"])
        for rid, r in rows.items():
            if (r["method"] == method and r["fsdp"] == "full" and r["offload"] == "none" and int(r["micro_batch"]) > 1
                    and r["seq_len"] == d["seq_len"]):
                out.append(_split(rid, step_s(r), per_sample * int(r["micro_batch"]), gb[method]))
    for ctx in ("512", "2048"):
        if f"{rig}lora_ctx{ctx}" not in rows:  # the batch-1 pairs: the 3090 rig's only
            continue
        lo, q = rows[f"{rig}lora_ctx{ctx}"], rows[f"{rig}qlora_ctx{ctx}"]
        link = (gb["lora"] - gb["qlora"]) / (step_s(lo) - step_s(q))  # serial: the common work cancels
        for r in (lo, q):
            work = step_s(r) - gb[r["method"]] / link
            out.append(_split(r["id"], step_s(r), work, gb[r["method"]]))
    return out


def exposure_fit(rig: str) -> tuple[float, float]:
    """(seconds a step that do not scale with the bytes, GB/s) of the least-squares line exposed = a + GB / rate
    through one rig's batched rows (work from their DDP twins; the batch-1 pairs, which assume the serial sum, left
    out). A rate above what the host-staged PCIe path can move (Gen4 x16: ~25 GB/s a direction before NCCL's
    staging) says the bytes are not what the step waits for: the gathers are hidden, and `a` is what is left."""
    batched = [s for s in splits(rig) if "_bs" in s.row]
    gb = np.array([s.received_gb for s in batched])
    exposed = np.array([s.step_s - s.work_s for s in batched])
    slope, a = np.polyfit(gb, exposed, 1)
    return float(a), float(1.0 / slope) if slope > 0 else float("inf")


def rows_at_link(gb_s: float | None) -> list[tuple[str, float, float]]:
    """(row, measured step s, predicted step s) of the 3090 rig's 7B rows with the estimate run on the rows' catalog
    overlay and, where `gb_s` is given, the cards' host-staged link (catalog host_staged_gb_s_per_dir) set to it: a
    what-if that asks how much of the rows' miss the unstated link carries under the estimate's own overlap model.
    Never a scored figure (a rate read off these rows would be fitted on held-out rows; known-gaps 223)."""
    import finetune_heldout as fh  # the benchmarks' own builders, imported here: the split above needs no estimate
    import perf_heldout40 as ph40
    from trainsizer.catalog import load_catalog

    overlays = [DATA / "rtx3090_280w_no_nvlink_overlay.yaml"]
    with tempfile.TemporaryDirectory() as tmp:
        if gb_s is not None:
            what_if = Path(tmp) / "link.yaml"
            what_if.write_text(yaml.safe_dump({
                "title": "what-if: the RTX 3090 rig's host-staged link", "date": "2026-12-06",
                "sources": {"what_if": {"title": "fsdp_link_split.rows_at_link", "date": "2026-12-06"}},
                "accelerators": {"rtx-3090": {"host_staged_gb_s_per_dir": float(gb_s), "sources": ["what_if"]}}}))
            overlays.append(what_if)
        catalog = load_catalog(overlays)
    archs, out = ph40.models(), []
    for r in ph40.fsdp_rows():
        if r["id"].startswith(RIG):
            for c in fh.row_cases(r, catalog, archs):
                if c.metric == "tokens_s" and not c.skipped:
                    tokens = int(r["gpu_count"]) * int(r["micro_batch"]) * int(r["seq_len"])
                    out.append((r["id"], tokens / c.measured, tokens / c.predicted))
    return out


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print(f"\nreceived a step a GPU: LoRA {received_gb('lora'):.2f} GB, QLoRA {received_gb('qlora'):.2f} GB")
    print(f"{'row':32s} {'step s':>7s} {'work s':>7s} {'GB':>6s} {'serial GB/s':>12s} {'overlapped GB/s':>16s}")
    for s in splits() + splits(RIG_4090):
        over = f"{s.overlapped_gb_s:16.2f}" if s.overlapped_gb_s else f"{'(work-bound)':>16s}"
        print(f"{s.row:32s} {s.step_s:7.2f} {s.work_s:7.2f} {s.received_gb:6.2f} {s.serial_gb_s:12.2f} {over}")
    for rig in (RIG, RIG_4090):
        a, rate = exposure_fit(rig)
        print(f"{rig}: exposed = {a:.2f} s + GB / {rate:.1f} GB/s over its batched rows")
    print("\nthe estimate on the 3090 rig's 7B rows, the catalog's link against a what-if 3.2 GB/s (never scored):")
    base, slow = rows_at_link(None), rows_at_link(3.2)
    for (rid, meas, pred), (_, _, pred_slow) in zip(base, slow, strict=True):
        print(f"{rid:32s} measured {meas:6.2f} s  predicted {pred:6.2f} s ({100 * (meas / pred - 1):+6.1f}%)  "
              f"at 3.2 GB/s {pred_slow:6.2f} s ({100 * (meas / pred_slow - 1):+6.1f}%)")
    ser = [s.serial_gb_s for s in splits()]
    ovl = [s.overlapped_gb_s for s in splits() if s.overlapped_gb_s]
    print(f"\nserial: {min(ser):.2f}-{max(ser):.2f} GB/s over {len(ser)} rows (max / min {max(ser) / min(ser):.2f}); "
          f"overlapped: {min(ovl):.2f}-{max(ovl):.2f} GB/s (max / min {max(ovl) / min(ovl):.2f})")


if __name__ == "__main__":
    main()
