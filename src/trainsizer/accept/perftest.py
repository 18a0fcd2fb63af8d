"""perftest `ib_write_bw` output (text table and `--out_json`) and the per-NIC RDMA wire check.

Format: linux-rdma/perftest README (header ` #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec]
MsgRate[Mpps]`; JSON keys MsgSize, n_iterations, BW_peak, BW_average, MsgRate). Method: Azure aznhc
check_ib_bw_gdr (loopback through the same HCA, 8 MiB messages, --report_gbits).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass

from trainsizer.accept.context import Context
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg


@dataclass(frozen=True)
class BwResult:
    msg_size: int
    iterations: int
    bw_peak_gbps: float
    bw_average_gbps: float


def parse_text(text: str) -> list[BwResult]:
    out = []
    in_table = False
    for line in text.splitlines():
        if "#bytes" in line and "BW average" in line:
            in_table = "Gb/sec" in line
            continue
        cols = line.split()
        if in_table and len(cols) >= 4 and cols[0].isdigit():
            out.append(BwResult(int(cols[0]), int(cols[1]), float(cols[2]), float(cols[3])))
    return out


def parse_json(text: str) -> list[BwResult]:
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "BW_average" in node:
                found.append(BwResult(int(node.get("MsgSize", 0)), int(node.get("n_iterations", 0)),
                                      float(node.get("BW_peak", 0.0)), float(node["BW_average"])))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(text))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _devices(ctx: Context) -> list[str]:
    base = ctx.options.sysfs_root / "sys/class/infiniband"
    return sorted(d.name for d in base.iterdir()) if base.is_dir() else []


def run(ctx: Context) -> list[CheckResult]:
    limit = ctx.criteria.rdma_gbps_min
    if shutil.which("ib_write_bw") is None:
        return [ctx.skipped("rdma.write_bw", msg("acc_why_no_ib_write_bw"), limit=limit, unit="Gb/s")]
    devs = _devices(ctx)
    if not devs:
        return [ctx.skipped("rdma.write_bw", msg("acc_why_no_rdma_device"), limit=limit, unit="Gb/s")]
    out = []
    for dev in devs:
        port = str(_free_port())  # not perftest's fixed 18515: another ib_write_bw may hold it
        args = ["ib_write_bw", "-d", dev, "-s", "8388608", "-D", "5", "--report_gbits", "-F", "-p", port]
        server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(1)
            proc = subprocess.run([*args, "127.0.0.1"], capture_output=True, text=True, timeout=60, check=False)
            rows = parse_text(proc.stdout)
        except subprocess.TimeoutExpired:
            rows = []
        finally:
            server.kill()
            server.wait(timeout=10)
        name = f"rdma.write_bw.{dev}"
        if not rows:
            out.append(ctx.result(name, "error", why=msg("acc_why_loopback_no_result", dev=dev)))
            continue
        out.append(ctx.at_least(name, rows[-1].bw_average_gbps, limit, "Gb/s",
                                msg("acc_what_rdma_loopback", dev=dev)))
    return out
