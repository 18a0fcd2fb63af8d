"""Tables for `trainsizer estimate`, drawn from the same dict that `--json` prints.

Every label comes from the message catalogues and every number is formatted for the reader's language
(`render.numbers`); the step-time breakdown sits under the step time, in seconds and as a share of it."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.evaluate import capacity_note
from trainsizer.layout_text import layout_in
from trainsizer.messages import duration, tr
from trainsizer.render import cost_basis
from trainsizer.render.i18n import note_label, t
from trainsizer.render.numbers import fmt_count, fmt_gib, fmt_num, fmt_share, money

TIME_ROWS = ("tokens_per_s", "model_tflops_per_gpu", "mfu", "hardware_tflops_per_gpu", "hfu", "train_days",
             "gpu_hours")
SHARES = ("mfu", "hfu")


def _kv_table(title: str, rows: list[tuple[str, str]], lang: str) -> Table:
    table = Table(title=title)
    table.add_column(t("item", lang))
    table.add_column(t("value", lang), justify="right")
    for k, v in rows:
        table.add_row(k, v)
    return table


def _init_reserved_rows(mem: dict[str, Any], L: str) -> list[tuple[str, str]]:
    """The caching allocator's reserved bytes after the model's init (torchtune 0.1's QLoRA, estimate.nf4_init), as a
    row where they set the reserved peak: above the allocated total plus the steps' allocator growth."""
    init = mem.get("init_reserved_gib") or 0.0
    if init <= mem["per_gpu_gib"] + (mem.get("allocator_growth_gib") or 0.0):
        return []
    return [(t("init_reserved", L), fmt_gib(init, L))]


def _zero_pool_rows(mem: dict[str, Any], L: str) -> list[tuple[str, str]]:
    """What DeepSpeed ZeRO's caching-allocator pools reserve beyond the peak (estimate.zero_pools, known-gaps 234), as
    a row where there are any: what torch.cuda.max_memory_reserved reads above the allocated peak, not needed to fit."""
    pools = mem.get("zero_pool_gib") or 0.0
    return [(t("zero_pool", L), fmt_gib(pools, L))] if pools > 0 else []


def _memory(con: Console, mem: dict[str, Any], L: str) -> None:
    rows = [(t(k, L), fmt_gib(v, L)) for k, v in mem["breakdown_gib"].items()]
    rows += [(t("total", L), fmt_gib(mem["per_gpu_gib"], L)), (t("capacity", L), fmt_gib(mem["capacity_gib"], L)),
             (t("headroom", L), fmt_gib(mem["headroom_gib"], L))]
    rows += _init_reserved_rows(mem, L)
    rows += _zero_pool_rows(mem, L)
    con.print(_kv_table(t("memory_title", L) + t("paren", L).format(text="GiB"), rows, L))
    con.print(f"{t('worst_gpu', L)}{t('colon', L)}{tr(mem.get('worst_gpu', ''), L)}")
    basis = capacity_note(mem.get("capacity_basis"))
    if basis is not None:
        con.print(tr(basis, L))
    verdict = t("fits", L) if mem["fits"] else t("does_not_fit", L)
    con.print(f"[{'green' if mem['fits'] else 'red'}]{verdict}[/]")


def _time_value(key: str, value: Any, L: str) -> str:
    if key in SHARES:
        return fmt_share(value, L)
    if key == "train_days" and isinstance(value, int | float) and math.isfinite(value):
        return duration(value).tr(L)  # hours / minutes under a day
    return fmt_num(value, L)


def _seconds(seconds: float, L: str) -> str:
    """A part of the step: in ms below 10 ms ('0.608 ms', not '6.08E-4 s')."""
    return f"{fmt_num(seconds * 1000, L)} ms" if abs(seconds) < 0.01 else f"{fmt_num(seconds, L)} s"


def _time(con: Console, tm: dict[str, Any], L: str) -> None:
    step = tm.get("step_s")
    rows = [(t("step_s", L), fmt_num(step, L))]
    for key, seconds in tm.get("breakdown_s", {}).items():
        if seconds:
            share = fmt_share(seconds / step, L) if step else "—"
            rows.append((f"  {t('breakdown', L)}{t('colon', L)}{t('bd_' + key, L)}",
                         _seconds(seconds, L) + t("paren", L).format(text=share)))
    rows += [(t(k, L), _time_value(k, tm[k], L)) for k in TIME_ROWS if k in tm]
    con.print(_kv_table(t("time_title", L), rows, L))


def accuracy_figures(acc: dict[str, Any], L: str) -> str:
    """The held-out band of the job's class (evaluate.accuracy) in words: MAPE, median, n and class, a coarser
    class's note and the peak-memory band; a class whose stack family has too few held-out runs says so and gives
    no figure. The CLI's accuracy line and the report's summary both write it."""
    band = acc["time"]
    if band.get("matched") is None:
        return t("accuracy_none", L).format(cls=acc["class"], n=fmt_count(band["n"], L), min=band["min_rows"])
    text = t("accuracy_figures", L).format(cls=band["matched"], n=fmt_count(band["n"], L),
                                           mape=f"{band['mape_pct']:.1f}%", median=f"{band['median_pct']:+.1f}%")
    if band["matched"] != acc["class"]:
        text += t("accuracy_coarser", L).format(cls=acc["class"], min=band["min_rows"])
    mem = acc.get("memory") or {}
    if mem.get("matched") is not None:
        text += t("accuracy_memory", L).format(n=fmt_count(mem["n"], L), mape=f"{mem['mape_pct']:.1f}%",
                                               median=f"{mem['median_pct']:+.1f}%")
    return text


def accuracy_label(L: str) -> str:
    return t("accuracy_label", L)


def accuracy_line(acc: dict[str, Any], L: str) -> str:
    """One line: `accuracy_figures`, with the days the band's 10th..90th percentile imply."""
    line = accuracy_label(L) + t("colon", L) + accuracy_figures(acc, L)
    days = (acc["time"].get("range") or {}).get("train_days")
    if acc["time"].get("matched") is not None and days:
        line += t("accuracy_days", L).format(low=_time_value("train_days", days[0], L),
                                             high=_time_value("train_days", days[1], L))
    return line


# the goal's sums of money, written in the budget's currency (its own row would repeat it: "budget currency USD")
GOAL_MONEY = ("budget", "cost_mid")


def _goal_value(key: str, value: Any, L: str, currency: str | None = None) -> str:
    if key in GOAL_MONEY and currency:
        return money(value, currency, L)
    if key == "cost_basis":
        return cost_basis.basis_label(cost_basis.SCORE_BASIS.get(value, value), L)
    if isinstance(value, bool):
        return f"✓ {t('yes', L)}" if value else f"✗ {t('no', L)}"
    if key == "within_budget" and value is None:  # no price in the budget's currency: a note says why
        return t("goal_not_checked", L)
    return fmt_num(value, L)


def _cost_rows(result: dict[str, Any], L: str) -> list[tuple[str, str]]:
    cost = result.get("cost") or {}
    rows = []
    for mode in ("rent", "buy"):
        block = cost.get(mode)
        if block:
            # a purchase at full price (what the plan ranks and the budget is checked against), then the
            # job's amortised share, each under its basis (render.cost_basis)
            shown = [cost_basis.rent(result)] if mode == "rent" else [cost_basis.buy_full(result),
                                                                      cost_basis.buy_amortised(result)]
            for c in (c for c in shown if c is not None):
                label = c.label(L)
                typical = t("paren", L).format(text=f"{t('typical', L)} {fmt_num(c.mid, L)}")
                # one price (a single quote: low = high) is one figure, not "409,702 – 409,702 (typical 409,702)"
                shown_cost = fmt_num(c.mid, L) if fmt_num(c.low, L) == fmt_num(c.high, L) else \
                    f"{fmt_num(c.low, L)} – {fmt_num(c.high, L)}{typical}"
                rows.append((f"{label[:1].upper()}{label[1:]}" + t("paren", L).format(text=c.currency), shown_cost))
            if block.get("date"):  # how old the price is; a year or more gets a warning
                rows.append((f"  {t('price_date', L)}", cost_basis.price_age(
                    block["date"], block.get("age_days", "?"), bool(block.get("stale")), bool(block.get("projection")), L)))
    energy = result.get("energy") or {}
    if energy:
        rows.append((t("energy_kwh", L), fmt_num(energy.get("kwh"), L)))
        rows.append((t("avg_power_kw", L), fmt_num(energy.get("avg_power_kw"), L)))
    goal = result.get("goal") or {}
    for k, v in goal.items():
        if k != "budget_currency":
            rows.append((f"{t('goal', L)}{t('colon', L)}{t('goal_' + k, L)}",
                         _goal_value(k, v, L, goal.get("budget_currency"))))
    return rows


def stack_label(fw: dict[str, Any], lang: str) -> str:
    """The software stack a framework style stands for (render/data/i18n.yaml `stack_<style>`; the English
    text is the one in estimate/data/framework_assumptions.yaml, tests/render/test_messages.py checks)."""
    return t(f"stack_{fw['assumed']}", lang)


def _configuration(con: Console, job: dict[str, Any], L: str) -> None:
    """What was estimated: the hardware and the layout (the job's own, or the one the search chose for it)."""
    hw, strategy = job.get("hardware"), job.get("strategy")
    if hw:
        one = "_one" if hw["nodes"] == 1 else ""  # "(one node)", not "(1 nodes x 1 GPUs)"
        if hw.get("scaleup_domains"):  # NVL72: trays in racks, not nodes
            one = "_domains" + ("_one" if hw["scaleup_domains"] == 1 else "")
        where = t("estimate_hardware_line" + one, L).format(
            accelerator=hw["accelerator"], gpus=hw["gpus"], nodes=hw["nodes"], per_node=hw["gpus_per_node"],
            domains=hw.get("scaleup_domains"), domain=hw.get("scaleup_domain_gpus"))
        network = (hw.get("network") or {}).get("id")
        con.print(f"{t('plan_option', L)}{t('colon', L)}{where}" + (f"{t('list_sep', L)}{network}" if network else ""))
    if strategy:
        con.print(f"{t('plan_layout', L)}{t('colon', L)}{layout_in(strategy, L)}")


def _moe_fusion_text(fusion: dict[str, Any], L: str) -> str:
    """'permutation fused, router unfused (stated)' for framework.moe_fusion: each part fused or not, and whether the job
    said so or the stack's default was taken."""
    parts = []
    for part in ("permute", "router"):
        p = fusion[part]
        state = t("moe_fusion_fused" if p["assumed"] else "moe_fusion_unfused", L)
        why = t("moe_fusion_stated" if p["requested"] is not None else "moe_fusion_default", L)
        parts.append(f"{t('moe_fusion_' + part, L)}{state}{why}")  # the part's name carries its own spacing
    return t("list_sep", L).join(parts)


def _fsdp_no_sync_line(con: Console, sync: dict[str, Any] | None, L: str) -> None:
    """Whether FSDP's gradient sync runs between a step's micro-batches (evaluate's framework block, fsdp1_no_sync.
    assumed) and, left unstated, where the answer comes from (docs/known-gaps.md 250 (a))."""
    if not sync:
        return
    state = f"held_fsdp{sync['fsdp_version'] or 2}" if sync["assumed"] else "synced"
    why = t(sync["reason"], L) if sync.get("reason") else ""
    con.print(f"{t('fsdp_no_sync', L)}{t('colon', L)}{t('fsdp_no_sync_' + state, L)}{why}")


def print_estimate(result: dict[str, Any], lang: str, console: Console | None = None) -> None:
    con = console or Console(soft_wrap=False)
    L = lang
    job = result.get("job", {})
    con.print(f"[bold]{job.get('name', '')}[/bold]")
    _configuration(con, job, L)
    fw = result.get("framework")
    if fw:
        why = t("framework_auto_why", L).format(reason=t(fw["reason"], L)) if fw.get("reason") else ""
        con.print(f"{t('framework', L)}{t('colon', L)}{fw['assumed']} — {stack_label(fw, L)}{why}")
        disp = fw.get("moe_dispatcher")
        if disp:
            auto = t("moe_dispatcher_auto_why", L) if disp["requested"] == "auto" else ""
            con.print(f"{t('moe_dispatcher', L)}{t('colon', L)}{t('moe_dispatcher_' + disp['assumed'], L)}{auto}")
        experts = fw.get("experts_implementation")
        if experts:
            default = "experts_implementation_default" + ("_dense_all" if experts["assumed"] == "dense_all" else "")
            unstated = t(default, L) if experts["requested"] is None else ""
            con.print(f"{t('experts_implementation', L)}{t('colon', L)}"
                      f"{t('experts_implementation_' + experts['assumed'], L)}{unstated}")
        fusion = fw.get("moe_fusion")
        if fusion:
            con.print(f"{t('moe_fusion', L)}{t('colon', L)}{_moe_fusion_text(fusion, L)}")
        fetch = fw.get("zero3_expert_fetch")
        if fetch:
            why = t("zero3_expert_fetch_why_" + fetch["why"], L) if fetch.get("why") else ""
            con.print(f"{t('zero3_expert_fetch', L)}{t('colon', L)}{t('zero3_expert_fetch_' + fetch['assumed'], L)}{why}")
        ckpt = fw.get("checkpoint_impl")
        if ckpt:
            why = t("checkpoint_impl_stack_default", L) if ckpt["requested"] is None else ""
            con.print(f"{t('checkpoint_impl', L)}{t('colon', L)}{t('checkpoint_impl_' + ckpt['assumed'], L)}{why}")
        engine = fw.get("zero3_engine")
        if engine:
            con.print(f"{t('zero3_engine', L)}{t('colon', L)}{t('zero3_engine_' + engine['assumed'], L)}")
            b = engine.get("bucket_sizes")
            if b:
                why = t("zero3_bucket_sizes_default", L) if b["requested"] is None else ""
                con.print(f"{t('zero3_bucket_sizes', L)}{t('colon', L)}" + t("zero3_bucket_sizes_" + b["assumed"], L).format(
                    prefetch=f"{b['prefetch_bucket_params']:.3g}", persist=f"{b['persistence_threshold_params']:.3g}",
                    reduce=f"{b['reduce_bucket_params']:.3g}") + why)
        if fw.get("torch_compile"):
            con.print(f"{t('torch_compile_assumed', L)}{t('colon', L)}{t(fw['torch_compile']['reason'], L)}")
        kbit = fw.get("kbit_upcast")
        if kbit:
            state = ("on" if kbit["residual_fp32"] else "on_cast_back") if kbit["assumed"] else "off"
            why = t(kbit["reason"], L) if kbit.get("reason") else ""
            con.print(f"{t('kbit_upcast', L)}{t('colon', L)}{t('kbit_upcast_' + state, L)}{why}")
        _fsdp_no_sync_line(con, fw.get("fsdp_no_sync"), L)
        adapter = fw.get("lora_adapter")
        if adapter:
            why = t(adapter["reason"], L) if adapter.get("reason") else ""
            state = "16bit" if adapter["adapters_16bit"] else "fp32"
            con.print(f"{t('lora_adapter', L)}{t('colon', L)}{t('lora_adapter_' + state, L)}{why}")
    if result.get("memory"):
        _memory(con, result["memory"], L)
    if result.get("time"):
        _time(con, result["time"], L)
    if result.get("accuracy"):
        con.print(accuracy_line(result["accuracy"], L))
    rows = _cost_rows(result, L)
    if rows:
        con.print(_kv_table(t("cost_title", L), rows, L))
    for note in result.get("notes", []):
        con.print(f"{note_label(getattr(note, 'key', None), L)}{t('colon', L)}{tr(note, L)}")
