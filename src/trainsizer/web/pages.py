"""HTML pages: the form (GET /), its submission (POST /plan), the result (GET /result), downloads and the
local API documentation. Templates autoescape everything; a bad value re-shows the form with a message
beside the input (the CLI's message), never a broken page."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.datastructures import UploadFile

from trainsizer.errors import SpecError, TrainsizerError, render_error
from trainsizer.messages import msg
from trainsizer.render.console import fmt_params
from trainsizer.scenario import resolve_job
from trainsizer.web.downloads import PAGE
from trainsizer.web.errors import NotFound, TooLarge, error_detail, status_of
from trainsizer.web.form import (
    CHOICES,
    DEFAULTS,
    MULTI,
    config_input,
    config_kept,
    error_input,
    form_from_job,
    job_from_form,
)
from trainsizer.web.i18n import lang_of, messages, pick_lang, translator
from trainsizer.web.jobinput import validate_job
from trainsizer.web.token import decode_job, encode_job, job_key

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(resources.files("trainsizer.web").joinpath("templates")))
MAX_FORM_FIELDS = 200


def request_lang(request: Request, explicit: str | None = None) -> str:
    """The page language: ?lang= when given, else the browser's Accept-Language (zh* -> zh), else English."""
    return lang_of(request.headers, explicit)


def context(request: Request, lang: str, **extra: Any) -> dict[str, Any]:
    return {"request": request, "lang": lang, "other_lang": "en" if lang == "zh" else "zh",
            "tr": translator(lang), **extra}


