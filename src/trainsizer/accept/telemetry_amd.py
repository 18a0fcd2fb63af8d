"""GpuTelemetry from AMD's `amd-smi` command line (JSON output), for Instinct parts.

Commands and fields: AMD SMI CLI (ROCm/amdsmi amdsmi_cli/amdsmi_commands.py, README and CHANGELOG; ROCm/rocm-systems
projects/amdsmi/docs/how-to/amdsmi-cli-tool.md):
- `amd-smi static --asic --bus --vram --driver --limit --json`: asic.market_name / asic_serial, bus.bdf, vram.size
  (MB, i.e. MiB: the library's vram_size is bytes / 2**20), driver.version, limit.slowdown_hotspot_temperature;
- `amd-smi list --json`: gpu, bdf, uuid;
- `amd-smi metric --ecc --json`: ecc.total_correctable_count / total_uncorrectable_count / total_deferred_count
  (amdsmi_get_gpu_total_ecc_count: errors accumulated since the driver loaded);
- `amd-smi bad-pages --pending --json`: pending retired pages, or "No bad pages found.";
- `amd-smi metric --usage --power --clock --temperature --ecc --throttle --json` for the burn-in samples (the ECC
  counts too, as NVIDIA's samples carry the volatile uncorrectable count; the violation status, as NVIDIA's carry the
  clock-event reasons);
- `amd-smi version --json`: rocm_version (what AMD's Cluster Validation Suite preflight compares, ROCm/cvs);
- `amd-smi static --ras --json`: ras.ecc_block_state (UMC = the HBM's memory controller: ENABLED / DISABLED, a dict
  or a list of {block, status} by release);
- `amd-smi xgmi -l --json`: per GPU a link_status list, U (up) / D (down) / X (disabled) / SELF, as a list or under
  "link_status" (the shapes AMD's node-scraper reads, nodescraper/plugins/inband/amdsmi);
- `amd-smi metric --xgmi-err --json`: xgmi_err, the amdsmi_xgmi_status_t name (amdsmi.h);
- `amd-smi metric --throttle --json`: throttle.<name>_violation_status, "ACTIVE" / "NOT ACTIVE" / "N/A" (amd-smi's
  README sample: PROCHOT, PPT, SOCKET_THERMAL, VR_THERMAL, HBM_THERMAL, GFX_CLK_BELOW_HOST_LIMIT), per XCP as
  {"XCP_0": [...]} lists on later releases, or a bool where the library gives one;
- `amd-smi ras --cper --severity all --json` (root): the CPER records amdgpu keeps, one row per record {timestamp,
  gpu, severity: FATAL / NONFATAL-UNCORRECTED / NONFATAL-CORRECTED / BOOT / ...} (amdsmi_cli subcommands/ras.py,
  amdsmi_helpers.ras_cper; the RAS how-to's `ras --cper` samples).
amd-smi prints a list of per-GPU objects (`[{"gpu": 0, ...}]`, ROCm 6.x) or wraps it as `{"gpu_data": [...]}`
(later releases), and a figure as a bare number, "N/A", "<n> <unit>" or `{"value": n, "unit": u}`: all are read.
No GPU here: the parsers are pure functions, tested on samples written from AMD's documented output.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from trainsizer.accept.amdgpu_log import AmdgpuEvent, kernel_amdgpu_events
from trainsizer.accept.telemetry import GpuHealth, GpuInfo, GpuSample, run_tool
from trainsizer.accept.xid import XidEvent

STATIC_CMD = ["amd-smi", "static", "--asic", "--bus", "--vram", "--driver", "--limit", "--json"]
LIST_CMD = ["amd-smi", "list", "--json"]
ECC_CMD = ["amd-smi", "metric", "--ecc", "--json"]
PENDING_PAGES_CMD = ["amd-smi", "bad-pages", "--pending", "--json"]
SAMPLE_CMD = ["amd-smi", "metric", "--usage", "--power", "--clock", "--temperature", "--ecc", "--json"]
# a burn-in sample with the throttle (violation) status, so burn-in judges throttling under load; an amd-smi that
# refuses --throttle is sampled without it (AmdSmiTelemetry.sample)
SAMPLE_THROTTLE_CMD = [*SAMPLE_CMD[:-1], "--throttle", "--json"]
VERSION_CMD = ["amd-smi", "version", "--json"]
RAS_CMD = ["amd-smi", "static", "--ras", "--json"]
XGMI_LINK_CMD = ["amd-smi", "xgmi", "-l", "--json"]
XGMI_ERR_CMD = ["amd-smi", "metric", "--xgmi-err", "--json"]
THROTTLE_CMD = ["amd-smi", "metric", "--throttle", "--json"]
# the CPER records amdgpu keeps for each GPU (ROCm 7.0's amd-smi and later; needs root: amd-smi exits non-zero without)
CPER_CMD = ["amd-smi", "ras", "--cper", "--severity", "all", "--json"]
# a CPER header's error_severity as amd-smi names it in its summary rows (amdsmi_helpers._severity_as_string; a fatal
# record of notify type BOOT is named BOOT)
CPER_SEVERITY_NAMES = {"fatal": "FATAL", "non_fatal_uncorrected": "NONFATAL-UNCORRECTED",
                       "non_fatal_corrected": "NONFATAL-CORRECTED"}
NO_BAD_PAGES = "No bad pages found."  # amdsmi_commands.bad_pages: bad_pages_not_found
XGMI_NO_ERRORS = "AMDSMI_XGMI_STATUS_NO_ERRORS"  # amdsmi.h amdsmi_xgmi_status_t


class AmdSmiUnavailable(Exception):
    pass


def _run(cmd: list[str]) -> str:
    return run_tool(cmd, AmdSmiUnavailable, stderr_first=True)


def per_gpu(text: str) -> dict[int, dict[str, Any]]:
    """amd-smi JSON (a list of per-GPU objects, or that list under "gpu_data") -> {gpu index: object}."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AmdSmiUnavailable(f"amd-smi printed no JSON ({err.msg})") from None
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    if not isinstance(data, list):
        raise AmdSmiUnavailable("amd-smi JSON is neither a list nor {gpu_data: [...]}")
    return {int(g["gpu"]): g for g in data if isinstance(g, dict) and isinstance(g.get("gpu"), int)}


