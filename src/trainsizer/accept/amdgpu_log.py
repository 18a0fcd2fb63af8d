"""amdgpu's RAS and reset reports in the kernel log: what the AMD driver writes where NVIDIA's writes `NVRM: Xid`.

Formats (amdgpu_ras.c, as AMD's node-scraper matches them: amd/node-scraper
nodescraper/plugins/inband/dmesg/dmesg_analyzer.py, 2025):
- "amdgpu 0000:c3:00.0: amdgpu: 2 uncorrectable hardware errors detected in umc block" (kernels before the per-die
  report), "... socket: 0, die: 1, 2 new uncorrectable hardware errors detected in gfx block" and its companion
  "... 2 uncorrectable hardware errors detected in total in gfx block" (per-die report); the same for correctable
  and deferred errors;
- "amdgpu 0000:c3:00.0: amdgpu: GPU reset begin!" and "GPU reset(2) failed".
"no uncorrectable hardware errors detected in umc block" (the all-clear) carries no count and is not an event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainsizer.accept.xid import read_kernel_log

# the kinds an event can have (platforms.yaml defaults.critical_amdgpu_events names a subset)
AMDGPU_EVENT_KINDS = ("uncorrectable", "deferred", "correctable", "reset", "reset_failed")

_PCI = r"amdgpu (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):"
_RAS = re.compile(_PCI + r"[^\n]*?[ ,](?P<count>\d+) (?:new )?(?P<kind>uncorrectable|correctable|deferred) "
                  r"hardware errors detected in (?P<total>total in )?(?P<block>\w+) block")
_RESET = re.compile(_PCI + r"[^\n]*?GPU reset(?:\(\d+\))? (?P<what>begin|failed)")


@dataclass(frozen=True)
class AmdgpuEvent:
    pci: str
    kind: str  # one of AMDGPU_EVENT_KINDS
    count: int  # errors the line reports (1 for a reset)
    block: str  # the RAS block (umc = HBM, gfx, sdma, mmhub, ...); "" for a reset
    message: str


def parse_amdgpu_events(text: str) -> list[AmdgpuEvent]:
    """Every RAS error and GPU reset line of a kernel log, in order. A per-die report's "in total in" line repeats
    the count of the "new" line beside it, so only the "new" line is an event."""
    out: list[AmdgpuEvent] = []
    for line in text.splitlines():
        m = _RAS.search(line)
        if m and not m["total"]:
            out.append(AmdgpuEvent(m["pci"].lower(), m["kind"], int(m["count"]), m["block"].lower(),
                                   line[m.start():].strip()))
            continue
        m = _RESET.search(line)
        if m:
            out.append(AmdgpuEvent(m["pci"].lower(), "reset" if m["what"] == "begin" else "reset_failed", 1, "",
                                   line[m.start():].strip()))
    return out


def kernel_amdgpu_events() -> list[AmdgpuEvent] | None:
    """amdgpu events of the kernel log since boot, or None when the log cannot be read."""
    text, _ = read_kernel_log()
    return None if text is None else parse_amdgpu_events(text)
