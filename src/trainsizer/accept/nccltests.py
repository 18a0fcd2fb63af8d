"""Parse nccl-tests output: the text table and the `-J` JSON (nccl-tests >= 2.17.4).

Format: NVIDIA/nccl-tests src/common.cu (header, per-size rows: out-of-place then in-place groups
of time/algbw/busbw/#wrong, `# Out of bounds values`, `# Avg bus bandwidth`). docs/acceptance.md section 2.1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Row:
    size_bytes: int
    time_us: float
    algbw_gb_s: float
    busbw_gb_s: float
    wrong: int | None  # None when run with -c 0 ("N/A")


@dataclass
class NcclTestsRun:
    op: str | None = None
    nranks: int = 0
    devices: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw_gb_s: float | None = None
    failed: bool = False
    complete: bool = False

    def busbw_at_largest(self) -> float | None:
        if not self.rows:
            return None
        largest = max(r.size_bytes for r in self.rows)
        return max(r.busbw_gb_s for r in self.rows if r.size_bytes == largest)

    def wrong_total(self) -> int | None:
        counts = [r.wrong for r in self.rows if r.wrong is not None]
        return sum(counts) if counts else None


_DEVICE = re.compile(r"^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$")


def _wrong(text: str) -> int | None:
    return None if text == "N/A" else int(text)


def parse_text(text: str) -> NcclTestsRun:
    run = NcclTestsRun()
    for line in text.splitlines():
        s = line.strip()
        m = _DEVICE.match(s)
        if m:
            run.devices.append(f"{m[1]}: {m[2].strip()}")
            continue
        m = re.match(r"# Out of bounds values\s*:\s*(\d+)", s)
        if m:
            run.out_of_bounds = int(m[1])
            continue
        m = re.match(r"# Avg bus bandwidth\s*:\s*([\d.]+)\s*(\w+)?", s)
        if m:
            run.avg_busbw_gb_s = float(m[1])
            run.failed = run.failed or (m[2] or "").upper() == "FAILED"
            continue
        m = re.match(r"# Collective test concluded:\s*(\S+)", s)
        if m:
            run.complete = True
            run.op = run.op or m[1].removesuffix("_perf")
            continue
        if s.startswith("#") or not s:
            continue
        cols = s.split()
        # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
        if len(cols) >= 13 and cols[0].isdigit():
            try:
                oop = Row(int(cols[0]), float(cols[5]), float(cols[6]), float(cols[7]), _wrong(cols[8]))
                inp = Row(int(cols[0]), float(cols[9]), float(cols[10]), float(cols[11]), _wrong(cols[12]))
            except ValueError:
                continue
            run.rows.extend([oop, inp])
    if "FAILED" in text:
        run.failed = True
    run.nranks = len(run.devices)
    return run


def parse_json(text: str) -> NcclTestsRun:
    data = json.loads(text)
    run = NcclTestsRun(complete=True)
    run.devices = [f"{d.get('hostname', '?')}: {d.get('device_info', d.get('device', '?'))}"
                   for d in data.get("devices", [])]
    run.nranks = len(run.devices)
    for r in data.get("results", []):
        for key in ("out_of_place", "in_place"):
            g = r.get(key)
            if not g:
                continue
            wrong = g.get("nwrong")
            run.rows.append(Row(int(r["size"]), float(g.get("time", 0.0)), float(g["alg_bw"]), float(g["bus_bw"]),
                                None if wrong in (None, "N/A") else int(wrong)))
    oob = data.get("out_of_bounds") or {}
    run.out_of_bounds = oob.get("count")
    avg = data.get("average_bus_bandwidth") or {}
    run.avg_busbw_gb_s = avg.get("bandwidth")
    run.failed = (avg.get("okay") is False) or (oob.get("okay") is False)
    return run