def number(value: Any) -> float | None:
    """A figure as amd-smi prints it: 12, "12", "550 W", {"value": 12, "unit": "W"}; None for N/A."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(value))
    return float(m[1]) if m else None


def _count(value: Any) -> int | None:
    n = number(value)
    return None if n is None else int(n)


def _text(value: Any) -> str:
    return "" if value in (None, "N/A") else str(value)


def parse_static(static_text: str, list_text: str | None = None) -> list[GpuInfo]:
    uuids = {i: g.get("uuid", "") for i, g in per_gpu(list_text).items()} if list_text else {}
    out = []
    for i, g in sorted(per_gpu(static_text).items()):
        asic, bus, vram, limit = (g.get(k) if isinstance(g.get(k), dict) else {}
                                  for k in ("asic", "bus", "vram", "limit"))
        size_mib = number(vram.get("size"))
        out.append(GpuInfo(
            index=i, name=_text(asic.get("market_name")) or "?", uuid=_text(uuids.get(i)),
            serial=_text(asic.get("asic_serial")), pci_bus_id=_text(bus.get("bdf")).lower(),
            memory_total_bytes=int(size_mib * 2**20) if size_mib is not None else 0,
            temp_limit_c=number(limit.get("slowdown_hotspot_temperature")),
        ))
    return out


def _optional(run: Callable[[list[str]], str], cmd: list[str]) -> str | None:
    """A command's output, or None where this amd-smi or part does not give it (the check then skips)."""
    try:
        return run(cmd)
    except AmdSmiUnavailable:
        return None