def _form_context(request: Request, lang: str, values: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    from trainsizer.models import list_presets

    cat = request.app.state.catalog
    accelerators = sorted(cat.accelerators.values(), key=lambda a: (a.vendor, a.id))
    presets = [{"name": p.name, "family": p.family, "params": fmt_params(p.params_total, lang)}
               for p in list_presets()]
    msgs = messages()
    objective_labels = {c: msgs[f"objective_{c}"][lang] for c in CHOICES["goal.objective"] if f"objective_{c}" in msgs}
    # a choice's words in the reader's language (messages.yaml `choice.<field>.<value>`), the value itself otherwise
    labels = {f: {c: msgs[f"choice.{f}.{c or 'auto'}"][lang] for c in cs if f"choice.{f}.{c or 'auto'}" in msgs}
              for f, cs in CHOICES.items()}
    vendors = {a.vendor: cat.vendor_name(a.vendor, lang) for a in accelerators}  # the catalog's names, not codes
    return context(request, lang, values=values, errors=errors, choices=CHOICES, accelerators=accelerators,
                   vendors=vendors, presets=presets, objective_labels=objective_labels, labels=labels)


def render_form(request: Request, lang: str, values: dict[str, Any], errors: dict[str, str],
                status: int = 200) -> HTMLResponse:
    return templates.TemplateResponse(request, "form.html", _form_context(request, lang, values, errors),
                                      status_code=status)


@router.get("/", response_class=HTMLResponse)
def form_page(request: Request) -> HTMLResponse:
    """The form, with defaults; prefilled from ?job= (edit a plan's job) or from field values in the query
    (the language switch resubmits the form here)."""
    q = request.query_params
    lang = request_lang(request, q.get("switch_lang") or q.get("lang"))
    values: dict[str, Any] = dict(DEFAULTS)
    errors: dict[str, str] = {}
    if q.get("job"):
        try:
            values = form_from_job(decode_job(q["job"], request.app.state.config.max_json_bytes))
        except TrainsizerError as err:
            errors["_"] = render_error(err, lang)
    else:
        for key in q:
            if key in MULTI:
                values[key] = q.getlist(key)
            elif key not in ("lang", "switch_lang"):
                values[key] = q[key]
    return render_form(request, lang, values, errors)


async def _read_form(request: Request) -> tuple[dict[str, Any], bytes | None]:
    limit = request.app.state.config.max_upload_bytes
    async with request.form(max_files=1, max_fields=MAX_FORM_FIELDS, max_part_size=limit) as form:
        values: dict[str, Any] = {}
        upload: bytes | None = None
        for key, item in form.multi_items():
            if isinstance(item, UploadFile):
                if key == "model_config" and item.filename:
                    upload = await item.read(limit + 1)
                    if len(upload) > limit:
                        raise TooLarge(msg("web_upload_too_large", limit=limit),
                                       field="model_config")
            elif key in MULTI:
                values.setdefault(key, []).append(item)
            else:
                values[key] = item
    return values, upload


@router.post("/plan", response_class=HTMLResponse)
async def submit(request: Request) -> Response:
    """The form's job: re-shown with inline messages if a value is wrong, else on to its result page."""
    values, upload = await _read_form(request)
    lang = pick_lang(str(values.get("lang", "en")))
    try:
        job = job_from_form(values, upload)
        # Names (model preset, accelerators) are looked up now, so a wrong one is shown beside its input.
        resolve_job(validate_job(job), request.app.state.catalog, network_searched=True)  # the form asks for a plan
    except TrainsizerError as err:
        values = config_kept(values, upload)
        detail = error_detail(err, lang)
        key = error_input(detail.field)
        if key == "model" and _in_config(err):
            key = config_input(values)
        shown = key if key in _form_inputs() else "_"
        return render_form(request, lang, values, {shown: _beside(err, shown, detail.message, lang)},
                           status=status_of(err))
    return RedirectResponse(f"/result?job={encode_job(job)}&lang={lang}", status_code=303)


_CONFIG_KEY = re.compile(r"^job: model \(model:([^)]+)\)$")  # a key inside a config.json given as the model


def _in_config(err: TrainsizerError) -> str | None:
    match = _CONFIG_KEY.match(str(err.where)) if isinstance(err, SpecError) else None
    return match.group(1) if match else None


def _beside(err: TrainsizerError, shown: str, message: str, lang: str) -> str:
    """An error shown beside the input of its own job field, without that field's path in front ("job:
    data.tokens: must be ..." under the Tokens input repeated its label); one about a key inside the
    config.json beside the config's input names that key alone ("hidden_size: must be >= 1"); one about
    anything else keeps its location."""
    where = str(err.where) if isinstance(err, SpecError) else ""
    path = re.sub(r"\[\d+\]", "", where.removeprefix("job: "))
    config_key = _in_config(err)
    if isinstance(err, SpecError) and config_key and shown in ("model", "model_config"):
        return err.at(config_key).render(lang)
    if shown == "_" or not where.startswith("job: ") or error_input(path) != shown:
        return message
    return err.render(lang, located=False)


def _form_inputs() -> set[str]:
    return {k for k in messages() if not k.endswith("_help") and f"{k}_help" in messages()}


def _allowed(schema: dict[str, Any], components: dict[str, Any], lang: str = "en") -> str:
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if "items" in schema:
        return _allowed(schema["items"], components, lang) + messages()["api_repeat"][lang]
    if "enum" in schema:
        return ", ".join(map(str, schema["enum"]))
    return _api_text(str(schema.get("type", "")), lang)


def _api_text(text: str, lang: str) -> str:
    """An OpenAPI text (summary, description, response, parameter) in the reader's language: the schema is
    English for programs; the docs page reads it from messages.yaml `api_doc.*` (matched on the English words;
    tests/web/test_api.py checks that every text of the schema has one)."""
    if lang == "en" or not text:
        return text
    found = _api_texts().get(" ".join(text.split()))
    return found[lang] if found else text


def _api_texts() -> dict[str, dict[str, str]]:
    return {" ".join(v["en"].split()): v for k, v in messages().items() if k.startswith("api_doc.")}


def _operations(schema: dict[str, Any], lang: str = "en") -> list[dict[str, Any]]:
    import json

    components = schema.get("components", {}).get("schemas", {})
    ops = []
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            example = next(iter(body.get("examples", {}).values()), {}).get("value")
            ops.append({
                "id": op.get("operationId", path), "method": method.upper(), "path": path,
                "summary": _api_text(op.get("summary", ""), lang),
                "description": _api_text(op.get("description", ""), lang),
                "params": [{"name": p["name"], "in": _api_text(p["in"], lang),
                            "description": _api_text(p.get("description", ""), lang),
                            "allowed": _allowed(p.get("schema", {}), components, lang)}
                           for p in op.get("parameters", [])],
                "example": json.dumps(example, separators=(",", ":")) if example else "",
                "responses": [(code, _api_text(r.get("description", ""), lang))
                              for code, r in op.get("responses", {}).items()],
            })
    return ops


@router.get("/favicon.ico")
def favicon() -> Response:
    return Response(status_code=204)  # no icon; and no 404 in the browser's console


@router.get("/api-docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    """The API documentation, built here from the OpenAPI schema (no CDN-hosted viewer)."""
    lang = request_lang(request, request.query_params.get("lang"))
    ops = _operations(request.app.openapi(), lang)
    return templates.TemplateResponse(request, "apidocs.html", context(request, lang, operations=ops))


def _job_yaml(job: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(job, sort_keys=False, allow_unicode=True, width=100)


def _flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, dict):
            rows.extend(_flatten(v, f"{prefix}{k}."))
        elif v is not None:
            rows.append((f"{prefix}{k}", v))
    return rows


def _job_from_link(request: Request) -> tuple[str, dict[str, Any]]:
    token = request.query_params.get("job", "")
    job = decode_job(token, request.app.state.config.max_json_bytes)
    validate_job(job)
    return token, job


DOWNLOAD_LABELS = (("json", "JSON"), ("html", "HTML"), ("md", "Markdown"), ("xlsx", "Excel"), ("pdf", "PDF"))


def _toolbar(request: Request, lang: str, token: str, job: dict[str, Any], plan: dict[str, Any]) -> str:
    from trainsizer.web.downloads import pdf_unavailable

    pdf_missing = pdf_unavailable()
    downloads = [(f, label) for f, label in DOWNLOAD_LABELS if not (f == "pdf" and pdf_missing)]
    ties = [t for t in plan.get("ties") or [] if len(plan.get("ties") or []) > 1]
    ctx = context(request, lang, token=token, job_yaml=_job_yaml(job), downloads=downloads,
                  pdf_missing=pdf_missing, ties=ties)
    return templates.get_template("toolbar.html").render(ctx)


def _with_toolbar(report_html: str, toolbar: str) -> str:
    """The report page with the web page's bar (links, language, downloads) at the top of its body."""
    match = re.search(r"<body[^>]*>", report_html)
    at = match.end() if match else 0
    return report_html[:at] + toolbar + report_html[at:]


@router.get("/result", response_class=HTMLResponse)
async def result_page(request: Request) -> HTMLResponse:
    """The plan of a link: the HTML report (charts, diagram, tables) under a bar with the downloads."""
    lang = request_lang(request, request.query_params.get("lang"))
    try:
        token, job = _job_from_link(request)
        results = request.app.state.results
        plan = await results.plan(job, lang)
        report = (await results.file(job, PAGE, lang)).decode("utf-8")
    except TrainsizerError as err:
        values = form_from_job(job) if "job" in locals() else dict(DEFAULTS)
        return render_form(request, lang, values, {"_": render_error(err, lang)}, status=status_of(err))
    return HTMLResponse(_with_toolbar(report, _toolbar(request, lang, token, job, plan)))


@router.get("/download/{fmt}")
async def download(request: Request, fmt: str) -> Response:
    """One file of a plan: json, html, md (zip with chart images), xlsx, svg, pdf (when installed), yaml.
    A browser following the page's link gets a page saying why when the file cannot be made; a program the
    JSON error, as from the API."""
    try:
        return await _download(request, fmt)
    except TrainsizerError as err:
        if "text/html" not in request.headers.get("accept", ""):
            raise
        lang = request_lang(request, request.query_params.get("lang"))
        token = request.query_params.get("job", "")
        back = f"/result?job={token}&lang={lang}" if token else None
        ctx = context(request, lang, message=render_error(err, lang), back=back)
        return templates.TemplateResponse(request, "message.html", ctx, status_code=status_of(err))


async def _download(request: Request, fmt: str) -> Response:
    from trainsizer.web.downloads import FORMATS

    if fmt == "yaml":
        return download_yaml(request)
    if fmt not in FORMATS:
        raise NotFound(msg("web_unknown_format", fmt=fmt, allowed=", ".join([*FORMATS, "yaml"])), field="fmt")
    lang = request_lang(request, request.query_params.get("lang"))
    _token, job = _job_from_link(request)
    data = await request.app.state.results.file(job, fmt, lang)
    spec = FORMATS[fmt]
    name = f"trainsizer-plan-{job_key(job)}-{lang}.{spec.suffix}"
    return Response(data, media_type=spec.media_type, headers={"content-disposition": f'attachment; filename="{name}"'})


def download_yaml(request: Request) -> Response:
    """The job of a link as a job file: `trainsizer plan job.yaml` reproduces the page."""
    _token, job = _job_from_link(request)
    return Response(_job_yaml(job), media_type="application/x-yaml",
                    headers={"content-disposition": 'attachment; filename="trainsizer-job.yaml"'})
