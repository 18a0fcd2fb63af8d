"""`trainsizer models list|show`."""

from __future__ import annotations

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.messages import tr
from trainsizer.render.console import echo_json, fmt_params, print_table
from trainsizer.render.i18n import t


@cli.group()
def models() -> None:
    pass


@models.command("list")
@json_option
@click.pass_obj
def models_list(app: AppState, as_json: bool) -> None:
    from trainsizer.models import list_presets

    presets = list_presets()
    if as_json:
        echo_json(presets)
        return
    L = app.lang
    print_table(
        t("models_title", L),
        [t("name", L), t("family", L), t("params_total", L), t("params_active", L), t("source", L)],
        [(p.name, p.family, fmt_params(p.params_total, L), fmt_params(p.params_active, L), p.source) for p in presets],
    )


@models.command("show")
@click.argument("name")
@json_option
@click.pass_obj
def models_show(app: AppState, name: str, as_json: bool) -> None:
    from trainsizer.models import load_model

    arch = load_model(name)
    data = arch.to_dict()
    if as_json:
        echo_json(data)
        return
    L = app.lang
    empty = (0, False, "", None, [], ())
    # the Mamba-2 mixer's widths mean nothing without a hybrid layer pattern (their defaults are not zero)
    hidden = ("notes", "unknown_keys") + (() if arch.is_hybrid else tuple(k for k in data if k.startswith("ssm_")))
    # nor do the MoE routing fields of a dense model ("MoE every n layers 1", "expert groups 1" on Llama)
    hidden += () if arch.is_moe else tuple(k for k in data if k.startswith(MOE_FIELDS))
    rows = [(_label(k, L), _shown(k, v, L)) for k, v in data.items() if k not in hidden and v not in empty]
    print_table(arch.name, [t("item", L), t("value", L)], rows)
    if arch.notes:
        click.echo(f"{t('model_notes', L)}{t('colon', L)}")
        for note in arch.notes:
            click.echo(f"  - {tr(note, L)}")


MOE_FIELDS = ("moe_", "expert", "shared_expert", "router_")


def _label(key: str, lang: str) -> str:
    """`model_<field>` from render/data/i18n.yaml (tests/test_cli.py names a field without one)."""
    try:
        return t(f"model_{key}", lang)
    except KeyError:
        return key


def _shown(key: str, value: object, lang: str) -> str:
    if key.startswith("params_"):
        return fmt_params(value, lang)
    if isinstance(value, bool):
        return t("yes" if value else "no", lang)
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)
