"""What relaxing the binding constraint buys, measured: the job is searched again with one thing changed.

- deadline binds: the fastest accelerator without the node / GPU limit (up to the search's largest count),
  and FP8 instead of BF16/FP16 on the accelerators of the fastest options (when they have an FP8 peak);
- memory binds (nothing fits): the first count from the model states' need that fits (plan.next_count), more GPUs of
  the largest-memory accelerator, and LoRA instead of a full fine-tune;
- budget binds: already concrete (the cheapest option's cost; the deadline the budget affords).

Each re-search is the same search on a smaller candidate set, so the answer is the plan's own, not a rule
of thumb; a relaxation that still does not satisfy the job says how close it gets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainsizer.messages import Listing, duration
from trainsizer.plan.explain import money
from trainsizer.plan.messages import msg
from trainsizer.plan.next_count import first_fitting
from trainsizer.plan.schema import Binding, Relaxation
from trainsizer.plan.searched import plan_currency, rank_searched, search_job
from trainsizer.plan.texts import as_msg
from trainsizer.search import Pins, load_config

LORA_DEFAULT_RANK = 16  # spec.LoraSpec default
LORA_DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")  # spec.LoraSpec default


def _with(sr: Any, *, constraints: dict[str, Any] | None = None, training: dict[str, Any] | None = None,
          job: dict[str, Any] | None = None) -> Any:
    """The searched job's base scenario with some constraints, training fields or job fields changed."""
    j = sr.base.job
    updates = dict(job or {})
    if constraints:
        updates["constraints"] = j.constraints.model_copy(update=constraints)
    new_job = j.model_copy(update=updates)
    new_training = replace(sr.base.training, **(training or {}))
    return replace(sr.base, job=new_job, training=new_training)


def _best(scenario: Any, catalog: Any, pins: Pins) -> tuple[Any, Any] | None:
    """(best priced option, whether it satisfies the job) of a re-search; None when nothing fits."""
    sr = search_job(scenario, catalog, pins)
    if not sr.priced:
        return None
    rk = rank_searched(sr, load_config().tie_fraction)
    if rk.satisfied:
        return sr.priced[rk.ranked[0].index], True
    return min(sr.priced, key=lambda p: p.train_days), False  # how close it gets


def _describe(found: tuple[Any, Any] | None, currency: str, lang: str) -> str:
    if found is None:
        return msg("relaxed_nothing_fits", lang)
    p, ok = found
    key = "relaxed_satisfies" if ok else "relaxed_still_short"
    return msg(key, lang, option=p.result.option.key, days=duration(p.train_days),
               cost=money(p.cost, currency, lang))


def _fastest_accelerators(sr: Any, n: int = 3) -> list[str]:
    """Accelerators of the fastest options (priced ones first when the job has a budget to meet)."""
    out: list[str] = []
    needs_price = sr.base.job.goal.budget is not None
    for p in sorted(sr.priced, key=lambda p: (needs_price and p.cost is None, p.train_days)):
        if p.result.option.accelerator.id not in out:
            out.append(p.result.option.accelerator.id)
    return out[:n]


def _deadline(sr: Any, catalog: Any, lang: str, currency: str) -> list[Relaxation]:
    out = []
    accs = _fastest_accelerators(sr)
    c = sr.base.job.constraints
    pins = replace(sr.pins, count=None)
    if c.max_nodes is not None or c.max_gpus is not None or sr.pins.count is not None:
        scen = _with(sr, constraints={"max_nodes": None, "max_gpus": None, "include": tuple(accs[:1])})
        out.append(Relaxation(change=msg("relax_lift_limit", lang, acc=accs[0]),
                              result=_describe(_best(scen, catalog, pins), currency, lang)))
    tr = sr.base.training
    if tr.precision in ("bf16", "fp16") and tr.method != "qlora":
        fp8 = [a for a in accs if catalog.accelerator(a).tflops_dense.get("fp8")]
        if fp8:
            scen = _with(sr, constraints={"include": tuple(fp8)}, training={"precision": "fp8"},
                         job={"precision": "fp8"})
            out.append(Relaxation(change=msg("relax_fp8_on", lang, accs=Listing(fp8)),
                                  result=_describe(_best(scen, catalog, sr.pins), currency, lang)))
    return out


def _memory(sr: Any, catalog: Any, lang: str, currency: str) -> list[Relaxation]:
    out = []
    job = sr.base.job
    big = max((r for r in sr.results), key=lambda r: r.system.memory_gib, default=None)
    if big is not None:
        acc = big.option.accelerator.id
        scen = _with(sr, constraints={"max_nodes": None, "max_gpus": None, "include": (acc,)})
        out.append(Relaxation(change=msg("relax_lift_limit", lang, acc=acc),
                              result=_describe(_best(scen, catalog, replace(sr.pins, count=None)), currency, lang)))
    methods = {"full": ("lora", "qlora"), "cpt": ("lora", "qlora"), "lora": ("qlora",)}.get(job.method, ())
    for method in methods:
        training: dict[str, Any] = {"method": method}
        if job.method not in ("lora", "qlora"):
            training |= {"lora_rank": LORA_DEFAULT_RANK, "lora_targets": LORA_DEFAULT_TARGETS}
        if method == "qlora" and sr.base.training.precision not in ("bf16", "fp16"):
            training["precision"] = "bf16"  # QLoRA computes in 16-bit over the 4-bit base
        scen = _with(sr, training=training, job={"method": method})
        out.append(Relaxation(change=msg("relax_method", lang, method=method, rank=LORA_DEFAULT_RANK,
                                         current=job.method),
                              result=_describe(_best(scen, catalog, sr.pins), currency, lang)))
    return out


def _more_gpus(binding: Binding, sr: Any, catalog: Any, lang: str, currency: str) -> list[Relaxation]:
    """The binding's first row ('more GPUs: >= N') priced at the first count from N up that fits (the node / GPU
    limits lifted, `next_count.first_fitting`); unchanged when none is found within its probes."""
    from trainsizer.plan.explain import _biggest

    big, rows = _biggest(sr.results), list(binding.relaxations)
    if big is None or not rows or binding.needed is None:
        return rows
    scen = _with(sr, constraints={"max_nodes": None, "max_gpus": None, "include": (big.option.accelerator.id,)})
    p = first_fitting(scen, sr, big, int(binding.needed), catalog, load_config().tie_fraction)
    if p is not None:
        ok = p.meets_deadline is not False and p.within_budget is not False
        first = rows[0]
        rows[0] = Relaxation(change=as_msg(first.change_msg) if first.change_msg is not None else first.change,
                             result=_describe((p, ok), currency, lang))
    return rows


def quantify(binding: Binding, sr: Any, catalog: Any, lang: str = "en") -> Binding:
    """`binding` with the relaxations the re-searches measured appended."""
    currency = plan_currency(sr.base)
    if binding.constraint == "deadline":
        extra = _deadline(sr, catalog, lang, currency)
    elif binding.constraint == "memory":
        extra = _memory(sr, catalog, lang, currency)
        binding = binding.model_copy(update={"relaxations": _more_gpus(binding, sr, catalog, lang, currency)})
    else:
        extra = []
    return binding.model_copy(update={"relaxations": [*binding.relaxations, *extra]})
