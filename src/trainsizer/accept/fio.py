"""Run fio and parse its JSON (`--output-format=json`: jobs[].read|write.bw_bytes, io_bytes, runtime, error).

Format: fio HOWTO "JSON output" (fio 3.x); job options from docs/acceptance.md section 2.7 (Stas Bekman's fio
recipe: --unlink=1 always, --direct=1, --end_fsync=1 for writes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FioResult:
    rw: str
    bw_bytes: float
    io_bytes: int
    runtime_ms: int
    errors: int
    version: str | None = None

    @property
    def gb_s(self) -> float:
        return self.bw_bytes / 1e9


def parse(text: str, rw: str) -> FioResult:
    """Sum over jobs of the `read` or `write` group; fio may print warnings before the JSON."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in fio output")
    data = json.loads(text[start:])
    side = "read" if "read" in rw else "write"
    jobs = data.get("jobs", [])
    if not jobs:
        raise ValueError("fio JSON has no jobs")
    return FioResult(
        rw=rw,
        bw_bytes=float(sum(j[side]["bw_bytes"] for j in jobs)),
        io_bytes=int(sum(j[side]["io_bytes"] for j in jobs)),
        runtime_ms=int(max(j[side]["runtime"] for j in jobs)),
        errors=int(sum(j.get("error", 0) for j in jobs)),
        version=data.get("fio version"),
    )


def available() -> bool:
    return shutil.which("fio") is not None


def command(directory: Path, rw: str, size_bytes: int, direct: bool, block: str = "4M",
            numjobs: int = 1) -> list[str]:
    return ["fio", f"--name=trainsizer-{rw}", f"--directory={directory}", f"--rw={rw}", f"--bs={block}",
            f"--size={size_bytes}", f"--numjobs={numjobs}", "--ioengine=psync", f"--direct={int(direct)}",
            "--end_fsync=1", "--unlink=1", "--group_reporting", "--output-format=json"]


def run(directory: Path, rw: str, size_bytes: int, timeout_s: float = 600) -> tuple[FioResult, bool]:
    """Run one fio job with O_DIRECT; where the filesystem refuses O_DIRECT (tmpfs), buffered.

    Returns the result and whether O_DIRECT was used.
    """
    last = ""
    for direct in (True, False):
        proc = subprocess.run(command(directory, rw, size_bytes, direct), capture_output=True, text=True,
                              timeout=timeout_s, check=False)
        if proc.returncode == 0:
            res = parse(proc.stdout, rw)
            if res.errors == 0 and res.io_bytes > 0:
                return res, direct
        last = (proc.stderr or proc.stdout).strip()[-300:]
    raise RuntimeError(f"fio {rw} failed: {last}")
