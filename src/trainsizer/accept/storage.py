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
        return ctx.result("storage.dataset_read", "error", why=f"dataset path {dataset} does not exist")
    files = [dataset] if dataset.is_file() else sorted(f for f in dataset.rglob("*") if f.is_file())
    chosen, total = [], 0
    for f in files:
        if total >= ctx.options.storage_size_bytes:
            break
        chosen.append(f)
        total += f.stat().st_size
    if not total:
        return ctx.skipped("storage.dataset_read", f"no data under {dataset}", limit=crit.storage_read_gb_s_min)
    try:
        seconds, _, method = coldcache.cold_read(chosen)
    except OSError as err:  # e.g. a file we may not read
        return ctx.result("storage.dataset_read", "error", why=f"reading {err.filename or dataset}: {err.strerror}")
    return ctx.at_least("storage.dataset_read", round(total / seconds / 1e9, 4), crit.storage_read_gb_s_min, "GB/s",
                        f"cold read of {len(chosen)} dataset files ({total / 1e9:.3g} GB) under {dataset}, "
                        f"{coldcache.METHOD_NOTES[method]}",
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
        return [ctx.result(n, "error", why=f"storage path {base} does not exist")
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
            note = "" if r_direct else "; LIMITATION: filesystem refused O_DIRECT, fio read buffered (may be warm)"
            return [
                ctx.at_least("storage.write", round(w.gb_s, 4), crit.storage_write_gb_s_min, "GB/s",
                             f"fio sequential write (direct={int(w_direct)}, end_fsync) on {base}",
                             details={**common, "direct": w_direct}),
                ctx.at_least("storage.read", round(r.gb_s, 4), crit.storage_read_gb_s_min, "GB/s",
                             f"fio sequential read (direct={int(r_direct)}) on {base}{note}",
                             details={**common, "direct": r_direct}),
            ]
        f = d / "stream.bin"
        try:
            w_s, digest = write_random(f, size)
            r_s, digests, method = coldcache.cold_read([f])
        except OSError as err:  # e.g. no space left: an error of these two checks, not of the whole group
            return [ctx.result(n, "error", why=f"{err.strerror or err} on {base}")
                    for n in ("storage.write", "storage.read")]
        common = {"method": "python", "path": str(base), "size_bytes": size, "cold_cache": method}
        out = [
            ctx.at_least("storage.write", round(size / w_s / 1e9, 4), crit.storage_write_gb_s_min, "GB/s",
                         f"sequential 4 MiB writes + fsync on {base} (fio not found)", details=common),
            ctx.at_least("storage.read", round(size / r_s / 1e9, 4), crit.storage_read_gb_s_min, "GB/s",
                         f"cold sequential read on {base}, {coldcache.METHOD_NOTES[method]}", details=common),
        ]
        if digests[f] != digest:
            out[1].status, out[1].why = "fail", "data read back differs from data written (sha256)"
        return out
