"""Check 4: all-reduce / all-gather / reduce-scatter bus bandwidth, in a node and across nodes.

nccl-tests binaries when present (NCCL backend, one node), else the torch benchmark under torchrun
(collective_bench.py). The gate is busbw at the largest message size (docs/acceptance.md section 0 item 3).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from trainsizer.accept import nccltests
from trainsizer.accept.context import Context
from trainsizer.accept.criteria import OPS
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg


def torchrun_command(ctx: Context, out: Path, python: str = sys.executable, group_size: int = 0) -> list[str]:
    """torchrun invocation of the benchmark (standalone on one node, c10d rendezvous across nodes); in groups of
    `group_size` ranks when given (the scale-up domains of a node)."""
    o = ctx.options
    cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={o.nproc}"]
    if o.nnodes == 1 and not o.rdzv_endpoint:
        cmd.append("--standalone")
    else:
        cmd += [f"--nnodes={o.nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={o.rdzv_endpoint}",
                f"--rdzv-id={o.rdzv_id}", "--max-restarts=0"]
    cmd += ["-m", "trainsizer.accept.collective_bench", f"--backend={o.backend}",
            f"--max-bytes={o.collective_max_bytes}", f"--min-bytes={min(2**16, o.collective_max_bytes)}",
            f"--iters={o.collective_iters}", f"--timeout-s={o.collective_timeout_s}", f"--out={out}"]
    return cmd + ([f"--group-size={group_size}"] if group_size else [])


def _run(cmd: list[str], timeout_s: float, env: dict | None = None) -> tuple[int | None, str]:
    """Run in its own process group, which is killed once the command ends, times out or we are interrupted
    (a worker torchrun left behind, or Ctrl-C here, must not leave processes holding ports and GPUs).
    (None, output) on timeout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        return None, out
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        _kill_group(proc.pid)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is empty: nothing left behind
        pass


