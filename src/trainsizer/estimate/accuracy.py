"""How far off the estimate is likely to be: the job's class and the accuracy band measured for that class on
held-out published runs (estimate/data/accuracy_bands.yaml, written by benchmarks/accuracy_bands.py).

A class is what the held-out errors show matters (docs/validation.md "Accuracy bands"): the training stack family
(the framework the estimate assumed), the model kind (dense / MoE / hybrid Mamba), the GPU family (the catalog
part's architecture) and the scale (one host, one scale-up domain, more). `job_class` is the one classifier: the
estimate calls it on a user's job, the band benchmark on each published run's job.

A class with fewer than the file's `min_rows` held-out rows falls back to a coarser one (scale dropped first, then
the GPU family); the coarsest is the stack family and model kind (MoE and dense jobs err differently: an MoE row does
not speak for a dense job), and with too few rows there the job has no band, and says so.

The estimate's own figures do not move: the band is reported beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

# the framework the estimate assumed (estimate.framework) -> the stack family whose held-out runs it is judged on:
# Megatron-Core / NeMo / Megatron-Bridge (and Megatron-LM, DualPipe), PyTorch-native FSDP2 stacks (torchtitan,
# TorchAO, NeMo AutoModel, OLMo-core), DeepSpeed ZeRO, and the fine-tuning stacks (HF Trainer / PEFT / TRL, Unsloth,
# LLaMA-Factory, torchtune)
STACK_FAMILY = {"megatron-core": "megatron", "megatron": "megatron", "deepseek-dualpipe": "megatron",
                "torchtitan": "pytorch", "fsdp": "pytorch", "deepspeed": "deepspeed", "hf": "hf", "torchtune": "hf"}
# the catalog's accelerator `arch` begins with the architecture's name (accelerators.yaml): its first word, lowered
GPU_FAMILIES = ("volta", "ampere", "ada", "hopper", "blackwell", "rubin", "cdna")
KINDS = ("dense", "moe", "hybrid")
SCALES = ("node", "domain", "multi")  # one host; more hosts inside one scale-up domain (NVL72); beyond one domain
QUANTITIES = ("time", "memory")  # tokens/s (signed: + = predicted too fast) and peak memory (+ = predicted too large)


@dataclass(frozen=True)
class JobClass:
    stack: str
    kind: str
    gpu: str
    scale: str

    def keys(self) -> tuple[str, ...]:
        """Finest first: the class names a band may be stored under (stack/kind/gpu/scale, stack/kind/gpu,
        stack/kind)."""
        parts = (self.stack, self.kind, self.gpu, self.scale)
        return tuple("/".join(parts[:n]) for n in range(4, 1, -1))


def gpu_family(arch: str) -> str:
    """The GPU family of a catalog part's `arch` text ("Hopper (GH100)" -> hopper); "other" where none is known."""
    head = arch.split()[0].lower() if arch.strip() else ""
    return head if head in GPU_FAMILIES else "other"


def model_kind(model: Any) -> str:
    """One of KINDS: hybrid (Mamba-2 / attention, MoE or not), moe, or dense."""
    return "hybrid" if model.is_hybrid else "moe" if model.is_moe else "dense"


def job_scale(gpus: int, gpus_per_node: int, domain_gpus: int) -> str:
    if gpus <= gpus_per_node:
        return "node"
    return "domain" if gpus <= domain_gpus else "multi"


def job_class(model: Any, training: Any, system: Any, strategy: Any, arch: str) -> JobClass:
    """The class of one job (scalar strategy): `arch` is the catalog accelerator's architecture text."""
    from trainsizer.estimate.framework import resolve

    framework = resolve(strategy.framework, strategy, training.method in ("pretrain", "cpt"))["assumed"]
    return JobClass(STACK_FAMILY[framework], model_kind(model), gpu_family(arch),
                    job_scale(system.gpus, system.gpus_per_node, system.domain_gpus))


@lru_cache(maxsize=1)
def bands_file() -> dict[str, Any]:
    """estimate/data/accuracy_bands.yaml as written by benchmarks/accuracy_bands.py."""
    import yaml

    text = resources.files("trainsizer.estimate").joinpath("data/accuracy_bands.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def band_for(cls: JobClass, quantity: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """{"matched" (the class whose band is given, or None), "min_rows", "n", and the band's figures} for `quantity`
    ("time" or "memory"); without a band of enough rows for the stack family and model kind, n is their count and
    no figure is given."""
    data = data or bands_file()
    classes = data["bands"][quantity]
    out: dict[str, Any] = {"min_rows": data["min_rows"]}
    for key in cls.keys():
        if key in classes:
            return out | {"matched": key} | classes[key]
    return out | {"matched": None, "n": data["kind_rows"][quantity].get(cls.keys()[-1], 0)}


def time_range(band: dict[str, Any], tokens_per_s: float, train_days: float) -> dict[str, Any]:
    """What the band's signed errors (10th..90th percentile; + = predicted too fast) make of the estimate: the
    tokens/s and days a run of this class would likely show. {} without a band."""
    if band.get("matched") is None:
        return {}
    fast, slow = band["signed_p10_pct"] / 100.0, band["signed_p90_pct"] / 100.0
    return {"tokens_per_s": [tokens_per_s / (1.0 + slow), tokens_per_s / (1.0 + fast)],
            "train_days": [train_days * (1.0 + fast), train_days * (1.0 + slow)]}


def memory_range(band: dict[str, Any], per_gpu_gib: float) -> dict[str, Any]:
    """The peak GiB a run of this class would likely show, from the band's 10th..90th percentile (+ = predicted too
    large). {} without a band."""
    if band.get("matched") is None:
        return {}
    small, large = band["signed_p10_pct"] / 100.0, band["signed_p90_pct"] / 100.0
    return {"per_gpu_gib": [per_gpu_gib / (1.0 + large), per_gpu_gib / (1.0 + small)]}
