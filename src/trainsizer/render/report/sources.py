"""The assumptions a plan rests on and where its figures come from, for the report's last section and the
workbook's "Assumptions" sheet."""

from __future__ import annotations

from collections.abc import Mapping

from trainsizer.evaluate import UNIT_BUY, UNIT_HOST_RAM, UNIT_RENT
from trainsizer.render.report.blocks import mid
from trainsizer.render.report.facts import blocks, option_label, recommended
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import t

JOB_FIELDS = ("name", "method", "precision", "optimizer", "seq_len", "global_batch_sequences", "tokens_total",
              "steps")


def assumptions(plan: Mapping, f: Fmt) -> list[tuple[str, str, str, str]]:
    """(what, value, source, date) rows: the job as the plan read it, then every priced or sourced figure."""
    L = f.lang
    rows: list[tuple[str, str, str, str]] = []
    job = plan.get("job") or {}
    model = job.get("model") or {}
    if model:
        rows.append((t("a.model", L), f"{model.get('name')}" + t("paren", L).format(text=f.num(model.get("params_total"))),
                     t("a.from_job", L), ""))
    for key in JOB_FIELDS:
        if job.get(key) is not None and key != "name":
            value = f.num(round(job[key])) if key == "tokens_total" else f.value(key, job[key])
            rows.append((t(f"a.{key}", L), value, t("a.from_job", L), ""))
    rows.extend(_sample_rows(job, f))
    rows.extend(_pack_rows(job, f))
    goal = job.get("goal") or {}
    if goal.get("deadline_days"):
        rows.append((t("a.deadline", L), f.days(goal["deadline_days"]), t("a.from_job", L), ""))
    budget = goal.get("budget") or {}
    if budget.get("amount"):
        rows.append((t("a.budget", L), f.money(budget["amount"], budget.get("currency", "")), t("a.from_job", L), ""))
    rows.extend(_price_rows(plan, f))
    return rows


def _sample_rows(job: Mapping, f: Fmt) -> list[tuple[str, str, str, str]]:
    """Unpacked samples: the length distribution behind tokens/s and the padded rows peak memory is planned for
    (the plan's job.sample_rows; none for packed rows or a token count)."""
    rows = job.get("sample_rows")
    if not isinstance(rows, Mapping):
        return []
    value = t("a.sample_rows_value", f.lang, mean=f.num(rows.get("mean_tokens")), sigma=f.num(rows.get("length_sigma"), 2),
              cap=f.num(rows.get("cap_tokens")), real=f.num(rows.get("real_tokens_per_sample")))
    return [(t("a.sample_rows", f.lang), value, t("a.from_job", f.lang), "")]


def _pack_rows(job: Mapping, f: Fmt) -> list[tuple[str, str, str, str]]:
    """Next-fit packs (torchtune): the sample lengths behind each pack's padding, which runs but is not counted as
    training tokens (the plan's job.pack_rows; none for full rows)."""
    rows = job.get("pack_rows")
    if not isinstance(rows, Mapping):
        return []
    value = t("a.pack_rows_value", f.lang, mean=f.num(rows.get("mean_tokens")), sigma=f.num(rows.get("length_sigma"), 2),
              pack=f.num(rows.get("pack_tokens")), real=f.num(rows.get("real_tokens_per_pack")))
    return [(t("a.pack_rows", f.lang), value, t("a.from_job", f.lang), "")]


def _price_rows(plan: Mapping, f: Fmt) -> list[tuple[str, str, str, str]]:
    L, rows = f.lang, []
    rec = recommended(plan)
    options = plan.get("options") or []
    shown = [rec] if rec is not None else list(range(min(1, len(options))))
    for i in shown:
        o = options[i]
        cost = o.get("cost") or {}
        for kind in ("rent", "buy"):
            block = cost.get(kind)
            if isinstance(block, Mapping) and isinstance(block.get("unit_price"), Mapping):
                up = block["unit_price"]
                money = f.money_range(up.get('low'), up.get('mid', up.get('typical')), up.get('high'),
                                      cost.get('currency', ''))
                gap = "" if money.endswith("）") else " "  # no space beside full-width punctuation (zh)
                rows.append((f"{t(f'a.price_{kind}', L)}{t('sep.field', L)}{option_label(o)}",
                             f"{money}{gap}{unit_text(up.get('unit'), L)}",
                             str(block.get("source", "")), str(block.get("date", ""))))
                res = block.get("reserved" if kind == "rent" else "host_ram")
                if isinstance(res, Mapping) and isinstance(res.get("unit_price"), Mapping):
                    ru = res["unit_price"]
                    rmoney = f.money_range(ru.get("low"), ru.get("mid"), ru.get("high"), cost.get("currency", ""))
                    label = "a.price_rent_reserved" if kind == "rent" else "a.price_host_ram"
                    rows.append((f"{t(label, L)}{t('sep.field', L)}{option_label(o)}",
                                 f"{rmoney}{'' if rmoney.endswith('）') else ' '}{unit_text(ru.get('unit'), L)}",
                                 str(res.get("source", "")), str(res.get("date", ""))))
        energy = o.get("energy") or {}
        if energy.get("pue"):
            rows.append((t("a.pue", L), f.num(energy["pue"], 2), t("a.catalog", L), ""))
    for line in (blocks(plan).get("bom") or {}).get("lines") or []:
        price = line.get("unit_price") if isinstance(line, Mapping) and isinstance(line.get("unit_price"), Mapping) else {}
        source, date = price.get("source") or line.get("source"), price.get("date") or line.get("date")
        if source:
            value = f.money_range(price.get("low"), mid(price), price.get("high"),
                                  str(price.get("currency") or line.get("currency") or "")) if price else ""
            rows.append((f"{t('sec.bom', L)}{t('sep.field', L)}{line.get('item', '')}".strip(), value, str(source), str(date or "")))
    return rows


def unit_text(unit: object, lang: str) -> str:
    """A cost block's price unit in the report's language (another unit, e.g. from an older plan, as written)."""
    key = {UNIT_RENT: "a.unit_rent", UNIT_BUY: "a.unit_buy", UNIT_HOST_RAM: "a.unit_host_ram"}.get(str(unit or ""))
    return t(key, lang) if key else str(unit or "")
