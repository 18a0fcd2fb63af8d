"""`trainsizer build JOB.yaml`: the cluster behind one configuration (BOM, node, fabrics, storage, facility,
software, risks, acceptance thresholds, roll-out), until `trainsizer plan` carries these blocks itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from trainsizer.cli.app import AppState, cli, json_option
from trainsizer.cli.job_cmd import _scenario, override_options
from trainsizer.render.console import echo_json
from trainsizer.render.i18n import t


def build_result(app: AppState, job_file: Path, server: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """{job, estimate, bom, node, network, storage, facility, software, risks, acceptance, phases, rules_of_thumb}:
    the shape `trainsizer accept --plan` reads (its `acceptance` key)."""
    from trainsizer.evaluate import evaluate
    from trainsizer.plan.buildout import build_plan

    scenario = _scenario(app, job_file, overrides)
    evaluation = evaluate(scenario, app.catalog)
    return {"job": evaluation["job"], "estimate": {k: evaluation[k] for k in ("memory", "time", "cost", "energy", "goal")},
            **build_plan(scenario, app.catalog, evaluation, server)}


def write_out(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """plan.json and the generated scheduler files into `out_dir`."""
    from trainsizer.errors import SpecError
    from trainsizer.messages import msg

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = [out_dir / "plan.json"]
        written[0].write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
        for name, text in result["software"]["files"].items():
            path = out_dir / name
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as err:
        raise SpecError("--out-dir", msg("cli_cannot_write_there", reason=str(err.strerror or err)),
                        value=str(out_dir)) from None
    return written


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@override_options
@click.option("--server")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path))
@json_option
@click.pass_obj
def build(app: AppState, job_file: Path, server: str | None, out_dir: Path | None, as_json: bool,
          **overrides: Any) -> None:
    from trainsizer.render.build_view import print_build

    result = build_result(app, job_file, server, overrides)
    written = write_out(result, out_dir) if out_dir is not None else []
    if as_json:
        echo_json(result)
        return
    print_build(result, app.lang)
    for path in written:
        click.echo(t("wrote_file", app.lang).format(path=path))