def _verdicts(ctx: Context, rows_by_op: dict[str, list[dict]], unsupported: dict[str, str], scope: str,
              meta: dict) -> list[CheckResult]:
    limits = getattr(ctx.criteria, f"busbw_{scope}_gb_s_min")
    out = []
    wrong = 0
    for op in OPS:
        name = f"collectives.{op}.{scope}"
        rows = rows_by_op.get(op, [])
        if meta["ranks"] < 2:
            out.append(ctx.skipped(name, msg("acc_why_one_rank"), limit=getattr(limits, op)))
            continue
        if op in unsupported:
            out.append(ctx.skipped(name, msg("acc_why_cannot_run", tool=meta["tool"], op=op, reason=unsupported[op]),
                                   limit=getattr(limits, op)))
            continue
        if not rows:
            continue
        largest = max(r["size_bytes"] for r in rows)
        busbw = max(r["busbw_gb_s"] for r in rows if r["size_bytes"] == largest)
        wrong += sum(r.get("wrong") or 0 for r in rows)
        details = {**meta, "rows": rows, "size_bytes": largest,
                   "calibration": meta["backend"] == "nccl"}  # gloo/CPU figures are not a GPU fabric
        what = msg("acc_what_busbw", op=op, size=largest, tool=meta["tool"], backend=meta["backend"],
                   ranks=meta["ranks"])
        if meta.get("group_size"):
            what = msg("acc_what_busbw_groups", what=what, size=meta["group_size"],
                       groups=meta["ranks"] // meta["group_size"])
        res = ctx.at_least(name, round(busbw, 3), getattr(limits, op), "GB/s", what, details=details)
        out.append(res)
    if rows_by_op:
        out.append(ctx.result(f"collectives.correctness.{scope}", "fail" if wrong else "pass", measured=wrong,
                              threshold=0, unit="wrong elements", source="nccl-tests #wrong == 0",
                              why=msg("acc_why_wrong_elements", wrong=wrong)))
    return out


def _nccl_tests(ctx: Context, ngpus: int) -> list[CheckResult] | None:
    """Run the nccl-tests binaries when all three are on PATH; None when they are not."""
    bins = {op: shutil.which(f"{op}_perf") for op in OPS}
    if not all(bins.values()):
        return None
    rows_by_op: dict[str, list[dict]] = {}
    errors = []
    for op, binary in bins.items():
        top = ctx.options.collective_max_bytes
        cmd = [binary, "-b", str(min(2**20, top)), "-e", str(top), "-f", "2", "-g", str(ngpus),
               "-c", "1", "-n", str(max(ctx.options.collective_iters, 5))]
        rc, text = _run(cmd, ctx.options.collective_timeout_s)
        parsed = nccltests.parse_text(text)
        if rc is None or not parsed.rows:  # this collective is an error; the others still count
            errors.append(ctx.result(f"collectives.{op}.intra", "error",
                                     why=msg("acc_why_tool_timed_out", tool=Path(binary).name, output=text.strip()[-300:])
                                     if rc is None else msg("acc_why_tool_exited", tool=Path(binary).name, rc=rc,
                                                            output=text.strip()[-300:]), details={"command": cmd}))
            continue
        rows_by_op[op] = [{"size_bytes": r.size_bytes, "time_us": r.time_us, "algbw_gb_s": r.algbw_gb_s,
                           "busbw_gb_s": r.busbw_gb_s, "wrong": r.wrong} for r in parsed.rows]
    meta = {"tool": "nccl-tests", "backend": "nccl", "ranks": ngpus}
    return [*_verdicts(ctx, rows_by_op, {}, "intra", meta), *errors]


def run(ctx: Context) -> list[CheckResult]:
    o = ctx.options
    scope = "inter" if o.nnodes > 1 else "intra"
    names = [f"collectives.{op}.{scope}" for op in OPS]
    try:
        import torch
    except ImportError:
        torch = None
    cuda = bool(torch is not None and torch.cuda.is_available())
    if o.backend == "nccl" and scope == "intra" and cuda:
        done = _nccl_tests(ctx, torch.cuda.device_count())
        if done is not None:
            return done + _domain(ctx)
    if torch is None:
        return [ctx.skipped(n, msg("acc_why_no_torch")) for n in names]
    if o.backend == "nccl" and not cuda:
        return [ctx.skipped(n, msg("acc_why_nccl_needs_cuda"))
                for n in names]
    out = _torchrun(ctx, scope)
    return out + (_domain(ctx) if scope == "intra" else [])


def _domain(ctx: Context) -> list[CheckResult]:
    """The rings inside each scale-up domain of a node whose domain is smaller than the node (NVLink-bridged pairs
    of PCIe cards), all at once, judged on the bridge's floors; none where the criteria name no such domain."""
    k, nproc = ctx.criteria.scaleup_domain_gpus, ctx.options.nproc
    if k is None or nproc <= k:
        return []
    if nproc % k:
        limits = ctx.criteria.busbw_domain_gb_s_min
        return [ctx.skipped(f"collectives.{op}.domain", msg("acc_why_domain_not_whole", nproc=nproc, domain=k),
                            limit=getattr(limits, op)) for op in OPS]
    return _torchrun(ctx, "domain", group_size=k)


def _torchrun(ctx: Context, scope: str, group_size: int = 0) -> list[CheckResult]:
    """The torch benchmark under torchrun, judged on the floors of `scope` (intra / domain / inter)."""
    o = ctx.options
    names = [f"collectives.{op}.{scope}" for op in OPS]
    with tempfile.TemporaryDirectory(prefix="trainsizer-coll-") as tmp:
        out = Path(tmp) / "collectives.json"
        cmd = torchrun_command(ctx, out, group_size=group_size)
        rc, text = _run(cmd, o.collective_timeout_s + 60)
        if rc is None or rc != 0 or not out.exists():
            output = text.strip()[-400:]
            why = msg("acc_why_timed_out", output=output) if rc is None else msg(
                "acc_why_tool_exited", tool="torchrun", rc=rc, output=output)
            return [ctx.result(n, "error", why=why, details={"command": cmd})
                    for n in names]
        doc = json.loads(out.read_text())
    rows_by_op: dict[str, list[dict]] = {}
    for r in doc["results"]:
        rows_by_op.setdefault(r["op"], []).append({k: v for k, v in r.items() if k != "op"})
    meta = {"tool": "torch.distributed under torchrun", "backend": doc["backend"], "ranks": doc["world_size"],
            "nnodes": doc["nnodes"], "hosts": doc["hosts"], "command": cmd}
    if group_size:
        meta["group_size"] = group_size
    return _verdicts(ctx, rows_by_op, doc.get("unsupported", {}), scope, meta)
