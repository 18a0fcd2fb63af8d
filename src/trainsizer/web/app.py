"""The web app: `create_app(config)` -> a FastAPI application (pages, API, local static assets).

Served by `trainsizer serve` on uvicorn. Everything it shows comes from this package (no CDN); the
interactive API documentation is a local page built from the OpenAPI schema.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from trainsizer import __version__
from trainsizer.errors import TrainsizerError
from trainsizer.web.config import ServeConfig
from trainsizer.web.errors import ErrorBody, ErrorDetail, error_detail, status_of
from trainsizer.web.i18n import lang_of
from trainsizer.web.middleware import LimitsMiddleware
from trainsizer.web.pool import WorkerPool
from trainsizer.web.results import Results

log = logging.getLogger("trainsizer.web")


def _error(status: int, detail: ErrorDetail) -> JSONResponse:
    return JSONResponse(ErrorBody(error=detail).model_dump(mode="json"), status_code=status)


def _validation_detail(err: RequestValidationError) -> ErrorDetail:
    """FastAPI's own checks (query and path parameters) in the CLI's words: field, value, what is allowed."""
    first = err.errors()[0]
    loc = [str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body")]
    field = ".".join(loc) or None
    msg = str(first.get("msg", "invalid value"))
    value = first.get("input")
    expected = (first.get("ctx") or {}).get("expected")
    text = f"{field or 'request'}: {msg[:1].lower() + msg[1:]}"
    if value is not None and not isinstance(value, dict | list):
        text += f" (got {value!r})"
    text += "."
    if expected:
        text += f" Allowed: {expected}."
    return ErrorDetail(kind="spec", message=text, field=field, where=field,
                       value=value if isinstance(value, str | int | float | bool) else None,
                       allowed=str(expected) if expected else None)


def _lang(request: Request) -> str:
    """Errors in the request's language: ?lang=, else Accept-Language."""
    return lang_of(request.headers, request.query_params.get("lang"))


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(TrainsizerError)
    async def _user_error(request: Request, err: TrainsizerError) -> JSONResponse:
        return _error(status_of(err), error_detail(err, _lang(request)))

    @app.exception_handler(RequestValidationError)
    async def _bad_parameter(request: Request, err: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_detail(err))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        kind = "not_found" if err.status_code == 404 else "limit"
        return _error(err.status_code, ErrorDetail(kind=kind, message=f"{request.url.path}: {err.detail}"))

    @app.exception_handler(Exception)
    async def _bug(request: Request, err: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return _error(500, error_detail(err, _lang(request)))


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus the job file's own models (the request bodies read by hand in `api`)."""
    if app.openapi_schema:
        return app.openapi_schema
    from trainsizer.spec import Job

    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    job_schema = Job.model_json_schema(ref_template="#/components/schemas/{model}")
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, sub in job_schema.pop("$defs", {}).items():
        components.setdefault(name, sub)
    components["Job"] = job_schema
    app.openapi_schema = schema
    return schema


def create_app(config: ServeConfig | None = None) -> FastAPI:
    """A new app with its own worker pool (started and stopped with the app's lifespan)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.web import api, assets, pages

    config = config or ServeConfig()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await app.state.pool.start()
        try:
            yield
        finally:
            await app.state.pool.stop()

    app = FastAPI(title="trainsizer", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Size, cost and check hardware for AI training jobs. Bodies are job files as "
                              "JSON; errors name the field, the value and what is allowed.")
    app.state.config = config
    app.state.catalog = load_catalog(overlays=config.overlays)
    app.state.pool = WorkerPool(config)
    app.state.results = Results(app.state.pool, config.cache_entries)
    app.add_middleware(LimitsMiddleware, max_json_bytes=config.max_json_bytes,
                       max_upload_bytes=config.max_upload_bytes)
    _install_errors(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.add_api_route(assets.plotly_url(), assets.plotly_asset, methods=["GET"], include_in_schema=False)
    static = resources.files("trainsizer.web").joinpath("static")
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app
