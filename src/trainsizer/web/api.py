"""The HTTP API: /api/plan, /api/estimate, /api/fit, /api/catalog/..., /api/models (OpenAPI at /openapi.json).

Request bodies are job files as JSON, validated by the same pydantic models and turned into the same
messages as the CLI (`trainsizer.spec.load.parse_model`), so the body is read here rather than by FastAPI.
"""

from __future__ import annotations

from enum import StrEnum
from importlib import resources
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from trainsizer.errors import SpecError
from trainsizer.jsonable import to_jsonable
from trainsizer.messages import msg
from trainsizer.web.errors import ErrorBody, NotFound
from trainsizer.web.i18n import lang_of
from trainsizer.web.jobinput import parse_json_object, validate_job

router = APIRouter(prefix="/api")

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text} for code, text in (
        (400, "The body is not a JSON object"),
        (404, "No such catalog entry or model preset"),
        (413, "The body is larger than the server allows"),
        (422, "A value in the job is wrong: the message names the field, the value and what is allowed"),
        (503, "The server is busy, or the work took longer than its time limit"),
    )
}


def _examples() -> dict[str, Any]:
    text = resources.files("trainsizer.web").joinpath("data/api_examples.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


JOB_BODY = {"requestBody": {"required": True, "description": "A job file as JSON (the same keys as the YAML).",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Job"},
                                                             "examples": _examples()}}}}


class CatalogKind(StrEnum):
    accelerators = "accelerators"
    servers = "servers"
    networks = "networks"
    switches = "switches"
    storage = "storage"
    prices = "prices"


class Lang(StrEnum):
    en = "en"
    zh = "zh"


class FitQuestion(StrEnum):
    micro_batch = "micro-batch"
    seq_len = "seq-len"
    model = "model"


def _lang(request: Request) -> str:
    """The language of error messages: ?lang=, else Accept-Language."""
    return lang_of(request.headers, request.query_params.get("lang"))


async def read_job(request: Request) -> dict[str, Any]:
    """The job mapping from the body, validated (422 naming the field on any problem)."""
    raw = await request.body()
    data = parse_json_object(raw, "job", request.app.state.config.max_json_bytes)
    validate_job(data)
    return data


def _plan_responses() -> dict[int | str, dict[str, Any]]:
    from trainsizer.plan import Plan

    return {200: {"model": Plan, "description": "The plan (as `trainsizer plan --json`)"}, **ERRORS}


@router.post("/plan", openapi_extra=JOB_BODY, responses=_plan_responses(), summary="Plan the hardware for a job",
             response_class=JSONResponse)
async def api_plan(request: Request,
                   lang: Annotated[Lang, Query(description="Language of the plan's sentences")] = Lang.en
                   ) -> Response:
    """Search the catalog's accelerators, GPU counts, networks and parallel layouts for the job; rank them
    by its goal; report near-equal options as ties, the time-cost Pareto front and, when nothing
    satisfies the job, what binds and what relaxing it buys (as `trainsizer plan --json`)."""
    job = await read_job(request)
    return Response(await request.app.state.results.plan_json(job, lang.value), media_type="application/json")


@router.post("/estimate", openapi_extra=JOB_BODY, responses=ERRORS, summary="Evaluate one configuration")
async def api_estimate(request: Request) -> dict[str, Any]:
    """Memory per GPU, step time, MFU, time-to-train, cost and energy of the job's hardware and strategy
    (as `trainsizer estimate --json`)."""
    job = await read_job(request)
    return await request.app.state.pool.run("estimate", {"job": job, "lang": _lang(request)})


@router.post("/fit", openapi_extra=JOB_BODY, responses=ERRORS, summary="Largest micro-batch, length, model")
async def api_fit(request: Request, what: list[FitQuestion] = Query(  # noqa: B008
        default=[], description="Questions to answer (default: all three)")) -> dict[str, Any]:
    """The largest micro-batch, sequence length and model depth that fit (as `trainsizer fit --json`)."""
    job = await read_job(request)
    questions = [w.value for w in what] or [q.value for q in FitQuestion]
    return await request.app.state.pool.run("fit", {"job": job, "what": questions, "lang": _lang(request)})


@router.get("/models", responses=ERRORS, summary="Shipped model presets")
def api_models(q: str = Query("", max_length=100, description="Only presets whose name or family contains this")
               ) -> list[dict[str, Any]]:
    from trainsizer.models import list_presets

    needle = q.strip().lower()
    return [p.to_dict() for p in list_presets() if needle in p.name.lower() or needle in p.family.lower()]


@router.get("/models/{name}", responses=ERRORS, summary="One preset's architecture")
def api_model(name: str) -> dict[str, Any]:
    from trainsizer.models import load_preset, preset_names

    if name.strip().lower() not in preset_names():
        from trainsizer.errors import unknown_name

        err = unknown_name("model", "model preset", name, preset_names())
        raise NotFound(err, field="model")
    return to_jsonable(load_preset(name).to_dict())


@router.get("/catalog", summary="Catalog sections")
def api_catalog_kinds() -> list[str]:
    return [k.value for k in CatalogKind]


@router.get("/catalog/{kind}", responses=ERRORS, summary="Entries of one catalog section")
def api_catalog(request: Request, kind: CatalogKind) -> list[dict[str, Any]]:
    """Every entry with its sources, date and confidence (as `trainsizer catalog list KIND --json`)."""
    from trainsizer.render.catalog_tables import catalog_rows

    return to_jsonable(catalog_rows(request.app.state.catalog, kind.value, "en")[3])


@router.get("/catalog/{kind}/{entry_id}", responses=ERRORS, summary="One catalog entry")
def api_catalog_entry(request: Request, kind: CatalogKind, entry_id: str) -> dict[str, Any]:
    """One entry with its sources (as `trainsizer catalog show KIND ID --json`)."""
    cat = request.app.state.catalog
    getters = {"accelerators": cat.accelerator, "servers": cat.server, "networks": cat.network,
               "switches": cat.switch, "storage": cat.storage_tier}
    if kind.value not in getters:
        raise NotFound(msg("web_not_shown_one_by_one", kind=kind.value), field="kind")
    try:
        return to_jsonable(getters[kind.value](entry_id).to_dict())
    except SpecError as err:
        raise NotFound(err, field="entry_id") from None
