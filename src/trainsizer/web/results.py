"""Finished plans and their rendered files, kept for the result page and its downloads (bounded LRU).

A result page and its downloads ask for the same plan; the plan is computed once (concurrent requests for
the same job wait for the one computation) and rendered files are kept per (job, format, language).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

from trainsizer.messages import msg
from trainsizer.plan.texts import localise
from trainsizer.web.errors import TimeLimit
from trainsizer.web.pool import WorkerPool
from trainsizer.web.token import job_key


def _in_language(plan: dict[str, Any], lang: str) -> dict[str, Any]:
    data = localise(plan, lang)
    return {"plan": data, "json": json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")}


class _Lru:
    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.size:
            self.items.popitem(last=False)


class Results:
    def __init__(self, pool: WorkerPool, entries: int) -> None:
        self.pool = pool
        self._plans = _Lru(entries)
        self._files = _Lru(max(4, entries // 4))  # rendered HTML carries its charts' script: keep fewer
        self._inflight: dict[Any, asyncio.Future[Any]] = {}

    async def _once(self, key: Any, cache: _Lru, task: str, payload: dict[str, Any]) -> Any:
        hit = cache.get(key)
        if hit is not None:
            return hit
        if key in self._inflight:
            return await asyncio.shield(self._inflight[key])
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # no "never retrieved" warnings
        self._inflight[key] = future
        try:
            value = await self.pool.run(task, payload)
        except BaseException as err:
            future.set_exception(err)
            raise
        finally:
            del self._inflight[key]
        cache.put(key, value)
        future.set_result(value)
        return value

    async def _plan(self, job: dict[str, Any], lang: str) -> dict[str, Any]:
        # One search per job: the plan is made in English and its sentences are written in `lang` from the
        # catalogue messages it stores (plan.texts), so switching the page's language does not search again.
        made = await self._once(("plan", job_key(job)), self._plans, "plan",
                                {"job": job, "lang": "en", "error_lang": lang})
        if lang == "en":
            return made
        key = ("plan", job_key(job), lang)
        hit = self._plans.get(key)
        if hit is None:
            hit = await asyncio.to_thread(_in_language, made["plan"], lang)
            self._plans.put(key, hit)
        return hit

    async def plan(self, job: dict[str, Any], lang: str) -> dict[str, Any]:
        return (await self._plan(job, lang))["plan"]

    async def plan_json(self, job: dict[str, Any], lang: str) -> bytes:
        """The plan as JSON bytes, serialised once (a plan with its options is a few hundred KB)."""
        return (await self._plan(job, lang))["json"]

    async def file(self, job: dict[str, Any], fmt: str, lang: str) -> bytes:
        if fmt == "json":
            return await self.plan_json(job, lang)
        plan = await self.plan(job, lang)
        try:
            return await self._once(("file", job_key(job), fmt, lang), self._files, "render",
                                    {"plan": plan, "fmt": fmt, "lang": lang})
        except TimeLimit:  # the plan is made: say so, and how to get the file anyway (not "narrow the job")
            seconds = f"{self.pool.config.task_timeout_s:g}"
            raise TimeLimit(msg("web_time_limit_file", fmt=fmt.upper(), seconds=seconds)) from None
