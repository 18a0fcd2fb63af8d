"""Reading a file with a cold page cache: drop caches if permitted, else O_DIRECT, else fadvise.

Why: a read right after a write comes from the page cache (docs/acceptance.md section 2.7 measured 63 GB/s).
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import time
from pathlib import Path

from trainsizer.messages import msg

BLOCK = 4 * 2**20


def drop_caches() -> bool:
    """`echo 1 > /proc/sys/vm/drop_caches` after sync (root on a host, usually refused in containers)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("1\n")
        return True
    except OSError:
        return False


def fadvise_dontneed(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _read_direct(path: Path, digest) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    total = 0
    try:
        while True:
            n = os.preadv(fd, [buf], total)
            if n <= 0:
                break
            digest.update(buf[:n])
            total += n
            if n < BLOCK:
                break
    finally:
        os.close(fd)
        buf.close()
    return total


def _read_buffered(path: Path, digest) -> int:
    total = 0
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(BLOCK):
            digest.update(chunk)
            total += len(chunk)
    return total


def cold_read(paths: list[Path], method: str | None = None) -> tuple[float, dict[Path, str], str]:
    """Read `paths` cold; (seconds, sha256 per path, method used). `method` forces one (tests)."""
    if method is None:
        method = "drop_caches" if drop_caches() else "o_direct"
    elif method == "drop_caches" and not drop_caches():
        method = "o_direct"
    if method == "fadvise":
        for p in paths:
            fadvise_dontneed(p)
    digests: dict[Path, str] = {}
    t0 = time.perf_counter()
    for p in paths:
        h = hashlib.sha256()
        if method == "o_direct":
            try:
                _read_direct(p, h)
            except OSError as err:
                if err.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
                    raise
                # filesystem refuses O_DIRECT (tmpfs, some FUSE): evict what we can and read buffered
                return cold_read(paths, "fadvise")
        else:
            _read_buffered(p, h)
        digests[p] = h.hexdigest()
    return time.perf_counter() - t0, digests, method


# How the cache was emptied, as the check's explanation says it (catalogue messages, en / zh)
METHOD_NOTES = {method: msg(f"acc_cold_{method}") for method in ("drop_caches", "o_direct", "fadvise")}
