"""Bounded work: a few worker processes run plans, estimates and downloads; one user cannot stall the server.

A plan is CPU-bound Python and numpy, so it runs in a process, not a thread: the event loop stays free,
the cores are used, and a task past the time limit is ended by killing its process (a thread cannot be
stopped). Requests wait for a free worker for at most `queue_timeout_s`, and at most `max_waiting` wait at
once; past either limit the answer is 'busy' (503) at once rather than a growing queue.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from trainsizer.messages import msg
from trainsizer.web.config import ServeConfig
from trainsizer.web.errors import Busy, Refused, TimeLimit

log = logging.getLogger("trainsizer.web")

# forkserver: workers fork from a clean process that preloaded trainsizer, not from the threaded server.
# The planning code is imported there once (~1 s), so that no worker, a replacement included, imports it again.
_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(["trainsizer.web.tasks", "trainsizer.scenario", "trainsizer.evaluate", "trainsizer.plan.core"])


class WorkerCrashed(Exception):
    """A worker process died without an answer (a bug or the OS killing it)."""


# the first message of a worker, once it has loaded (and warmed up): the pool hands it out only then
READY = ("ready", None)


def _serve(conn: Connection, overlays: tuple[Path, ...], warm_up: bool) -> None:
    from trainsizer.web import tasks

    tasks.init(overlays, warm_up)
    conn.send(READY)
    while True:
        try:
            name, payload = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(tasks.run(name, payload))


class _Worker:
    def __init__(self, overlays: tuple[Path, ...], warm_up: bool, ready_timeout_s: float) -> None:
        self.conn, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=_serve, args=(child, overlays, warm_up), daemon=True)
        self.proc.start()
        child.close()
        self._wait_ready(ready_timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        """Blocking until the worker says it is ready; a worker that dies or hangs while starting is stopped."""
        try:
            if self.conn.poll(timeout_s) and self.conn.recv() == READY:
                return
        except (EOFError, OSError):
            pass
        self.stop()
        raise WorkerCrashed(f"a worker did not start within {timeout_s:g} s")

    def call(self, name: str, payload: Any, timeout_s: float) -> tuple[str, Any]:
        """Blocking: send one task and wait for its answer, at most `timeout_s`."""
        try:
            self.conn.send((name, payload))
        except OSError:  # a worker that died while idle
            raise WorkerCrashed from None
        if not self.conn.poll(timeout_s):
            raise TimeoutError
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise WorkerCrashed from None

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()


class WorkerPool:
    """`await pool.run(task, payload)` -> the task's result; raises Busy, TimeLimit or the task's error."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: list[_Worker] = []
        self._waiting = 0
        self._lock = threading.Lock()

    async def start(self) -> None:
        self._idle = asyncio.Queue()
        workers = await asyncio.gather(*(asyncio.to_thread(self._spawn, self.config.warm_up)
                                         for _ in range(self.config.workers)))
        for w in workers:
            self._idle.put_nowait(w)

    def _spawn(self, warm_up: bool) -> _Worker:
        w = _Worker(self.config.overlays, warm_up, self.config.start_timeout_s)
        with self._lock:
            self._all.append(w)
        return w

    def _replace(self, dead: _Worker) -> _Worker:
        """A new worker for one that timed out or died; not warmed up, so the request's error is not delayed
        by a warm-up plan (its first plan is then a cold one)."""
        dead.stop()
        with self._lock:
            if dead in self._all:
                self._all.remove(dead)
        return self._spawn(warm_up=False)

    async def stop(self) -> None:
        with self._lock:
            workers, self._all = list(self._all), []
        for w in workers:
            await asyncio.to_thread(w.stop)

    async def run(self, name: str, payload: Any) -> Any:
        assert self._idle is not None, "pool not started"
        cfg = self.config
        if self._waiting >= cfg.max_waiting:
            raise Busy(msg("web_busy_waiting", waiting=self._waiting))
        self._waiting += 1
        try:
            worker = await asyncio.wait_for(self._idle.get(), cfg.queue_timeout_s)
        except TimeoutError:
            raise Busy(msg("web_busy_no_worker", seconds=f"{cfg.queue_timeout_s:g}")) from None
        finally:
            self._waiting -= 1
        # The thread gives the worker back itself: a cancelled request (client gone) must not return a
        # worker that is still busy with its task.
        loop = asyncio.get_running_loop()
        status, value = await asyncio.to_thread(self._call, worker, name, payload, loop)
        if status == "ok":
            return value
        if status == "user_error":
            raise Refused(value["detail"], value["status"])
        log.error("%s failed inside a worker:\n%s", name, value)
        raise RuntimeError(f"{name} failed inside a worker")

    def _call(self, worker: _Worker, name: str, payload: Any, loop: asyncio.AbstractEventLoop) -> tuple[str, Any]:
        assert self._idle is not None
        try:
            return worker.call(name, payload, self.config.task_timeout_s)
        except TimeoutError:
            worker = self._replace(worker)
            limit = self.config.task_timeout_s
            raise TimeLimit(msg("web_time_limit", task=name, seconds=f"{limit:g}")) from None
        except WorkerCrashed:
            worker = self._replace(worker)
            raise RuntimeError(f"the worker running {name} died") from None
        finally:
            loop.call_soon_threadsafe(self._idle.put_nowait, worker)