def parse_rocm_version(text: str) -> str | None:
    """`amd-smi version --json` (one object, or a list of one) -> its rocm_version."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    data = data[0] if isinstance(data, list) and data else data
    return _text(data.get("rocm_version")) or None if isinstance(data, dict) else None


def parse_ecc_enabled(text: str) -> dict[int, bool | None]:
    """`amd-smi static --ras --json` -> {gpu: ECC on the HBM (block UMC) enabled}; None where not reported."""
    out: dict[int, bool | None] = {}
    for i, g in per_gpu(text).items():
        state = (g.get("ras") if isinstance(g.get("ras"), dict) else {}).get("ecc_block_state")
        if isinstance(state, list):
            state = {s.get("block"): s.get("status") for s in state if isinstance(s, dict)}
        umc = state.get("UMC") if isinstance(state, dict) else None
        out[i] = None if umc in (None, "N/A") else str(umc).upper() == "ENABLED"
    return out


def parse_xgmi_links(text: str) -> dict[int, tuple[int, int]]:
    """`amd-smi xgmi -l --json` -> {gpu: (links up, links to peers)}: every entry but SELF is a peer's link."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AmdSmiUnavailable(f"amd-smi printed no JSON ({err.msg})") from None
    rows = data.get("link_status", []) if isinstance(data, dict) else data
    out = {}
    for g in rows if isinstance(rows, list) else []:
        links = g.get("link_status") if isinstance(g, dict) else None
        if isinstance(links, list) and isinstance(g.get("gpu"), int):  # a non-object entry is passed over
            peers = [str(s).upper() for s in links if str(s).upper() != "SELF"]
            out[g["gpu"]] = (sum(s == "U" for s in peers), len(peers))
    return out


def parse_xgmi_errors(text: str) -> dict[int, str | None]:
    """`amd-smi metric --xgmi-err --json` -> {gpu: the xGMI error state's name}; None where amd-smi says N/A."""
    return {i: _text(g.get("xgmi_err")) or None for i, g in per_gpu(text).items()}


def _active(value: Any) -> bool | None:
    """A violation status as amd-smi prints it: "ACTIVE" / "NOT ACTIVE" / "N/A", a bool, or any of these in per-XCP
    lists or a {value, unit} object; True if any part is active, None if none is reported."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        parts = [_active(v) for v in value]
        return True if True in parts else False if False in parts else None
    if isinstance(value, bool):
        return value
    text = str(value).strip().upper()
    return True if text == "ACTIVE" else False if text == "NOT ACTIVE" else None


def _violations(gpu: dict[str, Any]) -> tuple[str, ...] | None:
    """One GPU's `throttle` object -> the violations active (names less _violation_status); None if none is reported."""
    suffix = "_violation_status"
    throttle = gpu.get("throttle") if isinstance(gpu.get("throttle"), dict) else {}
    states = {k.removesuffix(suffix): _active(v) for k, v in throttle.items() if k.endswith(suffix)}
    known = {k: v for k, v in states.items() if v is not None}
    return tuple(sorted(k for k, v in known.items() if v)) if known else None


def _summed(value: Any) -> int | None:
    """A counter as amd-smi prints it (a number, "N/A", {value, unit}) or per-XCP lists of them, summed."""
    if isinstance(value, dict) and not {"value", "unit"} >= set(value):
        value = list(value.values())
    if isinstance(value, list):
        parts = [n for n in (_summed(v) for v in value) if n is not None]
        return sum(parts) if parts else None
    return _count(value)


def _violation_counts(gpu: dict[str, Any]) -> dict[str, int] | None:
    """One GPU's `throttle` object -> {violation: its *_accumulated counter}, which AMD SMI increments while the
    violation is active (amdsmi_violation_status_t acc_*; per-XCP lists summed); None if none is reported."""
    suffix = "_accumulated"
    throttle = gpu.get("throttle") if isinstance(gpu.get("throttle"), dict) else {}
    counts = {k.removesuffix(suffix): _summed(v) for k, v in throttle.items() if k.endswith(suffix)}
    return {k: n for k, n in counts.items() if n is not None} or None


def parse_violation_counts(text: str) -> dict[int, dict[str, int] | None]:
    """`amd-smi metric --throttle --json` -> {gpu: {violation: accumulated counter}}; None where none is reported."""
    return {i: _violation_counts(g) for i, g in per_gpu(text).items()}


