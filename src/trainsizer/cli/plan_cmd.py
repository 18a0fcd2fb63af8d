"""`trainsizer plan JOB.yaml`: which hardware, how many GPUs and which layout, ranked by the job's goal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.errors import SpecError
from trainsizer.jsonable import to_jsonable
from trainsizer.messages import msg
from trainsizer.render.console import echo_json
from trainsizer.render.i18n import t


def _write(path: Path, data: Any, force: bool) -> None:
    if path.exists() and not force:
        raise SpecError("--out", msg("cli_file_exists"), value=str(path))
    if path.exists() and path.is_dir():
        raise SpecError("--out", msg("cli_out_is_folder"), value=str(path))
    try:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        raise SpecError("--out", msg("cli_cannot_write_plan", reason=err.strerror), value=str(path)) from None


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@click.option("--accelerator")
@click.option("--count", type=int)
@click.option("--per-node", "per_node", type=int)
@click.option("--network")
@click.option("--max-nodes", "max_nodes", type=int)
@click.option("--max-gpus", "max_gpus", type=int)
@click.option("--deadline-days", "deadline_days", type=float)
@click.option("--budget", type=float)
@click.option("--procurement", type=click.Choice(("rent", "buy", "either")))
@click.option("--top", type=int, default=10, show_default=True)
@click.option("--option", "option", type=int)
@click.option("--out", "out_file", type=click.Path(path_type=Path))
@click.option("--report", "report_dir", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True)
@json_option
@click.pass_obj
def plan(app: AppState, job_file: Path, accelerator: str | None, count: int | None, per_node: int | None,
         network: str | None, top: int, option: int | None, out_file: Path | None, report_dir: Path | None,
         force: bool, as_json: bool, **overrides: Any) -> None:
    from trainsizer.plan.core import make_plan
    from trainsizer.render.plan_view import print_plan
    from trainsizer.search import Pins

    for name, value in (("--count", count), ("--per-node", per_node), ("--top", top),
                        ("--max-nodes", overrides.get("max_nodes")), ("--max-gpus", overrides.get("max_gpus"))):
        if value is not None and value < 1:
            raise SpecError(name, msg("cli_at_least_1"), value=value)
    if out_file is not None and out_file.exists() and not force:
        raise SpecError("--out", msg("cli_file_exists"), value=str(out_file))
    pins = Pins(accelerator=accelerator, count=count, per_node=per_node, network=network)
    # unknown names fail here, with suggestions, blamed on the flag ("--accelerator (hardware.accelerator)"), not
    # on a bare "accelerator:" that names neither the flag nor the job's field
    for flag, path, value, look_up in (("--accelerator", "hardware.accelerator", accelerator, app.catalog.accelerator),
                                       ("--network", "hardware.network", network, app.catalog.network)):
        if value is not None:
            try:
                look_up(value)
            except SpecError as err:
                raise err.at(msg("error_at_flag", flag=flag, path=path)) from None
    from trainsizer.cli.argv import flags_blamed

    with flags_blamed(overrides):
        result = make_plan(job_file, app.catalog, pins=pins, top=top, overrides=overrides, lang=app.lang,
                           option=option)
    data = result.model_dump(mode="json")
    if out_file is not None:
        _write(out_file, data, force)
    reports: list[Path] = []
    if report_dir is not None:
        from trainsizer.cli.report_cmd import write_reports

        reports = write_reports(data, report_dir, app.lang, (), False, force)
    if as_json:
        echo_json(data)  # stdout holds the JSON alone; the report files are named on stderr
        for path in reports:
            click.echo(t("wrote_file", app.lang).format(path=path), err=True)
        return
    print_plan(data, app.lang)
    if data.get("build"):
        from trainsizer.render.build_view import print_build

        print_build(data["build"], app.lang)
    if out_file is not None:
        click.echo(f"{t('plan_written', app.lang)} {out_file}")
    for path in reports:
        click.echo(t("wrote_file", app.lang).format(path=path))
