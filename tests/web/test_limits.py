"""Bounded work: a task past the time limit is stopped with a clear error and its worker replaced; requests
beyond the waiting room are refused at once; a bug is a short 500 JSON without a traceback."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.testclient import TestClient

from trainsizer.web import ServeConfig, create_app
from trainsizer.web import tasks as tasks_module
from trainsizer.web.errors import Busy
from trainsizer.web.pool import WorkerPool

from .conftest import example


def test_time_limit_stops_the_task_and_replaces_the_worker():
    # 1 ms is less than any estimate takes (a process round trip plus the model's arithmetic).
    app = create_app(ServeConfig(workers=1, task_timeout_s=0.001, warm_up=False))
    with TestClient(app, raise_server_exceptions=False) as c:
        first = app.state.pool._all[0]
        r = c.post("/api/fit", json=example("sft-70b-16gpu.yaml"))
        assert r.status_code == 503
        err = r.json()["error"]
        assert err["kind"] == "limit" and "limit of 0.001 s" in err["message"]
        assert "Traceback" not in r.text
        pool = app.state.pool
        assert len(pool._all) == 1 and pool._all[0] is not first
        assert pool._all[0].proc.is_alive() and not first.proc.is_alive()


def test_requests_beyond_the_wait_are_refused_at_once():
    async def scenario() -> None:
        pool = WorkerPool(ServeConfig(workers=1, queue_timeout_s=0.05, warm_up=False))
        await pool.start()
        try:
            held = await pool._idle.get()  # the only worker is busy
            with pytest.raises(Busy, match="busy"):
                await pool.run("estimate", {"job": example("lora-8b-one-gpu.yaml")})
            pool._idle.put_nowait(held)
            result = await pool.run("estimate", {"job": example("lora-8b-one-gpu.yaml")})
            assert result["memory"]["fits"] in (True, False)
        finally:
            await pool.stop()

    asyncio.run(scenario())


def test_waiting_room_is_bounded():
    async def scenario() -> None:
        pool = WorkerPool(ServeConfig(workers=1, max_waiting=1, queue_timeout_s=5, warm_up=False))
        await pool.start()
        try:
            held = await pool._idle.get()
            waiting = asyncio.ensure_future(pool.run("estimate", {"job": example("lora-8b-one-gpu.yaml")}))
            await asyncio.sleep(0)  # the first waiter takes the only place
            with pytest.raises(Busy, match="waiting"):
                await pool.run("estimate", {"job": example("lora-8b-one-gpu.yaml")})
            pool._idle.put_nowait(held)
            assert (await waiting)["job"]
        finally:
            await pool.stop()

    asyncio.run(scenario())


def test_a_bug_in_a_task_is_reported_not_raised():
    status, value = tasks_module.run("estimate", {"job": None})
    assert status == "bug" and "Traceback" in value
    status, value = tasks_module.run("estimate", {"job": {"model": "nope"}})
    assert status == "user_error" and value["status"] == 422 and value["detail"]["field"]


def test_internal_errors_are_short_json():
    app = create_app(ServeConfig(workers=1, warm_up=False))

    @app.get("/boom")
    def boom() -> None:
        raise ZeroDivisionError("secret detail")

    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
    assert r.status_code == 500
    assert r.json()["error"]["kind"] == "internal"
    assert "secret" not in r.text and "Traceback" not in r.text


def test_warm_up_plans_the_form_default_job(monkeypatch, caplog):
    """The warm-up job is the form's default (a valid job), planned once; a failing warm-up is logged and the
    worker still starts (its first real plan is then only slower)."""
    from trainsizer.web.form import DEFAULTS, job_from_form
    from trainsizer.web.jobinput import validate_job

    validate_job(job_from_form(DEFAULTS, None))
    asked: list[tuple[str, dict]] = []
    monkeypatch.setattr(tasks_module, "run", lambda name, payload: asked.append((name, payload)) or ("bug", "boom"))
    tasks_module.init(warm_up=True)
    assert [name for name, _ in asked] == ["plan"] and asked[0][1]["job"] == job_from_form(DEFAULTS, None)
    assert "warm-up plan failed" in caplog.text and "boom" in caplog.text
    asked.clear()
    tasks_module.init(warm_up=False)
    assert asked == []


def test_a_worker_that_cannot_start_is_a_clear_failure(monkeypatch):
    from trainsizer.web import pool as pool_module

    monkeypatch.setattr(pool_module, "READY", ("never", None))   # the worker's greeting is not the one awaited
    with pytest.raises(pool_module.WorkerCrashed, match="did not start"):
        pool_module._Worker((), warm_up=False, ready_timeout_s=60)
