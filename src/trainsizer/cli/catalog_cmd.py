"""`trainsizer catalog list|show`: KIND in the singular or the plural (`accelerator` or `accelerators`)."""

from __future__ import annotations

from typing import Any

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.render.console import echo_json, print_table

CATALOG_KINDS = ("accelerators", "servers", "networks", "switches", "storage", "prices")
# every spelling a person may type -> the plural used inside
KIND_NAMES = {
    **{k: k for k in CATALOG_KINDS},
    "accelerator": "accelerators", "gpu": "accelerators", "gpus": "accelerators", "server": "servers",
    "network": "networks", "switch": "switches", "storage-tier": "storage", "storage-tiers": "storage",
    "price": "prices",
}


def _kind(ctx: click.Context, param: click.Parameter, value: str) -> str:
    return KIND_NAMES[value.lower()]


# KIND in the usage line: the help text names the kinds (the choices' 16 spellings would fill three lines)
kind_argument = click.argument("kind", type=click.Choice(sorted(KIND_NAMES), case_sensitive=False),
                               callback=_kind, metavar="KIND")


@cli.group()
def catalog() -> None:
    pass


@catalog.command("list")
@kind_argument
@json_option
@click.pass_obj
def catalog_list(app: AppState, kind: str, as_json: bool) -> None:
    from trainsizer.render.catalog_tables import catalog_rows

    title, columns, rows, records = catalog_rows(app.catalog, kind, app.lang)
    if as_json:
        echo_json(records)
        return
    print_table(title, columns, rows)


def _price_records(cat: Any, entry_id: str) -> list[dict[str, Any]]:
    """A price by its id, or every price of one accelerator, server or switch (`catalog show price h100`)."""
    from trainsizer.errors import SpecError

    if entry_id in cat.prices:
        ids = [entry_id]
    else:
        subject = entry_id
        try:
            subject = cat.accelerator(entry_id).id
        except SpecError:
            if not any(p.subject == entry_id for p in cat.prices.values()):
                raise
        ids = sorted(pid for pid, p in cat.prices.items() if p.subject == subject)
    out = []
    for pid in ids:
        record = cat.price_record(pid).to_dict()
        record["age"] = cat.price_age(pid).to_dict()  # how old the price is, past the one-year warning or not
        out.append(record)
    return out


@catalog.command("show")
@kind_argument
@click.argument("entry_id")
@json_option
@click.pass_obj
def catalog_show(app: AppState, kind: str, entry_id: str, as_json: bool) -> None:
    from trainsizer.render.catalog_card import print_card
    from trainsizer.render.i18n import t

    cat = app.catalog
    if kind == "prices":
        records = _price_records(cat, entry_id)
    else:
        getter = {"accelerators": cat.accelerator, "servers": cat.server, "networks": cat.network,
                  "switches": cat.switch, "storage": cat.storage_tier}[kind]
        records = [getter(entry_id).to_dict()]
    if as_json:
        echo_json(records[0] if len(records) == 1 else records)
        return
    for record in records:
        print_card(cat, record, t(f"kind_{kind}", app.lang), app.lang)
