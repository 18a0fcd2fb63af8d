"""`trainsizer catalog list|show`."""

from __future__ import annotations

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.render.console import echo_json, print_table
from trainsizer.render.i18n import t

CATALOG_KINDS = ("accelerators", "servers", "networks", "switches", "storage", "prices")
ENTRY_KINDS = ("accelerator", "server", "network", "switch", "storage", "price")


@cli.group()
def catalog() -> None:
    """The hardware catalog: accelerators, servers, networks, switches, storage and prices."""


@catalog.command("list")
@click.argument("kind", type=click.Choice(CATALOG_KINDS))
@json_option
@click.pass_obj
def catalog_list(app: AppState, kind: str, as_json: bool) -> None:
    """List catalog entries of one KIND."""
    from trainsizer.render.catalog_tables import catalog_rows

    title, columns, rows, records = catalog_rows(app.catalog, kind, app.lang)
    if as_json:
        echo_json(records)
        return
    print_table(title, columns, rows)


@catalog.command("show")
@click.argument("kind", type=click.Choice(ENTRY_KINDS))
@click.argument("entry_id")
@json_option
@click.pass_obj
def catalog_show(app: AppState, kind: str, entry_id: str, as_json: bool) -> None:
    """Show one catalog entry with its sources, e.g. `catalog show accelerator h100-sxm-80gb`."""
    cat = app.catalog
    getter = {"accelerator": cat.accelerator, "server": cat.server, "network": cat.network, "switch": cat.switch,
              "storage": cat.storage_tier, "price": cat.price_record}[kind]
    record = getter(entry_id).to_dict()
    if kind == "price":  # how old the price is, and whether it is past the one-year warning
        record["age"] = cat.price_age(entry_id).to_dict()
    if as_json:
        echo_json(record)
        return
    L = app.lang
    print_table(f"{kind}: {record.get('id', entry_id)}", [t("item", L), t("value", L)], sorted(record.items()))
