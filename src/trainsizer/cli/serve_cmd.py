"""`trainsizer serve`: the web page and HTTP API on uvicorn (localhost unless told otherwise)."""

from __future__ import annotations

import click

from trainsizer.cli.app import AppState
from trainsizer.cli_support import HelpCommand


@click.command(cls=HelpCommand)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--workers", type=click.IntRange(1, 64), default=None)
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(1, 3600), default=30.0, show_default=True)
@click.option("--max-upload-kib", type=click.IntRange(1, 65536), default=1024, show_default=True)
@click.pass_obj
def serve(app: AppState, host: str, port: int, workers: int | None, time_limit_s: float,
          max_upload_kib: int) -> None:
    from trainsizer.render.i18n import t

    try:  # the web extra (pyproject [web]: fastapi, uvicorn, python-multipart) is not in the base install
        import uvicorn

        from trainsizer.web import ServeConfig, create_app
    except ImportError as err:
        raise click.ClickException(t("serve_needs_web", app.lang).format(module=err.name or err)) from None

    kwargs = {"workers": workers} if workers else {}
    config = ServeConfig(task_timeout_s=time_limit_s, max_upload_bytes=max_upload_kib * 1024,
                         overlays=tuple(app.overlays), **kwargs)
    web_app = create_app(config)
    click.echo(t("serve_started", app.lang).format(url=f"http://{host}:{port}", workers=config.workers))
    uvicorn.run(web_app, host=host, port=port, log_level="info", timeout_graceful_shutdown=5)
