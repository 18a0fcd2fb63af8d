"""The work a worker process does: one function per task, plain data in and out (pickled over a pipe).

Nothing here reads a path from a request: a job arrives as a mapping whose model is a preset name or the
content of an uploaded config.json (checked in `trainsizer.web.jobinput` before it gets here), and the
catalog is the built-in one plus the overlays named on the server's command line.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainsizer.errors import TrainsizerError
from trainsizer.jsonable import to_jsonable
from trainsizer.web.errors import error_detail, status_of

log = logging.getLogger("trainsizer.web")
_state: dict[str, Any] = {}


def init(overlays: tuple[Path, ...] = (), warm_up: bool = False) -> None:
    """Load the catalog once per worker; with `warm_up`, also plan the form's default job once, so that the
    worker has imported the planning code and read its data files (rules, presets, messages) before its first
    request: cold, the first plan also paid ~1 s of imports and ~1.5 s of YAML reads (benchmarks/web_load.py)."""
    from trainsizer.catalog import load_catalog

    _state["catalog"] = load_catalog(overlays=overlays)
    if warm_up:
        from trainsizer.web.form import DEFAULTS, job_from_form

        status, value = run("plan", {"job": job_from_form(DEFAULTS, None), "lang": "en"})
        if status != "ok":  # the server still serves; the first real plan is then merely slower
            log.warning("warm-up plan failed in a worker (%s): %s", status, value)


def _catalog() -> Any:
    if "catalog" not in _state:
        init()
    return _state["catalog"]


def _scenario(job: dict[str, Any]) -> Any:
    from trainsizer.scenario import resolve_job

    return resolve_job(job, _catalog())


def estimate(payload: dict[str, Any]) -> dict[str, Any]:
    from trainsizer.evaluate import evaluate

    return to_jsonable(evaluate(_scenario(payload["job"]), _catalog()))


def fit(payload: dict[str, Any]) -> dict[str, Any]:
    from trainsizer.evaluate import reverse_questions

    return to_jsonable(reverse_questions(_scenario(payload["job"]), tuple(payload["what"])))


def plan(payload: dict[str, Any]) -> dict[str, Any]:
    """The plan (`trainsizer plan --json`: search, rank, ties, Pareto front), as data and as JSON bytes."""
    from trainsizer.plan import make_plan

    data = to_jsonable(make_plan(payload["job"], _catalog(), lang=payload["lang"]).model_dump(mode="json"))
    return {"plan": data, "json": json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")}


def render(payload: dict[str, Any]) -> bytes:
    """One download of a plan, by the report renderer (the same files as `trainsizer report`)."""
    from trainsizer.web.downloads import render_download

    return render_download(payload["plan"], payload["fmt"], payload["lang"])


TASKS: dict[str, Callable[[dict[str, Any]], Any]] = {"estimate": estimate, "fit": fit, "plan": plan,
                                                      "render": render}


def run(name: str, payload: dict[str, Any]) -> tuple[str, Any]:
    """("ok", result) | ("user_error", {detail, status}) | ("bug", traceback text for the server log)."""
    try:
        return "ok", TASKS[name](payload)
    except TrainsizerError as err:
        detail = error_detail(err, str(payload.get("error_lang") or payload.get("lang") or "en"))
        return "user_error", {"detail": detail.model_dump(mode="json"), "status": status_of(err)}
    except Exception:  # a bug: the server logs it; the client gets a short 500 without the traceback
        return "bug", traceback.format_exc()
