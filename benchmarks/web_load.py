"""Load on `trainsizer serve` over loopback: C concurrent clients each asking for P plans (POST /api/plan).

Starts the server itself on 127.0.0.1 (a free port; nothing else is ever contacted), then runs two phases:
  cold:   each of the D distinct fine-tuning jobs once, all at the same time (every plan is searched);
  steady: C clients x P plans over the same D jobs (plans already made are served from the server's cache,
          as a result page and its downloads are).
Prints the server's start-up time (until it answers; its workers have warmed up by then), then per phase: requests, errors by status, latency p50 / p90 / p99 / max and requests per second.
Bounded: at most C x P requests, a per-request timeout and a whole-run deadline; the server is stopped at
the end whatever happens.

Run: python benchmarks/web_load.py [--clients 50] [--plans 20] [--distinct 20] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter

import httpx2 as httpx

HOST = "127.0.0.1"  # loopback only
# Typical fine-tuning jobs: 7-14B models, LoRA / QLoRA / full SFT, 0.2-2 B tokens.
MODELS = ("llama-3.1-8b", "qwen2.5-7b", "mistral-7b", "qwen2.5-14b", "llama-2-7b")
METHODS = (("lora", 16), ("qlora", 64), ("full", 0), ("lora", 64))


def jobs(n: int) -> list[dict]:
    out = []
    for i in range(n):
        method, rank = METHODS[i % len(METHODS)]
        job = {"name": f"load job {i}", "model": MODELS[i % len(MODELS)], "method": method,
               "data": {"tokens": 2e8 * (1 + i % 10)}, "seq_len": 4096, "global_batch": {"sequences": 64},
               "goal": {"deadline_days": 7, "procurement": "rent"}}
        if rank:
            job["lora"] = {"rank": rank}
        out.append(job)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int | None) -> subprocess.Popen:
    args = [sys.executable, "-c", "import sys; from trainsizer.cli import main; sys.exit(main())", "serve",
            "--host", HOST, "--port", str(port), "--time-limit", "120"]
    if workers:
        args += ["--workers", str(workers)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ | {"PYTHONUNBUFFERED": "1"})


async def wait_ready(base: str, deadline_s: float = 120) -> None:
    async with httpx.AsyncClient() as c:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                if (await c.get(f"{base}/api/catalog")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise SystemExit("server did not start")


async def phase(base: str, work: list[list[dict]], timeout_s: float) -> tuple[list[float], Counter, float]:
    latencies: list[float] = []
    errors: Counter = Counter()
    limits = httpx.Limits(max_connections=len(work))
    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as c:
        async def client(todo: list[dict]) -> None:
            for job in todo:
                t = time.perf_counter()
                try:
                    r = await c.post(f"{base}/api/plan", json=job)
                    # The client checks, not parses, the plan: it shares the machine's cores with the server.
                    if r.status_code != 200 or b'"schema_version"' not in r.content[:200]:
                        errors[str(r.status_code)] += 1
                except httpx.HTTPError as err:
                    errors[type(err).__name__] += 1
                latencies.append(time.perf_counter() - t)

        start = time.perf_counter()
        await asyncio.gather(*(client(todo) for todo in work))
    return latencies, errors, time.perf_counter() - start


def report(name: str, latencies: list[float], errors: Counter, wall_s: float) -> None:
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    print(f"{name:7s} requests {len(latencies):5d}  errors {sum(errors.values()):3d} {dict(errors) or ''}  "
          f"p50 {q[49]:6.2f} s  p90 {q[89]:6.2f} s  p99 {q[98]:6.2f} s  max {max(latencies):6.2f} s  "
          f"{len(latencies) / wall_s:7.1f} req/s  ({wall_s:.1f} s)")


async def run(args: argparse.Namespace) -> int:
    port = free_port()
    base = f"http://{HOST}:{port}"
    started = time.perf_counter()
    server = start_server(port, args.workers)
    try:
        await wait_ready(base)
        distinct = jobs(args.distinct)
        print(f"server {base}, {os.cpu_count()} CPUs, ready in {time.perf_counter() - started:.1f} s (workers "
              f"warmed up); {args.distinct} distinct fine-tuning jobs; {args.clients} clients x {args.plans} plans")
        lat, err, wall = await asyncio.wait_for(phase(base, [[j] for j in distinct], args.timeout), args.deadline)
        report("cold", lat, err, wall)
        work = [[distinct[(c * args.plans + i) % len(distinct)] for i in range(args.plans)] for c in range(args.clients)]
        lat2, err2, wall2 = await asyncio.wait_for(phase(base, work, args.timeout), args.deadline)
        report("steady", lat2, err2, wall2)
        return 1 if err or err2 else 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--plans", type=int, default=20, help="plans per client")
    p.add_argument("--distinct", type=int, default=20, help="distinct jobs among the requests")
    p.add_argument("--workers", type=int, default=None, help="server worker processes (default: serve's)")
    p.add_argument("--timeout", type=float, default=300, help="per request, s")
    p.add_argument("--deadline", type=float, default=1800, help="per phase, s")
    args = p.parse_args()
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
