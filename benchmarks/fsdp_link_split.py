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
every row, so the hypothesis whose rates agree is the one the rig ran. Run: python benchmarks/fsdp_link_split.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import yaml

from trainsizer.models import load_model

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2026o_fsdp_qlora.csv"
MEMORY_CONSTANTS = Path(__file__).resolve().parents[1] / "src" / "trainsizer" / "estimate" / "data" / "memory_constants.yaml"
RIG = "fq_3090_7b_"
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


def splits() -> list[Split]:
    rows = {r["id"]: r for r in csv.DictReader(ROWS.open(encoding="utf-8")) if r["id"].startswith(RIG)}
    gb = {method: received_gb(method) for method in ("lora", "qlora")}
    out = []
    for method, ddp in (("lora", "lora_ddp_bs4"), ("qlora", "qlora_ddp_bs8")):
        d = rows[RIG + ddp]
        per_sample = step_s(d) / int(d["micro_batch"])
        for rid, r in rows.items():
            if r["method"] == method and r["fsdp"] == "full" and int(r["micro_batch"]) > 1 and r["seq_len"] == d["seq_len"]:
                out.append(_split(rid, step_s(r), per_sample * int(r["micro_batch"]), gb[method]))
    for ctx in ("512", "2048"):
        lo, q = rows[f"{RIG}lora_ctx{ctx}"], rows[f"{RIG}qlora_ctx{ctx}"]
        link = (gb["lora"] - gb["qlora"]) / (step_s(lo) - step_s(q))  # serial: the common work cancels
        for r in (lo, q):
            work = step_s(r) - gb[r["method"]] / link
            out.append(_split(r["id"], step_s(r), work, gb[r["method"]]))
    return out


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print(f"\nreceived a step a GPU: LoRA {received_gb('lora'):.2f} GB, QLoRA {received_gb('qlora'):.2f} GB")
    print(f"{'row':32s} {'step s':>7s} {'work s':>7s} {'GB':>6s} {'serial GB/s':>12s} {'overlapped GB/s':>16s}")
    for s in splits():
        over = f"{s.overlapped_gb_s:16.2f}" if s.overlapped_gb_s else f"{'(work-bound)':>16s}"
        print(f"{s.row:32s} {s.step_s:7.2f} {s.work_s:7.2f} {s.received_gb:6.2f} {s.serial_gb_s:12.2f} {over}")
    ser = [s.serial_gb_s for s in splits()]
    ovl = [s.overlapped_gb_s for s in splits() if s.overlapped_gb_s]
    print(f"\nserial: {min(ser):.2f}-{max(ser):.2f} GB/s over {len(ser)} rows (max / min {max(ser) / min(ser):.2f}); "
          f"overlapped: {min(ovl):.2f}-{max(ovl):.2f} GB/s (max / min {max(ovl) / min(ovl):.2f})")


if __name__ == "__main__":
    main()
