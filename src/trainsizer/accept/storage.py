"""Check 5a: storage write and (cold) read throughput on the planned path; fio when present.

Without fio: one sequential stream of 4 MiB writes with fsync, then a cold read (coldcache.py).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from trainsizer.accept import coldcache, fio
from trainsizer.accept.context import Context
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg

BLOCK = coldcache.BLOCK


def base_dir(ctx: Context) -> Path:
    path = ctx.options.storage_path or ctx.criteria.storage_path
    return Path(path) if path else Path(tempfile.gettempdir())


def write_random(path: Path, size_bytes: int, seed: int = 0) -> tuple[float, str]:
    """Write `size_bytes` of random data (not compressible or dedupable), fsync; (seconds, sha256)."""
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        left = size_bytes
        while left > 0:
            chunk = rng.bytes(min(BLOCK, left))
            h.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            left -= len(chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0, h.hexdigest()


def dataset_read(ctx: Context, dataset: Path) -> CheckResult:
    """Cold read of the planned dataset's own files (up to the storage size), hashed as they are read."""
    crit = ctx.criteria
    if not dataset.exists():
        return ctx.result("storage.dataset_read", "error", why=msg("acc_why_dataset_missing", path=str(dataset)))
    files = [dataset] if dataset.is_file() else sorted(f for f in dataset.rglob("*") if f.is_file())
    chosen, total = [], 0
    for f in files:
        if total >= ctx.options.storage_size_bytes:
            break
        chosen.append(f)
        total += f.stat().st_size
    if not total:
        return ctx.skipped("storage.dataset_read", msg("acc_why_no_data", path=str(dataset)), limit=crit.storage_read_gb_s_min)
    try:
        seconds, _, method = coldcache.cold_read(chosen)
    except OSError as err:  # e.g. a file we may not read
        return ctx.result("storage.dataset_read", "error",
                          why=msg("acc_why_read_error", path=str(err.filename or dataset), error=str(err.strerror)))
    return ctx.at_least("storage.dataset_read", round(total / seconds / 1e9, 4), crit.storage_read_gb_s_min, "GB/s",
                        msg("acc_what_dataset_read", files=len(chosen), gb=f"{total / 1e9:.3g}", path=str(dataset),
                            method=coldcache.METHOD_NOTES[method]),
                        details={"path": str(dataset), "files": len(chosen), "bytes": total, "cold_cache": method,
                                 "calibration": False})


def run(ctx: Context) -> list[CheckResult]:
    crit = ctx.criteria
    dataset = ctx.options.dataset_path or crit.dataset_path
    extra = [dataset_read(ctx, Path(dataset))] if dataset else []
    return [*_throughput(ctx), *extra]


def _throughput(ctx: Context) -> list[CheckResult]:
    crit = ctx.criteria
    base = base_dir(ctx)
    if not base.is_dir():
        return [ctx.result(n, "error", why=msg("acc_why_path_missing", path=str(base)))
                for n in ("storage.write", "storage.read")]
    size = ctx.options.storage_size_bytes
    with tempfile.TemporaryDirectory(prefix="trainsizer-storage-", dir=base) as tmp:
        d = Path(tmp)
        if fio.available():
            try:
                w, w_direct = fio.run(d, "write", size)
                r, r_direct = fio.run(d, "read", size)
            except (RuntimeError, ValueError, OSError) as err:
                return [ctx.result(n, "error", why=str(err)) for n in ("storage.write", "storage.read")]
            common = {"method": "fio", "fio_version": w.version, "path": str(base), "size_bytes": size}
            read_what = msg("acc_what_fio_read", direct=int(r_direct), path=str(base))
            return [
                ctx.at_least("storage.write", round(w.gb_s, 4), crit.storage_write_gb_s_min, "GB/s",
                             msg("acc_what_fio_write", direct=int(w_direct), path=str(base)),
                             details={**common, "direct": w_direct}),
                ctx.at_least("storage.read", round(r.gb_s, 4), crit.storage_read_gb_s_min, "GB/s",
                             read_what if r_direct else msg("acc_what_fio_buffered", what=read_what),
                             details={**common, "direct": r_direct}),
            ]
        f = d / "stream.bin"
        try:
            w_s, digest = write_random(f, size)
            r_s, digests, method = coldcache.cold_read([f])
        except OSError as err:  # e.g. no space left: an error of these two checks, not of the whole group
            return [ctx.result(n, "error", why=msg("acc_why_io_error", error=str(err.strerror or err), path=str(base)))
                    for n in ("storage.write", "storage.read")]
        common = {"method": "python", "path": str(base), "size_bytes": size, "cold_cache": method}
        out = [
            ctx.at_least("storage.write", round(size / w_s / 1e9, 4), crit.storage_write_gb_s_min, "GB/s",
                         msg("acc_what_py_write", path=str(base)), details=common),
            ctx.at_least("storage.read", round(size / r_s / 1e9, 4), crit.storage_read_gb_s_min, "GB/s",
                         msg("acc_what_py_read", path=str(base), method=coldcache.METHOD_NOTES[method]), details=common),
        ]
        if digests[f] != digest:
            out[1].status = "fail"
            ctx.explain(out[1], msg("acc_why_readback_differs"))
        return out
