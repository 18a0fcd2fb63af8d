"""What every check receives: criteria, telemetry and the run options."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from trainsizer.accept.criteria import AcceptanceCriteria, Limit
from trainsizer.accept.results import CheckResult
from trainsizer.accept.telemetry import GpuInfo, GpuTelemetry
from trainsizer.messages import Msg, msg, storable, stored


@dataclass
class Options:
    nproc: int = 2
    backend: str = "gloo"
    nnodes: int = 1
    rdzv_endpoint: str | None = None
    rdzv_id: str = "trainsizer-accept"
    collective_max_bytes: int = 4 * 2**20
    collective_iters: int = 5
    collective_timeout_s: float = 300.0
    storage_path: Path | None = None
    dataset_path: Path | None = None
    storage_size_bytes: int = 64 * 2**20
    checkpoint_size_bytes: int = 64 * 2**20
    checkpoint_shards: int = 4
    gemm_size: int = 8192
    hbm_bytes: int = 2 * 2**30
    thermal_s: float = 60.0
    burnin_s: float = 120.0
    sample_interval_s: float = 1.0
    dcgm_level: int = 1
    sysfs_root: Path = Path("/")


@dataclass
class Context:
    criteria: AcceptanceCriteria
    telemetry: GpuTelemetry | None
    telemetry_why: str
    options: Options = field(default_factory=Options)
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    _gpus: list[GpuInfo] | None = None

    def gpus(self) -> list[GpuInfo]:
        if self._gpus is None:
            self._gpus = self.telemetry.gpus() if self.telemetry else []
        return self._gpus

    def result(self, name: str, status: str, *, measured=None, limit: Limit | None = None, threshold=None,
               unit: str | None = None, why: str = "", details: dict | None = None,
               source: str | None = None) -> CheckResult:
        """A verdict; a `source` that is a catalogue message is kept as one (shown in the reader's language)."""
        return CheckResult(
            name=name, status=status, measured=measured,
            threshold=limit.value if limit is not None else threshold,
            source=limit.source if limit is not None else source,
            source_msg=limit.source_msg if limit is not None else (storable(source) if isinstance(source, Msg)
                                                                  else None),
            unit=unit, why=why, why_msg=storable(why) if isinstance(why, Msg) else None, node=self.node,
            details=details or {},
        )

    @staticmethod
    def explain(res: CheckResult, why: str) -> None:
        """Replace a result's explanation; a catalogue message is kept for the reader's language."""
        res.why, res.why_msg = why, storable(why) if isinstance(why, Msg) else None

    def add_why(self, res: CheckResult, more: str, key: str = "acc_why_also") -> None:
        """'<why>; <more>' (acc_why_also) or '<more> (<why>)' (acc_why_because), in either language."""
        first = why_of(res)
        self.explain(res, msg(key, first=first, then=more) if key == "acc_why_also" else msg(key, first=more,
                                                                                                then=first))

    def skipped(self, name: str, why: str, **kw) -> CheckResult:
        return self.result(name, "skipped", why=why, **kw)

    def at_least(self, name: str, measured: float | int | None, limit: Limit | None, unit: str,
                 what: str, details: dict | None = None) -> CheckResult:
        """pass if measured >= limit; skipped (with the figure) when there is no figure or no threshold."""
        return self._compare(name, measured, limit, unit, what, details, higher_is_better=True)

    def at_most(self, name: str, measured: float | int | None, limit: Limit | None, unit: str,
                what: str, details: dict | None = None) -> CheckResult:
        """pass if measured <= limit; skipped (with the figure) when there is no figure or no threshold."""
        return self._compare(name, measured, limit, unit, what, details, higher_is_better=False)

    def _compare(self, name: str, measured: float | int | None, limit: Limit | None, unit: str, what: str,
                 details: dict | None, *, higher_is_better: bool) -> CheckResult:
        if measured is None:
            return self.skipped(name, msg("acc_why_not_measured", what=what), limit=limit, unit=unit,
                                details=details)
        if limit is None:
            return self.result(name, "skipped", measured=measured, unit=unit, details=details,
                               why=msg("acc_why_no_threshold", what=what, measured=_fmt(measured),
                                       unit=unit_word(unit)))
        m, v = float(measured), float(limit.value)
        ok = m >= v if higher_is_better else m <= v
        rel = (">=" if ok else "<") if higher_is_better else ("<=" if ok else ">")
        return self.result(name, "pass" if ok else "fail", measured=measured, limit=limit, unit=unit,
                           details=details, why=msg("acc_why_compare", what=what, measured=_fmt(measured), rel=rel,
                                                    limit=_fmt(limit.value), unit=unit_word(unit)))


# A result's unit that is a word (the JSON keeps it as written, for scripts): its catalogue message, so a Chinese
# table and sentence read "8 个端口", not "8 ports" (messages.yaml acc_unit_*); symbols (GiB, Gb/s) stay as they are
UNIT_WORDS = {"ports": "acc_unit_ports", "links": "acc_unit_links", "CPUs": "acc_unit_cpus", "disks": "acc_unit_disks",
              "errors": "acc_unit_errors", "GPUs": "acc_unit_gpus", "GPUs without ECC": "acc_unit_gpus_without_ecc",
              "C": "acc_unit_c", "critical XIDs": "acc_unit_critical_xids",
              "critical amdgpu events": "acc_unit_critical_amdgpu_events", "new uncorrectable": "acc_unit_new_uncorrectable",
              "samples": "acc_unit_samples", "shards": "acc_unit_shards", "failed tests": "acc_unit_failed_tests",
              "nodes": "acc_unit_nodes", "wrong elements": "acc_unit_wrong_elements",
              "new CPER records": "acc_unit_new_cper_records"}


def unit_word(unit: str | None) -> str:
    """`unit` as the reader's word (a catalogue message when it is one of UNIT_WORDS), else as written."""
    return msg(UNIT_WORDS[unit]) if unit in UNIT_WORDS else (unit or "")


def why_of(res: CheckResult) -> str:
    """A result's explanation as the catalogue message it was written from, else its text."""
    return stored(res.why_msg) if res.why_msg else res.why


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