def parse_violations(text: str) -> dict[int, tuple[str, ...] | None]:
    """`amd-smi metric --throttle --json` -> {gpu: the violations active}; None where none is reported."""
    return {i: _violations(g) for i, g in per_gpu(text).items()}


def _json_documents(text: str) -> list[Any]:
    """Every JSON document in amd-smi's output, in order, passing over text between them: `ras --cper --json` prints
    one array (ROCm 10.0's amd-smi and later), or one per GPU and nothing where there are no records, with a warning
    line before them on a partitioned GPU (earlier releases; the amd-smi CHANGELOG's fix for ROCm 10.0 says so)."""
    decoder, out, pos = json.JSONDecoder(), [], 0
    while (start := min((i for i in (text.find("[", pos), text.find("{", pos)) if i >= 0), default=-1)) >= 0:
        try:
            doc, pos = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        out.append(doc)
    return out


def _cper_severity(row: dict[str, Any]) -> str:
    """A row's severity in amd-smi's names: its `severity` (FATAL, NONFATAL-UNCORRECTED, ...) or, in a header entry,
    its error_severity named as amd-smi names it; UNKNOWN otherwise."""
    if isinstance(row.get("severity"), str):
        return row["severity"].strip().upper()
    return CPER_SEVERITY_NAMES.get(str(row.get("error_severity", "")).lower(), "UNKNOWN")


def parse_cper(text: str) -> dict[int, dict[str, int]]:
    """`amd-smi ras --cper --severity all --json` -> {gpu: {severity: records}} for the GPUs with records; rows are
    {timestamp, gpu, severity[, cper_file, afids, ...]} (amdsmi_helpers.dump_cper_entries)."""
    out: dict[int, dict[str, int]] = {}
    for doc in _json_documents(text):
        for row in doc if isinstance(doc, list) else [doc]:
            if isinstance(row, dict) and isinstance(row.get("gpu"), int) and not isinstance(row["gpu"], bool):
                counts = out.setdefault(row["gpu"], {})
                severity = _cper_severity(row)
                counts[severity] = counts.get(severity, 0) + 1
    return out


def parse_driver_version(static_text: str) -> str | None:
    for _, g in sorted(per_gpu(static_text).items()):
        driver = g.get("driver")
        if isinstance(driver, dict) and _text(driver.get("version")):
            return str(driver["version"])
    return None


def _ecc_counts(gpu: dict[str, Any]) -> tuple[int | None, int | None]:
    """(uncorrectable, correctable) of one GPU's `ecc` object. A deferred error is an uncorrectable one whose
    poisoned data the driver handles when it is read (amdgpu RAS), so it counts as uncorrectable."""
    ecc = gpu.get("ecc") if isinstance(gpu.get("ecc"), dict) else {}
    unc, deferred = _count(ecc.get("total_uncorrectable_count")), _count(ecc.get("total_deferred_count"))
    return (None if unc is None else unc + (deferred or 0)), _count(ecc.get("total_correctable_count"))


def parse_ecc(ecc_text: str) -> dict[int, tuple[int | None, int | None]]:
    """`amd-smi metric --ecc --json` -> {gpu: (uncorrectable, correctable)}."""
    return {i: _ecc_counts(g) for i, g in per_gpu(ecc_text).items()}


def parse_pending_pages(text: str) -> dict[int, bool | None]:
    """`amd-smi bad-pages --pending --json` -> {gpu: a page waits to be retired}; None where amd-smi says N/A."""
    out: dict[int, bool | None] = {}
    for i, g in per_gpu(text).items():
        pending = g.get("pending")
        out[i] = None if pending in (None, "N/A") else bool(pending) and pending != NO_BAD_PAGES
    return out


def parse_samples(text: str) -> list[GpuSample]:
    out = []
    for i, g in sorted(per_gpu(text).items()):
        temp, power, usage, clock = (g.get(k) if isinstance(g.get(k), dict) else {}
                                     for k in ("temperature", "power", "usage", "clock"))
        gfx_clock = clock.get("gfx_0") if isinstance(clock.get("gfx_0"), dict) else {}
        out.append(GpuSample(index=i, temp_c=number(temp.get("hotspot")), power_w=number(power.get("socket_power")),
                             util_pct=number(usage.get("gfx_activity")), sm_clock_mhz=number(gfx_clock.get("clk")),
                             ecc_uncorrected_volatile=_ecc_counts(g)[0], violations_active=_violations(g)))
    return out


