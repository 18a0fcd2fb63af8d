from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("fastapi", reason="web extra not installed (pip install -e '.[web]')")

from fastapi.testclient import TestClient  # noqa: E402

from trainsizer.web import ServeConfig, create_app  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def example(name: str) -> dict:
    return yaml.safe_load((REPO / "examples" / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def client() -> Iterator[TestClient]:
    """One app (two worker processes) for the whole session: workers take a few seconds to start (they warm up)."""
    app = create_app(ServeConfig(workers=2))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def live_server() -> Iterator[str]:
    """The app on uvicorn in a thread, on a free loopback port: what `trainsizer serve` runs."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(create_app(ServeConfig(workers=2)), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(600):  # started within a minute even on a loaded machine (workers import numpy)
        if server.started:
            break
        time.sleep(0.1)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)
