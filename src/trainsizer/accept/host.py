"""Host inventory from /proc and /sys: CPUs, RAM, block devices, NICs (Ethernet speed, RDMA rate/state).

`root` lets tests point at a recorded sysfs tree. Files: Linux sysfs ABI (Documentation/ABI/testing/
sysfs-class-net `speed` in Mb/s; sysfs-class-infiniband `ports/N/rate`, `ports/N/state`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_VIRTUAL_BLOCK = re.compile(r"^(loop|ram|zram|dm-|md|sr|fd|nbd)")


@dataclass(frozen=True)
class Nic:
    name: str
    kind: str  # "ethernet" or "rdma"
    speed_gbps: float | None
    up: bool


@dataclass(frozen=True)
class HostInfo:
    cpu_count: int | None
    ram_bytes: int | None
    disks: list[str] = field(default_factory=list)
    nics: list[Nic] = field(default_factory=list)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_count(root: Path) -> int | None:
    text = _read(root / "proc/cpuinfo")
    if text is not None:
        n = sum(1 for line in text.splitlines() if line.startswith("processor"))
        if n:
            return n
    return os.cpu_count() if root == Path("/") else None


def _ram_bytes(root: Path) -> int | None:
    text = _read(root / "proc/meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+) kB", text, re.M)
    return int(m[1]) * 1024 if m else None


def _disks(root: Path) -> list[str]:
    base = root / "sys/block"
    if not base.is_dir():
        return []
    return sorted(d.name for d in base.iterdir() if not _VIRTUAL_BLOCK.match(d.name))


def _nics(root: Path) -> list[Nic]:
    out: list[Nic] = []
    ib = root / "sys/class/infiniband"
    if ib.is_dir():
        for dev in sorted(ib.iterdir()):
            for port in sorted((dev / "ports").glob("*")):
                rate = _read(port / "rate") or ""  # "400 Gb/sec (4X NDR)"
                m = re.match(r"([\d.]+) Gb/sec", rate)
                state = _read(port / "state") or ""  # "4: ACTIVE"
                out.append(Nic(f"{dev.name}:{port.name}", "rdma", float(m[1]) if m else None, "ACTIVE" in state))
    net = root / "sys/class/net"
    if net.is_dir():
        for dev in sorted(net.iterdir()):
            if not (dev / "device").exists():  # lo, bridges, veth: no backing device
                continue
            speed = _read(dev / "speed")
            try:
                gbps = int(speed) / 1000 if speed is not None and int(speed) > 0 else None
            except ValueError:
                gbps = None
            out.append(Nic(dev.name, "ethernet", gbps, (_read(dev / "operstate") or "") == "up"))
    return out


def probe(root: Path = Path("/")) -> HostInfo:
    root = Path(root)
    return HostInfo(cpu_count=_cpu_count(root), ram_bytes=_ram_bytes(root), disks=_disks(root), nics=_nics(root))


def nccl_version() -> str | None:
    """NCCL version torch was built with (None without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        v = torch.cuda.nccl.version()
    except Exception:
        return None
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
