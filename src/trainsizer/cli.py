"""The `trainsizer` command line: rich tables for people, `--json` for scripts, `--lang zh|en`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from trainsizer import __version__
from trainsizer.cli_support import run_command
from trainsizer.render.console import echo_json, fmt_params, print_table
from trainsizer.render.i18n import LANGS, default_lang, t


@dataclass
class AppState:
    lang: str
    overlays: tuple[Path, ...] = ()
    _catalog: object | None = field(default=None, repr=False)

    @property
    def catalog(self):  # noqa: ANN201 - lazily loaded Catalog
        if self._catalog is None:
            from trainsizer.catalog import load_catalog

            self._catalog = load_catalog(overlays=self.overlays)
        return self._catalog


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainsizer")
@click.option("--lang", type=click.Choice(LANGS), default=None, help="Language of tables and reports (default: from the locale).")
@click.option(
    "--catalog",
    "overlays",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Your own catalog file (YAML) overlaid on the built-in one: adds entries or overrides fields such as prices.",
)
@click.pass_context
def cli(ctx: click.Context, lang: str | None, overlays: tuple[Path, ...]) -> None:
    """Size, cost and accept hardware for AI training jobs."""
    ctx.obj = AppState(lang=lang or default_lang(), overlays=overlays)


# ----------------------------------------------------------------------------------------------- models
@cli.group()
def models() -> None:
    """Model architectures: shipped presets and Hugging Face config.json files."""


@models.command("list")
@json_option
@click.pass_obj
def models_list(app: AppState, as_json: bool) -> None:
    """List the shipped model presets."""
    from trainsizer.models import list_presets

    presets = list_presets()
    if as_json:
        echo_json(presets)
        return
    L = app.lang
    print_table(
        t("models_title", L),
        [t("name", L), t("family", L), t("params_total", L), t("params_active", L), t("source", L)],
        [(p.name, p.family, fmt_params(p.params_total), fmt_params(p.params_active), p.source) for p in presets],
    )


@models.command("show")
@click.argument("name")
@json_option
@click.pass_obj
def models_show(app: AppState, name: str, as_json: bool) -> None:
    """Show one model: a preset name, or a path to config.json (or its folder)."""
    from trainsizer.models import load_model

    arch = load_model(name)
    data = arch.to_dict()
    if as_json:
        echo_json(data)
        return
    L = app.lang
    rows = [(k, v) for k, v in data.items() if k not in ("notes", "unknown_keys") and v not in (0, False, "", None, [], ())]
    rows = [(k, fmt_params(v) if k.startswith("params_") else v) for k, v in rows]
    print_table(arch.name, [t("item", L), t("value", L)], rows)
    if arch.notes:
        click.echo(f"{t('unknown_fields', L)}:")
        for note in arch.notes:
            click.echo(f"  - {note}")


# ---------------------------------------------------------------------------------------------- catalog
CATALOG_KINDS = ("accelerators", "servers", "networks", "switches", "storage", "prices")


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
@click.argument("kind", type=click.Choice(("accelerator", "server", "network", "switch", "storage")))
@click.argument("entry_id")
@json_option
@click.pass_obj
def catalog_show(app: AppState, kind: str, entry_id: str, as_json: bool) -> None:
    """Show one catalog entry with its sources, e.g. `catalog show accelerator h100-sxm-80gb`."""
    cat = app.catalog
    getter = {"accelerator": cat.accelerator, "server": cat.server, "network": cat.network, "switch": cat.switch,
              "storage": cat.storage_tier}[kind]
    record = getter(entry_id).to_dict()
    if as_json:
        echo_json(record)
        return
    L = app.lang
    print_table(f"{kind}: {record.get('id', entry_id)}", [t("item", L), t("value", L)], sorted(record.items()))


# ------------------------------------------------------------------------------------------------ check
@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@json_option
@click.pass_obj
def check(app: AppState, job_file: Path, as_json: bool) -> None:
    """Validate a job file and print the normalised job (model, data, hardware resolved)."""
    from trainsizer.scenario import resolve_job

    scenario = resolve_job(job_file, app.catalog)
    summary = scenario.summary()
    if as_json:
        echo_json(summary)
        return
    L = app.lang
    click.echo(f"{t('job_ok', L)}: {job_file}")
    print_table(summary["name"], [t("item", L), t("value", L)], _flatten(summary))
    for note in scenario.notes:
        click.echo(f"  note: {note}")


# --------------------------------------------------------------------------------------------- estimate
def _override_options(fn):
    opts = [
        click.option("--accelerator", help="Catalog accelerator id (overrides hardware.accelerator)."),
        click.option("--count", type=int, help="Number of GPUs (hardware.count)."),
        click.option("--per-node", "per_node", type=int, help="GPUs per node (hardware.per_node)."),
        click.option("--network", help="Catalog network id (hardware.network)."),
        click.option("--tp", type=int), click.option("--pp", type=int), click.option("--vpp", type=int),
        click.option("--dp", type=int), click.option("--cp", type=int), click.option("--ep", type=int),
        click.option("--zero", type=int, help="ZeRO stage 0-3."),
        click.option("--fsdp", help="none | full | hybrid"),
        click.option("--micro-batch", "micro_batch", type=int),
        click.option("--recompute", help="none | selective | full"),
        click.option("--offload", help="none | optimizer | optimizer+params"),
        click.option("--framework", help="auto | megatron | megatron-core | deepspeed | fsdp | hf | deepseek-dualpipe"),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@_override_options
@click.option("--calibration", "calibration_file", type=click.Path(path_type=Path),
              help="Measured figures (a `trainsizer accept` result file) that replace modelled efficiencies.")
@json_option
@click.pass_obj
def estimate(app: AppState, job_file: Path, calibration_file: Path | None, as_json: bool, **overrides) -> None:
    """Memory per GPU, step time, MFU, time-to-train, cost and energy of one configuration.

    Hardware and strategy come from the job file; flags override them.
    """
    from trainsizer.evaluate import evaluate, load_calibration
    from trainsizer.render.estimate_view import print_estimate
    from trainsizer.scenario import resolve_job
    from trainsizer.spec import read_mapping
    from trainsizer.spec.overrides import apply_overrides

    data = apply_overrides(read_mapping(job_file), overrides)
    scenario = resolve_job(job_file, app.catalog, data=data)
    calibration = load_calibration(calibration_file, scenario.training.precision) if calibration_file else None
    result = evaluate(scenario, app.catalog, calibration)
    if as_json:
        echo_json(result)
    else:
        print_estimate(result, app.lang)


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@_override_options
@click.option("--what", "questions", multiple=True, type=click.Choice(("micro-batch", "seq-len", "model")),
              help="Which reverse question(s) to answer (default: all three).")
@json_option
@click.pass_obj
def fit(app: AppState, job_file: Path, questions: tuple[str, ...], as_json: bool, **overrides) -> None:
    """The largest micro-batch, sequence length and model (by depth) that fit the job's hardware and strategy.

    Answers are memory limits; everything else in the job is kept.
    """
    from trainsizer.estimate.fit import max_layers, max_micro_batch, max_seq_len
    from trainsizer.evaluate import require_configuration
    from trainsizer.scenario import resolve_job
    from trainsizer.spec import read_mapping
    from trainsizer.spec.overrides import apply_overrides

    data = apply_overrides(read_mapping(job_file), overrides)
    sc = require_configuration(resolve_job(job_file, app.catalog, data=data))
    args = (sc.model, sc.training, sc.system, sc.strategy)
    out: dict[str, object] = {"job": sc.name}
    for q in questions or ("micro-batch", "seq-len", "model"):
        if q == "micro-batch":
            r = max_micro_batch(*args)
            out["max_micro_batch"] = {"value": r.value, "per_gpu_gib": r.estimate.to_dict()["per_gpu_gib"] if r.estimate else None}
        elif q == "seq-len":
            r = max_seq_len(*args)
            out["max_seq_len"] = {"value": r.value, "per_gpu_gib": r.estimate.to_dict()["per_gpu_gib"] if r.estimate else None}
        else:
            r = max_layers(*args)
            params = sc.model.with_(layers=r.value).params_total if r.value else 0
            out["max_model"] = {"layers": r.value, "params_total": params,
                                "per_gpu_gib": r.estimate.to_dict()["per_gpu_gib"] if r.estimate else None,
                                "how": f"{sc.model.name} architecture scaled in depth"}
    if as_json:
        echo_json(out)
        return
    L = app.lang
    rows = []
    for key, val in out.items():
        if isinstance(val, dict):
            shown = val.get("value", val.get("layers"))
            extra = f" ({fmt_params(val['params_total'])} params)" if "params_total" in val and val["params_total"] else ""
            gib = f"{val['per_gpu_gib']:.1f} GiB" if val.get("per_gpu_gib") else "—"
            rows.append((t(key, L), f"{shown}{extra}", gib))
    print_table(f"{t('fit_title', L)}: {sc.name}", [t("item", L), t("value", L), t("memory", L)], rows)


def _flatten(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            rows.extend(_flatten(v, key + "."))
        elif v is not None:
            rows.append((key, v))
    return rows


def _register_subsystems() -> None:
    from trainsizer.accept.command import accept

    cli.add_command(accept)


_register_subsystems()


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one paragraph (no traceback) and exit 2."""
    return run_command(cli, argv, prog_name="trainsizer")


if __name__ == "__main__":
    sys.exit(main())
