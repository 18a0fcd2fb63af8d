"""`trainsizer check|estimate|fit JOB.yaml`: commands that read a job file (flags override its hardware and
strategy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.messages import msg, tr
from trainsizer.numbers import decimal, money
from trainsizer.render.console import echo_json, print_table
from trainsizer.render.i18n import note_label, t
from trainsizer.render.numbers import fmt_count, fmt_gib, fmt_num, fmt_params

# the options that override a job file's hardware and strategy (their --help: data/cli_help.yaml `_shared`)
_OVERRIDES = [
    click.option("--accelerator"), click.option("--count", type=int), click.option("--per-node", "per_node", type=int),
    click.option("--network"),
    click.option("--tp", type=int), click.option("--pp", type=int), click.option("--vpp", type=int),
    click.option("--dp", type=int), click.option("--cp", type=int), click.option("--ep", type=int),
    click.option("--etp", type=int),
    click.option("--zero", type=int), click.option("--fsdp"), click.option("--micro-batch", "micro_batch", type=int),
    click.option("--recompute"), click.option("--recompute-method", "recompute_method"),
    click.option("--recompute-num-layers", "recompute_num_layers", type=int),
    click.option("--offload"), click.option("--framework"),
]


def override_options(fn: Callable) -> Callable:
    for opt in reversed(_OVERRIDES):
        fn = opt(fn)
    return fn


def _scenario(app: AppState, job_file: Path, overrides: dict[str, Any]) -> Any:
    from trainsizer.api import resolve
    from trainsizer.cli.argv import flags_blamed
    from trainsizer.default_strategy import with_default_strategy

    with flags_blamed(overrides):
        return with_default_strategy(resolve(job_file, app.catalog, overrides=overrides))


def _flatten(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and set(v) == {"amount", "currency"}:  # a sum of money: one row, in its currency
            rows.append((key, v))
        elif isinstance(v, dict):
            rows.extend(_flatten(v, key + "."))
        elif v is not None:
            rows.append((key, v))
    return rows


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@override_options
@json_option
@click.pass_obj
def check(app: AppState, job_file: Path, as_json: bool, **overrides: Any) -> None:
    scenario = _scenario(app, job_file, overrides)
    summary = scenario.summary()
    if as_json:
        echo_json(summary)
        return
    L = app.lang
    click.echo(f"{t('job_ok', L)}{t('colon', L)}{job_file}")
    rows = [(field_label(key, L), _shown(key, value, L)) for key, value in _flatten(summary) if key != "notes"]
    print_table(summary["name"], [t("item", L), t("value", L)], rows)
    for note in scenario.notes:
        click.echo(f"  {note_label(getattr(note, 'key', None), L)}{t('colon', L)}{tr(note, L)}")


def field_label(key: str, lang: str) -> str:
    """The label of one row of the normalised job; a field without one shows its key path (the message-key
    test, tests/render/test_messages.py, names it so that it gets a label)."""
    try:
        return t(f"field_{key}", lang)
    except KeyError:
        return key


def _shown(key: str, value: Any, lang: str) -> str:
    """One value of the normalised job for people: counts in the reader's units, lists joined."""
    if isinstance(value, bool):
        return t("yes" if value else "no", lang)
    if isinstance(value, dict):
        return money(value["amount"], value["currency"], lang)
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "—"
    if isinstance(value, int) and value == 0 and key == "strategy.shard_group":
        return t("value.strategy.shard_group.0", lang)
    if key.startswith("model.params_"):
        return fmt_params(value, lang)
    if isinstance(value, int):  # a whole number of the job (tokens per step, steps, GPUs) as it is: 1,048,576
        return fmt_count(value, lang)
    if isinstance(value, int | float):
        return fmt_num(value, lang, digits=4)
    if isinstance(value, str):
        return _named_value(key, value, lang)
    return str(tr(value, lang))


def _named_value(key: str, value: str, lang: str) -> str:
    """A named choice of the job ("full", "rent", "auto") as `value.<field>.<word>` reads it in `lang`, else
    `value.<word>` (auto, none), else the word itself (ids of models and parts, names the reader wrote)."""
    for k in (f"value.{key}.{value}", f"value.{value}"):
        try:
            return t(k, lang)
        except KeyError:
            continue
    return value


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@override_options
@click.option("--calibration", "calibration_file", type=click.Path(path_type=Path))
@json_option
@click.pass_obj
def estimate(app: AppState, job_file: Path, calibration_file: Path | None, as_json: bool, **overrides: Any) -> None:
    from trainsizer.api import estimate as estimate_job
    from trainsizer.render.estimate_view import print_estimate

    scenario = _scenario(app, job_file, overrides)
    result = estimate_job(scenario, app.catalog, calibration_file)
    if as_json:
        echo_json(result)
    else:
        print_estimate(result, app.lang)


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@override_options
@click.option("--what", "questions", multiple=True, type=click.Choice(("micro-batch", "seq-len", "model")))
@json_option
@click.pass_obj
def fit(app: AppState, job_file: Path, questions: tuple[str, ...], as_json: bool, **overrides: Any) -> None:
    from trainsizer.api import FIT_QUESTIONS
    from trainsizer.api import fit as fit_job

    scenario = _scenario(app, job_file, overrides)
    out = fit_job(scenario, questions or FIT_QUESTIONS)
    if as_json:
        echo_json(out)
        return
    L = app.lang
    rows, why = [], []
    for key, val in out.items():
        if not isinstance(val, dict):
            continue
        shown = decimal(val.get("value", val.get("layers")), L, "#,##0")
        extra = t("fit_params", L).format(params=fmt_params(val["params_total"], L)) \
            if val.get("params_total") else ""
        gib = f"{fmt_gib(val['per_gpu_gib'], L)} GiB" if val.get("per_gpu_gib") else "—"
        if "nothing_fits" in val:
            shown, extra, gib = t("fit_none", L), "", "—"
            why.append(_nothing_fits(key, val["nothing_fits"], L))
        rows.append((t(key, L), f"{shown}{extra}", gib))
    print_table(f"{t('fit_title', L)}{t('colon', L)}{scenario.name}", [t("item", L), t("value", L), t("memory", L)],
                rows)
    for line in why:
        click.echo(f"  {t('note', L)}{t('colon', L)}{line}")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _nothing_fits(key: str, info: dict[str, Any], lang: str) -> str:
    """Why a fit question has no answer: what its smallest value needs per GPU, and the largest parts of it."""
    parts = sorted(info["breakdown_gib"].items(), key=lambda kv: -kv[1])[:2]
    # the breakdown's row labels, mid-sentence (lower case in English; Chinese has no case)
    largest = t("list_sep", lang).join(f"{_lower_first(t(name, lang))} {fmt_gib(g, lang)} GiB" for name, g in parts)
    return tr(msg(f"fit_nothing_fits_{key}", smallest=fmt_num(info["smallest"], lang),
                  need=fmt_gib(info["per_gpu_gib"], lang), capacity=fmt_gib(info["capacity_gib"], lang),
                  largest=largest), lang)
