"""A diagnostic (nothing fitted, no estimate change): one job on one part as successive software releases measured it.

The estimate takes no Megatron-Core / NeMo release (docs/known-gaps.md 336 (e) asked whether it should: one FP8
Nemotron-4 15B job, 64 GPUs, read +21.1 / +3.6 / -19.6% across NeMo 25.02 / 25.04 / 26.02). This lists every job the
held-out and development sets hold at two or more releases on the same part and layout -- NVIDIA's NeMo 25.02 / 25.04 /
25.07 performance pages, Megatron-Bridge's 25.09 / 25.11 / 26.02 / 26.04 / 26.06 tables, and the operator runs of
Together AI (its B200 cluster, NeMo 26.02) -- with each release's measured tokens/s a GPU, the estimate's figure and
its error, and per series the measured spread (largest over smallest) against the predicted one (which moves only
where the FP8 recipe differs: the 25.02 rows ran delayed scaling, the later ones current scaling or MXFP8).

Data: the rows are read from the files the held-out and development benchmarks score them from (FILES), plus
benchmarks/data/release_series_together_llama8b.csv: Together AI's own Llama 3 8B runs of Megatron-Bridge's B200
recipe in the NeMo 26.02 container (togethercomputer/together-dgxc-benchmarking at 337f1d3c, 2026-03-27), the job of
perf_blackwell's 25.11 B200 rows on the cluster that ran the Nemotron-4 15B rows of perf_heldout78 (4), scored here
only. Predictions: accuracy_bands.collect() for held-out rows, perf_blackwell.cases() for the development rows,
perf_blackwell.job for the two Together Llama rows (the 25.11 recipe's job with the 26.02 container's cuDNN stated:
the one release input the estimate takes, strategy.cudnn_release). Each release's container cuDNN is printed beside
it (CONTAINER_CUDNN, from Megatron-Bridge's software-versions page).

Also printed: the Nemotron-4 15B against Llama 3 8B on the same cluster and container (Together, 26.02) and on
NVIDIA's pages, and each Together row's model TFLOP/s a GPU over B200's measured BF16 MAMF (the share of its step the
model's FLOPs would take at the best GEMM rate measured on the part).

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/release_series.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
TOGETHER_LLAMA = DATA / "release_series_together_llama8b.csv"
FILES = ("heldout_pretrain.csv", "heldout_2026n_nemo2507_gb200.csv", "heldout_2026m_mbridge2509.csv",
         "megatron_bridge_perf.csv", "heldout_2026b.csv", "heldout_2026c_mbridge.csv", "megatron_bridge_26_perf.csv",
         "heldout_2027z_together_b200.csv", TOGETHER_LLAMA.name)
# B200's BF16 MAMF, 1,745 TFLOP/s: Stas Bekman's maximum achievable matmul FLOPs table (ml-engineering
# compute/accelerator/README.md, as of 2026-08), the figure perf_constants.yaml's efficiency_max gb200 is derived from
B200_BF16_MAMF_TFLOPS = 1745.0


@dataclass(frozen=True)
class Series:
    """One job at several releases: its name, the row ids in release order, whether its rows may sit on different
    parts (the one Nemotron-4 series: no part holds it at three releases)."""

    name: str
    ids: tuple[str, ...]
    parts_differ: bool = False


SERIES = (
    Series("Llama 3 8B FP8, 8 B200, GBS 128, MBS 2, TP 1",
           ("nemo_25.02_b200_llama3_8b_fp8_8gpu", "mbridge_25.09_b200_llama3_8b_fp8-cs_8gpu",
            "mbridge_25.11_b200_llama3_8b_fp8-cs_8gpu", "together_26.02_b200_llama3_8b_fp8-cs_8gpu")),
    Series("Llama 3 8B FP8, 8 GB200, GBS 128, MBS 2, TP 1",
           ("nemo_25.04_gb200_llama3_8b_fp8_8gpu", "nemo_25.07_gb200_llama3_8b_fp8cs_8gpu",
            "mbridge_25.09_gb200_llama3_8b_fp8-cs_8gpu", "mbridge_25.11_gb200_llama3_8b_fp8-cs_8gpu")),
    Series("Llama 3.1 405B FP8, 128 B200, TP 4 PP 8 CP 2 VP 8, GBS 64",
           ("nemo_25.02_b200_llama3_405b_fp8_128gpu", "mbridge_25.09_b200_llama3.1_405b_fp8-cs_128gpu",
            "mbridge_25.11_b200_llama3.1_405b_fp8-cs_128gpu")),
    Series("Llama 3.1 405B FP8, 128 GB200, TP 4 PP 8 CP 2 VP 8, GBS 64",
           ("nemo_25.04_gb200_llama3_405b_fp8_128gpu", "nemo_25.07_gb200_llama31_405b_mxfp8_128gpu",
            "mbridge_25.09_gb200_llama3.1_405b_fp8-mx_128gpu")),
    Series("Llama 3.1 405B FP8-CS, 256 GB200, TP 4 PP 16 VP 4, GBS 1536",
           ("mbridge_25.11_gb200_llama3.1_405b_fp8-cs_256gpu", "mbridge_26.02_gb200_llama31_405b_fp8-cs_256gpu",
            "mbridge_26.02.01_gb200_llama31_405b_fp8-cs_256gpu", "mbridge_26.04_gb200_llama3.1_405b_fp8-cs_256gpu",
            "mbridge_26.04.01_gb200_llama31_405b_fp8-cs_256gpu", "mbridge_26.06_gb200_llama3.1_405b_fp8-cs_256gpu")),
    Series("Llama 3 70B FP8, 64 GB200, FSDP, GBS 128, MBS 1",
           ("nemo_25.04_gb200_llama3_70b_fp8_64gpu", "nemo_25.07_gb200_llama3_70b_fp8cs_64gpu")),
    Series("Llama 3 70B FP8-CS, 64 GB200, FSDP, GBS 256, MBS 2",
           ("mbridge_25.11_gb200_llama3_70b_fp8-cs_64gpu", "mbridge_26.02_gb200_llama3_70b_fp8-cs_64gpu",
            "mbridge_26.02.01_gb200_llama3_70b_fp8-cs_64gpu", "mbridge_26.04_gb200_llama3_70b_fp8-cs_64gpu",
            "mbridge_26.04.01_gb200_llama3_70b_fp8-cs_64gpu")),
    Series("Llama 3 70B FP8-MX, 64 GB200, TP 2 PP 4 VP 5, GBS 256",
           ("mbridge_26.02_gb200_llama3_70b_fp8-mx_64gpu", "mbridge_26.02.01_gb200_llama3_70b_fp8-mx_64gpu",
            "mbridge_26.04_gb200_llama3_70b_fp8-mx_64gpu", "mbridge_26.04.01_gb200_llama3_70b_fp8-mx_64gpu")),
    Series("Nemotron-4 15B FP8, 64 GPUs, GBS 256, MBS 2, TP 1 (B200 / GB200 / B200)",
           ("nemo_25.02_b200_nemotron4_15b_fp8_64gpu", "nemo_25.04_gb200_nemotron4_15b_fp8_64gpu",
            "heldout_2027z_together_b200_nemotron4_15b_fp8_tp1_gbs256_64gpu"), parts_differ=True),
)
# the same cluster and container for two models (Together AI's B200, NeMo 26.02; NVIDIA's 25.02 B200 / 25.04 GB200
# pages): (label, Llama 3 8B row, Nemotron-4 15B row)
MODEL_PAIRS = (
    ("Together B200, NeMo 26.02, BF16", "together_26.02_b200_llama3_8b_bf16_8gpu",
     "heldout_2027z_together_b200_nemotron4_15b_bf16_tp1_gbs256_64gpu"),
    ("Together B200, NeMo 26.02, FP8 CS", "together_26.02_b200_llama3_8b_fp8-cs_8gpu",
     "heldout_2027z_together_b200_nemotron4_15b_fp8_tp1_gbs256_64gpu"),
    ("NVIDIA NeMo 25.02 page, B200, FP8", "nemo_25.02_b200_llama3_8b_fp8_8gpu",
     "nemo_25.02_b200_nemotron4_15b_fp8_64gpu"),
    ("NVIDIA NeMo 25.04 page, GB200, FP8", "nemo_25.04_gb200_llama3_8b_fp8_8gpu",
     "nemo_25.04_gb200_nemotron4_15b_fp8_64gpu"),
)
# Together's BF16 rows whose printed model TFLOP/s a GPU is held, 64 / 8 GPUs: (row id, TFLOP/s; the Nemotron-4
# figure from REPORT_BF16.md 'Job 81054', the Llama one from release_series_together_llama8b.csv)
TOGETHER_BF16_TFLOPS = (("heldout_2027z_together_b200_nemotron4_15b_bf16_tp1_gbs256_64gpu", 1570.4),
                        ("together_26.02_b200_llama3_8b_bf16_8gpu", 1183.5))
# the cuDNN each NeMo Framework container ships (NVIDIA-NeMo/Megatron-Bridge docs/releases/software-versions.md at v0.5.1;
# the 26.02 entry already at v0.3.0, 21b02e0cf, 2026-02-26); 25.11 is the release the Blackwell attention rates are
# derived at (perf_constants.yaml attention.cudnn_release_speedup); earlier containers are not listed there
CONTAINER_CUDNN = {"25.09": "9.11.0", "25.11": "9.13.1", "26.02": "9.18.0", "26.04": "9.20.0", "26.06": "9.21.1"}
RECIPES = {"BF16": "bf16", "FP8-CS": "fp8/tensorwise", "FP8-MX": "fp8/mxfp8", "NVFP4": "fp8/nvfp4"}
JOB_FIELDS = ("gpus", "gbs", "mbs", "seq", "tp", "pp", "cp", "vpp", "ep", "fsdp")


def _whole(value: str, floor: int = 0) -> int:
    return max(int(float(value or 0)), floor)


def normalised(r: dict[str, str]) -> dict[str, object]:
    """A row of either column set (heldout_pretrain's: accelerator, precision + fp8_recipe, fsdp in strategy_extra;
    the Megatron-Bridge tables': system, FP8-CS / FP8-MX, an fsdp column) as its release, part, recipe, job fields
    (JOB_FIELDS; VP 0 / n/a read as 1) and measured tokens/s a GPU."""
    if "system" in r:
        part, recipe = r["system"].lower(), RECIPES[r["precision"]]
        fsdp, measured = r["fsdp"] == "1", float(r["tokens_per_sec_per_gpu"])
        release = r.get("release") or r["id"].split("_")[1]
    else:
        part = r["accelerator"]
        recipe = r["precision"] + (f"/{r['fp8_recipe']}" if r["fp8_recipe"] else "")
        fsdp, measured = "fsdp=full" in r["strategy_extra"], float(r["value"])
        release = "together 26.02" if "together" in r["id"] else r["id"].split("_")[1]
    job = {"gpus": _whole(r["gpu_count"]), "gbs": _whole(r["global_batch_seqs"]), "mbs": _whole(r["micro_batch"]),
           "seq": _whole(r["seq_len"]), "tp": _whole(r["tp"], 1), "pp": _whole(r["pp"], 1), "cp": _whole(r["cp"], 1),
           "vpp": _whole(r["vpp"], 1), "ep": _whole(r["ep"], 1), "fsdp": fsdp}
    return {"id": r["id"], "release": release, "part": part, "recipe": recipe, "measured": measured, **job}


def rows() -> dict[str, dict[str, object]]:
    """Every row a series or pair names, by id, normalised (the first file holding an id wins)."""
    wanted = {i for s in SERIES for i in s.ids} | {i for _, a, b in MODEL_PAIRS for i in (a, b)}
    out: dict[str, dict[str, object]] = {}
    for name in FILES:
        for r in csv.DictReader((DATA / name).open(encoding="utf-8")):
            if r["id"] in wanted and r["id"] not in out:
                out[r["id"]] = normalised(r)
    return out


def job_differences(series: Series, held: dict[str, dict[str, object]]) -> list[str]:
    """The job fields (and the part, unless the series says its parts differ) on which a series' rows disagree:
    empty for a series of one job."""
    keys = JOB_FIELDS if series.parts_differ else ("part", *JOB_FIELDS)
    return [k for k in keys if len({held[i][k] for i in series.ids}) > 1]


def together_llama_predictions(cudnn: dict[str, str] | None = None) -> dict[str, float]:
    """The estimate's tokens/s a GPU for Together's Llama 3 8B rows, as perf_blackwell builds its 25.11 rows' jobs, with
    the container's cuDNN the rows state (the one release input the jobs differ in), or `cudnn`'s by row id ("" =
    unstated)."""
    import perf_blackwell as pb
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    cat, out = load_catalog(), {}
    for r in csv.DictReader(TOGETHER_LLAMA.open(encoding="utf-8")):
        j = pb.job(r)
        j["strategy"]["cudnn_release"] = (cudnn or {}).get(r["id"], r["cudnn_release"]) or None
        sc = resolve_job(j, cat)
        o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        out[r["id"]] = sc.training.tokens_per_step / float(np.asarray(o["step_s"]).reshape(-1)[0]) / sc.system.gpus
    return out


def predictions() -> dict[str, float]:
    """The estimate's figure for every row id the development and held-out sets score, and the Together Llama rows."""
    import accuracy_bands as ab
    import perf_blackwell as pb

    out = {r.row_id: r.predicted for r in ab.collect()}
    out |= {rid: pred for rid, _, _, pred in pb.cases()}
    return out | together_llama_predictions()


def spread(values: list[float]) -> float:
    """Largest over smallest."""
    return max(values) / min(values)


def nvidia_spreads(held: dict[str, dict[str, object]]) -> list[float]:
    """The measured spread of NVIDIA's own figures of one job on one part under one FP8 recipe, NeMo 25.04 and later
    (the operator's rows and the first Blackwell release, 25.02, left out), for every such group of two or more."""
    groups: dict[tuple[str, str], list[float]] = {}
    for s in SERIES:
        for i in s.ids:
            if not s.parts_differ and "together" not in i and not i.startswith("nemo_25.02"):
                groups.setdefault((s.name, str(held[i]["recipe"])), []).append(float(held[i]["measured"]))
    return [spread(v) for v in groups.values() if len(v) > 1]


def series_lines(series: Series, held: dict[str, dict[str, object]], pred: dict[str, float]) -> list[str]:
    diff = job_differences(series, held)
    lines = [f"{series.name}" + (f"  [rows differ in {', '.join(diff)}]" if diff else "")]
    first = float(held[series.ids[0]]["measured"])
    for i in series.ids:
        h = held[i]
        m, p = float(h["measured"]), pred[i]
        cudnn = CONTAINER_CUDNN.get(str(h["release"]).split()[-1][:5], "-")
        lines.append(f"  {str(h['release']):14} {str(h['part']):6} {str(h['recipe']):15} cuDNN {cudnn:6} measured {m:8.0f} "
                     f"({m / first:5.3f} of the first)  predicted {p:8.0f} ({(p / m - 1) * 100:+6.1f}%)")
    ms, ps = [float(held[i]["measured"]) for i in series.ids], [pred[i] for i in series.ids]
    lines.append(f"  spread measured {spread(ms):.3f}, predicted {spread(ps):.3f}")
    return lines


def pair_lines(held: dict[str, dict[str, object]], pred: dict[str, float]) -> list[str]:
    lines = ["Llama 3 8B against Nemotron-4 15B on one cluster and release (error %, the 15B's less the 8B's):"]
    for label, llama, nemo in MODEL_PAIRS:
        el, en = (pred[i] / float(held[i]["measured"]) * 100 - 100 for i in (llama, nemo))
        lines.append(f"  {label:36} Llama 3 8B {el:+6.1f}  Nemotron-4 15B {en:+6.1f}  difference {en - el:+6.1f}")
    return lines


def mamf_share(tflops: float) -> float:
    """A BF16 run's model TFLOP/s a GPU over B200's BF16 MAMF: the share of its step its model FLOPs take at the best
    GEMM rate measured on the part (the rest of the step is all that is left for attention's slower kernels, the
    element-wise passes, the optimizer and any exposed communication)."""
    return tflops / B200_BF16_MAMF_TFLOPS


def mamf_lines() -> list[str]:
    lines = [f"Together's BF16 model TFLOP/s a GPU over B200's measured BF16 MAMF ({B200_BF16_MAMF_TFLOPS:.0f}): the share "
             "of the step its model FLOPs take at that rate"]
    lines += [f"  {rid:66} {tf:7.1f}  {mamf_share(tf):.2f}" for rid, tf in TOGETHER_BF16_TFLOPS]
    return lines


def main() -> None:
    held, pred = rows(), predictions()
    for s in SERIES:
        print("\n".join(series_lines(s, held, pred)))
    later = nvidia_spreads(held)
    print(f"NVIDIA's own figures of one job, part and FP8 recipe, NeMo 25.04 and later: measured spread "
          f"{min(later):.3f}-{max(later):.3f} over {len(later)} groups")
    print("\n".join(pair_lines(held, pred)))
    print("\n".join(mamf_lines()))


if __name__ == "__main__":
    main()
