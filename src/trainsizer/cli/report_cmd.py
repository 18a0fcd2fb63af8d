"""`trainsizer report PLAN.json --out DIR`: the plan as HTML, Markdown, Excel, SVG (and PDF on request)."""

from __future__ import annotations

from pathlib import Path

import click

from trainsizer.cli.app import AppState, cli


def report_options(fn):
    """--format / --pdf / --force of `report`."""
    fn = click.option("--force", is_flag=True)(fn)
    fn = click.option("--pdf", "with_pdf", is_flag=True)(fn)
    return click.option("--format", "formats", multiple=True)(fn)


def write_reports(plan: object, out: Path, lang: str, formats: tuple[str, ...], with_pdf: bool,
                  force: bool) -> list[Path]:
    """The files written, for the caller to list (after its own output, and never into --json's)."""
    from trainsizer.render.report import DEFAULT_FORMATS, write_report

    chosen = tuple(formats) or DEFAULT_FORMATS
    if with_pdf:
        chosen = (*chosen, "pdf")
    return list(write_report(plan, out, lang=lang, formats=chosen, force=force))


@cli.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path))
@report_options
@click.pass_obj
def report(app: AppState, plan_file: Path, out_dir: Path, formats: tuple[str, ...], with_pdf: bool,
           force: bool) -> None:
    from trainsizer.render.report import load_plan_json

    for path in write_reports(load_plan_json(plan_file), out_dir, app.lang, formats, with_pdf, force):
        click.echo(str(path))
