"""plotly.js for the result pages, served by this app (no CDN) at an address that names plotly's version, so
browsers may keep it a year: a new plotly is a new address. The HTML download keeps it inlined (offline file)."""

from __future__ import annotations

from functools import cache
from importlib.metadata import version

from fastapi import Response

# a year, the longest cache RFC 9111 implementations honour in practice; `immutable`: never revalidate
CACHE_CONTROL = "public, max-age=31536000, immutable"


@cache
def plotly_url() -> str:
    return f"/assets/plotly-{version('plotly')}.min.js"


@cache
def _plotly_bytes() -> bytes:
    from trainsizer.render.report.charts import plotly_js

    return plotly_js().encode("utf-8")


def plotly_asset() -> Response:
    return Response(_plotly_bytes(), media_type="text/javascript; charset=utf-8",
                    headers={"cache-control": CACHE_CONTROL})
