"""The web page and HTTP API (`trainsizer serve`): a form for people, JSON for scripts."""

from trainsizer.web.app import create_app
from trainsizer.web.config import ServeConfig

__all__ = ["ServeConfig", "create_app"]
