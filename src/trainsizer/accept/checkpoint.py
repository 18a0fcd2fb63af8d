"""Check 5b: checkpoint save and cold restore time with integrity (SHA-256 per shard) on the planned path.

A checkpoint is written as one file per rank-like shard with fsync (as torch.distributed.checkpoint
writes `__<rank>_0.distcp`), then read back cold and hashed: docs/acceptance.md section 3 check #13.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trainsizer.accept import coldcache
from trainsizer.accept.context import Context
from trainsizer.accept.criteria import suite_check
from trainsizer.accept.results import CheckResult
from trainsizer.accept.storage import base_dir, write_random
from trainsizer.messages import msg

NAMES = ("checkpoint.save", "checkpoint.restore", "checkpoint.integrity")
# left free beside the test checkpoint, so the check never fills the volume it measures
SPARE_BYTES = 2 * 2**30


def run(ctx: Context, tamper: Callable[[list[Path]], None] | None = None) -> list[CheckResult]:
    """`tamper` (tests) may alter shard files between save and restore."""
    crit = ctx.criteria
    base = base_dir(ctx)
    if not base.is_dir():
        return [ctx.result(n, "error", why=msg("acc_why_path_missing", path=str(base))) for n in NAMES]
    size = int(crit.checkpoint_size_gb * 1e9) if crit.checkpoint_size_gb else ctx.options.checkpoint_size_bytes
    shards = max(1, ctx.options.checkpoint_shards)
    per = max(4096, size // shards // 4096 * 4096)
    total = per * shards
    free = shutil.disk_usage(base).free
    if free < total + SPARE_BYTES:  # a full disk fails every other job on it, so check before writing
        why = msg("acc_why_no_space", path=str(base), size_gb=f"{total / 1e9:,.1f}",
                  free_gb=f"{free / 1e9:,.1f}", spare_gib=SPARE_BYTES // 2**30)
        return [ctx.result(n, "error", why=why, details={"path": str(base), "size_bytes": total,
                                                         "free_bytes": free}) for n in NAMES]
    with tempfile.TemporaryDirectory(prefix="trainsizer-ckpt-", dir=base) as tmp:
        d = Path(tmp)
        paths = [d / f"__{i}_0.distcp" for i in range(shards)]
        t0 = time.perf_counter()
        written = {p: write_random(p, per, seed=i)[1] for i, p in enumerate(paths)}
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        save_s = time.perf_counter() - t0
        if tamper:
            tamper(paths)
        restore_s, read, method = coldcache.cold_read(paths)
    details = {"path": str(base), "size_bytes": total, "shards": shards, "cold_cache": method,
               "save_gb_s": round(total / save_s / 1e9, 4), "restore_gb_s": round(total / restore_s / 1e9, 4)}
    bad = [p.name for p in paths if read.get(p) != written[p]]
    return [
        ctx.at_most("checkpoint.save", round(save_s, 3), crit.checkpoint_save_s_max, "s",
                    msg("acc_what_ckpt_save", gb=f"{total / 1e9:.3g}", shards=shards, path=str(base)),
                    details=details),
        ctx.at_most("checkpoint.restore", round(restore_s, 3), crit.checkpoint_restore_s_max, "s",
                    msg("acc_what_ckpt_restore", method=coldcache.METHOD_NOTES[method]), details=details),
        ctx.result("checkpoint.integrity", "fail" if bad else "pass", measured=len(bad), threshold=0,
                   unit="shards", source=suite_check(13, "acc_rule_digests"),
                   why=msg("acc_why_digests_mismatch", shards=str(bad)) if bad
                   else msg("acc_why_digests_match", shards=shards),
                   details=details),
    ]
