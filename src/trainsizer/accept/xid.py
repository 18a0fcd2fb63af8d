"""XID errors from the kernel log (`NVRM: Xid (PCI:...): <xid>, ...`) and the critical list."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

# Format of the NVIDIA driver's kernel message, e.g.
# "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?\s*(?P<msg>.*)")


@dataclass(frozen=True)
class XidEvent:
    pci: str
    xid: int
    message: str


def parse_xids(text: str) -> list[XidEvent]:
    return [XidEvent(m["pci"].lower(), int(m["xid"]), m["msg"].strip()) for m in _XID.finditer(text)]


def read_kernel_log(timeout_s: float = 10) -> tuple[str | None, str]:
    """Kernel log text, or None and why not (dmesg needs privileges on many hosts)."""
    for cmd in (["dmesg", "--notime"], ["journalctl", "-k", "-b", "--no-pager", "-q"]):
        if shutil.which(cmd[0]) is None:
            continue
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            return proc.stdout, " ".join(cmd)
    return None, "kernel log not readable (dmesg/journalctl missing or not permitted)"


def kernel_xids() -> list[XidEvent] | None:
    """XID events of the kernel log since boot, or None when the log cannot be read."""
    text, _ = read_kernel_log()
    return None if text is None else parse_xids(text)