@dataclass
class AmdSmiTelemetry:
    """Instinct GPUs through amd-smi; the kernel log read for amdgpu's RAS and reset lines, not for Xid."""

    run: Callable[[list[str]], str] = _run
    source: str = "amd-smi"
    vendor: str = "amd"
    throttle_in_samples: bool = True

    @classmethod
    def open(cls) -> AmdSmiTelemetry:
        if shutil.which("amd-smi") is None:
            raise AmdSmiUnavailable("not on PATH")
        tel = cls()
        if not per_gpu(tel.run(STATIC_CMD)):
            raise AmdSmiUnavailable("lists no GPU")
        return tel

    def driver_version(self) -> str | None:
        return parse_driver_version(self.run(STATIC_CMD))

    def cuda_version(self) -> str | None:
        return None  # a ROCm node has no CUDA; the plan sets no CUDA floor on AMD parts

    def rocm_version(self) -> str | None:
        text = _optional(self.run, VERSION_CMD)
        return parse_rocm_version(text) if text else None

    def gpus(self) -> list[GpuInfo]:
        gpus = parse_static(self.run(STATIC_CMD), _optional(self.run, LIST_CMD))
        ras, xgmi = _optional(self.run, RAS_CMD), _optional(self.run, XGMI_LINK_CMD)
        ecc = parse_ecc_enabled(ras) if ras else {}
        links = parse_xgmi_links(xgmi) if xgmi else {}
        return [replace(g, ecc_enabled=ecc.get(g.index), xgmi_links_up=links.get(g.index, (None, None))[0],
                        xgmi_links_total=links.get(g.index, (None, None))[1]) for g in gpus]

    def health(self) -> list[GpuHealth]:
        ecc = parse_ecc(self.run(ECC_CMD))
        try:
            pending = parse_pending_pages(self.run(PENDING_PAGES_CMD))
        except AmdSmiUnavailable:
            pending = {}
        xgmi_text = _optional(self.run, XGMI_ERR_CMD)
        xgmi = parse_xgmi_errors(xgmi_text) if xgmi_text else {}
        throttle_text = _optional(self.run, THROTTLE_CMD)
        violations = parse_violations(throttle_text) if throttle_text else {}
        counters = parse_violation_counts(throttle_text) if throttle_text else {}
        # None for every GPU where amd-smi gives no CPER list (no root, or a release without `ras`): the check skips
        cper_text = _optional(self.run, CPER_CMD)
        cper = parse_cper(cper_text) if cper_text is not None else None
        # AMD retires a bad HBM page (amd-smi bad-pages) where NVIDIA remaps a row: no remap figures here
        return [GpuHealth(index=i, ecc_uncorrected_volatile=unc, ecc_corrected_volatile=cor,
                          retired_pages_pending=pending.get(i), xgmi_error_status=xgmi.get(i),
                          violations_active=violations.get(i), violation_counts=counters.get(i),
                          cper_records=None if cper is None else cper.get(i, {}))
                for i, (unc, cor) in sorted(ecc.items())]

    def sample(self) -> list[GpuSample]:
        if self.throttle_in_samples:
            try:
                return parse_samples(self.run(SAMPLE_THROTTLE_CMD))
            except AmdSmiUnavailable:
                self.throttle_in_samples = False  # this amd-smi has no --throttle: ask without it from now on
        try:
            return parse_samples(self.run(SAMPLE_CMD))
        except AmdSmiUnavailable:
            return []

    def xid_events(self) -> list[XidEvent] | None:
        return None  # Xid is the NVIDIA driver's report; amdgpu_events() reads the AMD driver's

    def amdgpu_events(self) -> list[AmdgpuEvent] | None:
        return kernel_amdgpu_events()
