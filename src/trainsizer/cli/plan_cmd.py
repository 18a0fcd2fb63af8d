"""`trainsizer plan JOB.yaml`: which hardware, how many GPUs and which layout, ranked by the job's goal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.render.console import echo_json, to_jsonable
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
@click.option("--accelerator", help="Search only this catalog accelerator (pins hardware.accelerator).")
@click.option("--count", type=int, help="Search only this GPU count.")
@click.option("--per-node", "per_node", type=int, help="GPUs per node.")
@click.option("--network", help="Catalog network id for multi-node options.")
@click.option("--max-nodes", "max_nodes", type=int, help="constraints.max_nodes")
@click.option("--max-gpus", "max_gpus", type=int, help="constraints.max_gpus")
@click.option("--deadline-days", "deadline_days", type=float, help="goal.deadline_days")
@click.option("--budget", type=float, help="goal.budget.amount (in the job's budget currency)")
@click.option("--procurement", type=click.Choice(("rent", "buy", "either")), help="goal.procurement")
@click.option("--top", type=int, default=10, show_default=True, help="Options shown in full.")
@click.option("--option", "option", type=int,
              help="Build out the option of this rank (default 1, the recommended one): BOM, fabrics, storage, "
                   "facility, software, risks, acceptance thresholds.")
@click.option("--out", "out_file", type=click.Path(path_type=Path), help="Write the plan (JSON) to this file.")
@click.option("--report", "report_dir", type=click.Path(path_type=Path),
              help="Also write the reports (HTML, Markdown, Excel BOM, architecture SVG) into this folder.")
@click.option("--force", is_flag=True, help="Overwrite --out (and --report files) if they exist.")
@json_option
@click.pass_obj
def plan(app: AppState, job_file: Path, accelerator: str | None, count: int | None, per_node: int | None,
         network: str | None, top: int, option: int | None, out_file: Path | None, report_dir: Path | None,
         force: bool, as_json: bool, **overrides: Any) -> None:
    """What to buy or rent for a job: hardware x GPU count x network x strategy, ranked by the job's goal.

    Prints the recommended option and why, the options with their best strategies, the Pareto front of
    time to train vs cost, the job's tier and, when nothing satisfies the job, what binds.
    """
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
    if accelerator is not None:
        app.catalog.accelerator(accelerator)  # unknown names fail here, with suggestions
    result = make_plan(job_file, app.catalog, pins=pins, top=top, overrides=overrides, lang=app.lang, option=option)
    data = result.model_dump(mode="json")
    if out_file is not None:
        _write(out_file, data, force)
    if report_dir is not None:
        from trainsizer.cli.report_cmd import write_reports

        write_reports(data, report_dir, app.lang, (), False, force)
    if as_json:
        echo_json(data)
        return
    print_plan(data, app.lang)
    if data.get("build"):
        from trainsizer.render.build_view import print_build

        print_build(data["build"], app.lang)
    if out_file is not None:
        click.echo(f"{t('plan_written', app.lang)} {out_file}")
