"""Typed catalog records (pydantic v2, frozen, extra fields forbidden).

Every record carries `sources` (ids in the source registry), `date` (as-of date of its figures, ``YYYY``,
``YYYY-MM`` or ``YYYY-MM-DD``), `confidence`, field-level doubts (`unsure`), values other sources give
(`alt_values`) and `field_sources`: for fields an overlay file changed, the source ids of the new value.
Units are in the field names (`_gb` 10**9 B, `_gib` 2**30 B, `_gb_s` 10**9 B/s, `_gbps` 10**9 bit/s, ...).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.messages import Listing, msg

ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SOURCE_ID_PATTERN = r"^[a-z0-9_]+$"
DATE_PATTERN = r"^\d{4}(-\d{2}(-\d{2})?)?$"
GIB_PER_GB = 1e9 / 2**30

Confidence = Literal["high", "medium", "low", "very_low"]
Number = float | int
# Availability of a part or system to a buyer. 'announced' (announced, not shipping to buyers) is left out of
# plans unless a job names it; 'discontinued' parts are no longer sold new but are still rented and resold.
Availability = Literal["shipping", "announced", "discontinued"]
AVAILABILITY = ("shipping", "announced", "discontinued")
PLANNABLE_BY_DEFAULT = ("shipping", "discontinued")
# Coverage an accelerator must have in the catalog; an entry in `none_known` says why one is missing.
COVERAGE_KEYS = ("server", "price_usd", "price_cny")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (sources and provenance included)."""
        return self.model_dump(mode="json")


class Source(_Frozen):
    """One entry of the source registry."""

    id: str = Field(pattern=SOURCE_ID_PATTERN)
    title: str
    url: str | None = None
    date: str | None = Field(default=None, pattern=DATE_PATTERN)
    retrieved: str | None = Field(default=None, pattern=DATE_PATTERN)
    ref: str | None = None
    mirror: str | None = None
    also: str | None = None
    retrieved_via: str | None = None
    note: str | None = None


class AltValue(_Frozen):
    """A value another source gives for a field (recorded, not used)."""

    value: Number | str | bool | None
    sources: tuple[str, ...] = Field(min_length=1)
    note: str | None = None


class Record(_Frozen):
    """Fields every catalog record has."""

    id: str = Field(pattern=ID_PATTERN)
    sources: tuple[str, ...] = Field(min_length=1)
    date: str = Field(pattern=DATE_PATTERN)
    confidence: Confidence
    unsure: tuple[str, ...] = ()
    notes: str | None = None
    alt_values: dict[str, tuple[AltValue, ...]] = Field(default_factory=dict)
    field_sources: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    def source_ids(self) -> set[str]:
        """Every source id the record refers to (record, alternatives, overridden fields)."""
        ids = set(self.sources)
        for alts in self.alt_values.values():
            for alt in alts:
                ids.update(alt.sources)
        for srcs in self.field_sources.values():
            ids.update(srcs)
        return ids


class Range(_Frozen):
    """A low..high pair as a source gives it."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low > self.high:
            raise ValueError(msg("rec_low_above_high", low=self.low, high=self.high))
        return self

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2


# ------------------------------------------------------------------------------------------- accelerators
TRAINING_PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4")
SCALEUP_TECHS = ("nvlink", "nvlink-bridge", "pcie", "xgmi", "hccs", "roce", "other")


TFLOPS_KEYS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "fp32_matrix")
TFLOPS_CORE_KEYS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4")


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and x > 0


def _check_tflops(value: Any) -> Any:
    """tflops_dense: {precision: dense TFLOP/s or None}; core keys always present (None = not published)."""
    if not isinstance(value, dict):
        return value
    bad = [k for k in value if k not in TFLOPS_KEYS]
    if bad:
        raise ValueError(msg("rec_unknown_precision_key", key=repr(bad[0]), allowed=Listing(TFLOPS_KEYS)))
    for k, v in value.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
            raise ValueError(msg("rec_tflops_positive", key=k, value=repr(v), allowed="> 0 | null"))
    return {**{k: None for k in TFLOPS_CORE_KEYS}, **{k: (None if v is None else float(v)) for k, v in value.items()}}


class Vendor(Record):
    """An accelerator vendor: the name people read for an accelerator's `vendor` code ('nvidia' -> 'NVIDIA'),
    and its Chinese name where the vendor writes one."""

    name: str
    name_zh: str | None = None


# Least share of the label a driver-visible total may be: the driver keeps a few per cent for itself (H100 80GB:
# 81,559 of 81,920 MiB; B200: 183,359 of 196,608), and in-band ECC on GDDR a sixteenth (L40S, RTX A6000: 46,068 of
# 49,152 MiB); a total below this is taken for a figure of another part (e.g. an overlay that changed the label).
DRIVER_MIN_LABEL_SHARE = 0.9


# The runtime that hands a process its device memory, by the tool the reading came from (what a sentence about
# that reading names): CUDA on NVIDIA, HIP on AMD ROCm, the Intel Gaudi software (SynapseAI) on Gaudi, CANN on Ascend.
DRIVER_TOOL_RUNTIME = {"nvidia-smi": "CUDA", "rocm-smi": "HIP (ROCm)", "hl-smi": "SynapseAI", "npu-smi": "CANN"}


class DriverMemory(_Frozen):
    """The device memory a process is given, read on the delivered part, with its sources and date. Two readings:
    `smi_total_mib`, the total nvidia-smi / rocm-smi print (NVML memory.total; what the acceptance suite reads), and
    `cuda_total_gib`, what the runtime hands a process (cudaMemGetInfo's total = PyTorch's "total capacity" in its
    out-of-memory message = deviceQuery's totalGlobalMem), which is less again: nvidia-smi -q lists the difference as
    "Reserved" (H100 80GB HBM3: 81,559 MiB shown, 81,106 MiB to CUDA). The fit check uses `cuda_total_gib` where
    the catalog has it, else `smi_total_mib` (the driver's reserved part then not subtracted). GDDR cards with
    in-band ECC lose a sixteenth more while ECC is on (`ecc`: the state of the reading). No reading found: both
    None, and `note` says so (the label is then used)."""

    smi_total_mib: float | None = Field(default=None, gt=0)
    cuda_total_gib: float | None = Field(default=None, gt=0)
    tool: Literal["nvidia-smi", "rocm-smi", "hl-smi", "npu-smi"] | None = None
    ecc: bool | None = None
    sources: tuple[str, ...] = ()
    date: str | None = Field(default=None, pattern=DATE_PATTERN)
    note: str | None = None

    @model_validator(mode="after")
    def _said(self) -> DriverMemory:
        if (self.smi_total_mib or self.cuda_total_gib) and not (self.sources and self.date):
            raise ValueError(msg("rec_driver_memory_unsourced", allowed="sources, date"))
        if self.smi_total_mib and not self.tool:
            raise ValueError(msg("rec_driver_memory_unsourced", allowed="tool"))
        if self.smi_total_mib is None and self.cuda_total_gib is None and not self.note:
            raise ValueError(msg("rec_driver_memory_no_note",
                                 allowed="smi_total_mib / cuda_total_gib, or a note saying none was found"))
        if self.smi_total_mib and self.cuda_total_gib and self.cuda_total_gib > self.smi_total_mib / 1024.0:
            raise ValueError(msg("rec_driver_cuda_above_smi", cuda=self.cuda_total_gib,
                                 smi=f"{self.smi_total_mib / 1024.0:.2f}", allowed="cuda_total_gib <= smi_total_mib / 1024"))
        return self

    @property
    def smi_total_gib(self) -> float | None:
        return None if self.smi_total_mib is None else self.smi_total_mib / 1024.0

    @property
    def usable_gib(self) -> float | None:
        """What a process can allocate: the runtime's total where read, else the tool's total."""
        return self.cuda_total_gib or self.smi_total_gib


class L2Cache(_Frozen):
    """The on-chip cache the SMs / CUs of a part share, in binary units (a vendor's "50 MB" L2 is 50 x 2**20 bytes:
    cudaDeviceProp.l2CacheSize reads 52,428,800 on an H100), with its sources and date. A kernel whose working set
    fits it reads the operands a previous kernel wrote from it instead of DRAM (write-back: a producer's output
    stays resident until evicted). `memory_side_mib`: a last-level cache behind the L2, on the memory side (AMD
    Infinity Cache / MALL: it caches DRAM for every XCD, it is not an L2). docs/known-gaps.md 145.
    `read_tb_s` / `resident_mib`: a measured re-read rate and the largest data set read back at it (a
    microbenchmark's plateau, e.g. gpu_benches_l2), given together; None = not measured, no L2 term
    (estimate.compute.l2_reread_credit, docs/known-gaps.md 148)."""

    size_mib: float = Field(gt=0)
    memory_side_mib: float | None = Field(default=None, gt=0)
    read_tb_s: float | None = Field(default=None, gt=0)
    resident_mib: float | None = Field(default=None, gt=0)
    sources: tuple[str, ...]
    date: str = Field(pattern=DATE_PATTERN)
    note: str | None = None

    @model_validator(mode="after")
    def _said(self) -> L2Cache:
        if not self.sources:
            raise ValueError(msg("rec_l2_cache_unsourced", allowed="sources: [a source id], date"))
        if (self.read_tb_s is None) != (self.resident_mib is None):
            raise ValueError(msg("rec_l2_cache_rate_pair", allowed="both read_tb_s and resident_mib, or neither"))
        if self.resident_mib is not None and self.resident_mib > self.size_mib:
            raise ValueError(msg("rec_l2_cache_resident_over_size", resident=f"{self.resident_mib:g}",
                                 size=f"{self.size_mib:g}", allowed=f"resident_mib <= size_mib ({self.size_mib:g})"))
        return self


class SmOccupancy(_Frozen):
    """What a latency-bound kernel's rate rests on (estimate.step_time._bnb_8bit_kernel_s): the part's streaming
    multiprocessors, the threads and 32-bit registers one SM holds (the vendor's whitepaper / CUDA programming guide
    compute-capability table) and the DRAM and L2-hit latency of one dependent load, a pointer chase's plateaus past
    and within the L2 (e.g. gpu_benches_latency), with its sources and date. A kernel whose blocks wait on a few loads in series runs
    at (resident blocks x elements per block) / (loads x latency) per SM when that is below the HBM rate."""

    sms: int = Field(gt=0)
    threads_per_sm: int = Field(gt=0)
    registers_per_sm: int = Field(gt=0)
    dram_latency_ns: float = Field(gt=0)
    # a dependent load that hits the L2 (the same chase's plateau under the L2's size); None = not measured
    l2_latency_ns: float | None = Field(default=None, gt=0)
    sources: tuple[str, ...]
    date: str = Field(pattern=DATE_PATTERN)
    note: str | None = None

    @model_validator(mode="after")
    def _said(self) -> SmOccupancy:
        if not self.sources:
            raise ValueError(msg("rec_sm_occupancy_unsourced", allowed="sources: [a source id], date"))
        return self


class Accelerator(Record):
    """One accelerator SKU. TFLOPS are dense; memory_gib is derived from the driver-visible total where the
    catalog has one, else from the label (see below)."""

    name: str
    vendor: str
    arch: str
    form_factor: str
    launch_year: int = Field(ge=2010, le=2035)
    aliases: tuple[str, ...] = ()
    memory_gb: float = Field(gt=0)  # vendor label (installed HBM / GDDR), as printed
    # What the vendor's platform tables give as the GPU's memory when it is less than the label (B200: 192
    # installed, 180 in the HGX table), in the label's unit. None = the label is what the GPU exposes.
    memory_usable_gb: float | None = Field(default=None, gt=0)
    memory_label_unit: Literal["gib", "gb"] = "gib"
    # The total the driver shows a process (nvidia-smi / rocm-smi), with its source and date (DriverMemory).
    memory_driver: DriverMemory | None = None
    # Usable device memory in GiB: the capacity every fit check uses. Derived unless given: from the
    # driver-visible total (memory_driver.total_mib / 1024) where the catalog has one; else from memory_usable_gb
    # when set, else from the label: the figure itself when the label is a binary size (memory_label_unit 'gib':
    # HBM stacks / GDDR chips come in 2**30-byte multiples, the "GB" on the label is GiB), figure * 10**9 / 2**30
    # when decimal ('gb'). What a process itself takes (CUDA context, workspaces) is the estimator's concern.
    memory_gib: float = Field(gt=0)
    memory_gib_basis: str
    memory_type: str
    memory_bw_tb_s: float = Field(gt=0)
    # The L2 the SMs share (L2Cache: size, sources, date; AMD's Infinity Cache as memory_side_mib). None = not
    # given; nothing reads it yet (docs/known-gaps.md 145: an element-wise pass whose operands fit it).
    l2_cache: L2Cache | None = None
    # SMs, their thread / register capacity and the DRAM latency of a dependent load (SmOccupancy); None = not
    # given: no latency-bound kernel is timed on the part (docs/known-gaps.md 174)
    sm_occupancy: SmOccupancy | None = None
    # Dense peak TFLOP/s per precision (None = not supported / not published). fp32 = vector (CUDA-core) FP32;
    # fp32_matrix = AMD matrix-core FP32; tf32/bf16/fp16/fp8/fp6/fp4 = tensor/matrix rates.
    tflops_dense: dict[str, float | None]
    tflops_sparse_headline: dict[str, float] = Field(default_factory=dict)
    scaleup_tech: Literal["nvlink", "nvlink-bridge", "pcie", "xgmi", "hccs", "roce", "other"]
    scaleup_detail: str | None = None
    scaleup_bw_bidir_gb_s: float = Field(ge=0)
    scaleup_domain: int = Field(ge=1)
    # Point-to-point links per GPU when the scale-up fabric is a full mesh with no switch (AMD Infinity Fabric /
    # xGMI on the 8-GPU UBB: 7 links, one to each peer), over which scaleup_bw_bidir_gb_s is spread evenly. A
    # group of k GPUs of one host then drives only its k - 1 links (estimate.comm). None = switched (NVSwitch) or
    # a single link.
    scaleup_mesh_links: int | None = Field(default=None, ge=1)
    # GPUs per host (server / compute tray) of the standard product, when it differs from the scale-up domain
    # and from 8: GB200/GB300 NVL72 = 4 per 1U tray (2 superchips) in a 72-GPU NVLink domain. None = 8, or the
    # domain when that is smaller. A job's hardware.per_node defaults to it and its GPU count must be whole hosts.
    host_gpus: int | None = Field(default=None, ge=1)
    # Board power cap the part is run at when it is below the design TDP (nvidia-smi -pl; e.g. Meta's Grand
    # Teton H100 at 500 W). None = runs at tdp_w. Lowers sustained tensor clocks (estimate.calibration).
    power_limit_w: float | None = Field(default=None, gt=0)
    nvls: bool
    pcie_gen: int | None = Field(default=None, ge=3, le=7)  # None: not given (pcie_gb_s given instead)
    pcie_gb_s: float = Field(gt=0)  # host link per direction (x16), from pcie_generations unless given
    # GPU-to-GPU copy rate per direction inside a host for parts without a scale-up fabric when it is not the
    # PCIe link: GeForce drivers disable PCIe peer-to-peer, so NCCL stages every copy through host memory (SHM
    # transport). None = PCIe peer-to-peer at the link rate (pcie_gb_s).
    host_staged_gb_s_per_dir: float | None = Field(default=None, gt=0)
    # Host link per GPU per direction when the GPU reaches its CPU's memory over NVLink-C2C instead of PCIe
    # (Grace superchips: GB200, GB300); activation / optimizer offloading moves data over it. None = PCIe.
    c2c_gb_s_per_dir: float | None = Field(default=None, gt=0)
    tdp_w: float = Field(gt=0)
    ecc: bool | None  # None: not known (an overlay that left it out); plans treat it as a risk to check
    china_export_restricted: bool | None
    china_market_sku: bool = False
    domestic_china: bool = False
    market_note: str | None = None
    status: Availability = "shipping"
    available_from: str | None = Field(default=None, pattern=DATE_PATTERN)  # first shipments (or expected)
    # Catalog coverage known to be missing, and why: {server | price_usd | price_cny: reason}.
    none_known: dict[str, str] = Field(default_factory=dict)

    @field_validator("none_known")
    @classmethod
    def _coverage_keys(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if k not in COVERAGE_KEYS]
        if bad:
            raise ValueError(msg("rec_unknown_coverage_key", key=repr(bad[0]), allowed=Listing(COVERAGE_KEYS)))
        return value

    @property
    def plannable_by_default(self) -> bool:
        """False for parts announced but not shipping: plans leave them out unless a job names them."""
        return self.status in PLANNABLE_BY_DEFAULT

    @property
    def host_link_gb_s_per_dir(self) -> float:
        """GPU <-> host-memory rate per direction: NVLink-C2C on Grace superchips (c2c_gb_s_per_dir), else the
        PCIe link (pcie_gb_s)."""
        return self.c2c_gb_s_per_dir or self.pcie_gb_s

    @property
    def memory_label_gib(self) -> float:
        """The label capacity in GiB (installed memory; fit uses `memory_gib`)."""
        return self.memory_gb * (GIB_PER_GB if self.memory_label_unit == "gb" else 1.0)

    @field_validator("tflops_dense", mode="before")
    @classmethod
    def _tflops(cls, value: Any) -> Any:
        return _check_tflops(value)

    @model_validator(mode="before")
    @classmethod
    def _derive_memory_gib(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if data.get("memory_gib") is not None:
            return data if "memory_gib_basis" in data else {**data, "memory_gib_basis": "given"}
        driver = data.get("memory_driver")
        driver = dict(driver) if isinstance(driver, dict) else (driver.model_dump() if driver is not None else {})
        cuda, smi = driver.get("cuda_total_gib"), driver.get("smi_total_mib")
        if _positive(cuda):
            return {**data, "memory_gib": float(cuda),
                    "memory_gib_basis": "driver-visible: the total CUDA / HIP gives a process (cudaMemGetInfo)"}
        if _positive(smi):
            return {**data, "memory_gib": round(smi / 1024.0, 3),
                    "memory_gib_basis": f"driver-visible: {driver.get('tool')} total {smi:,.0f} MiB / 1024 (the "
                                        "driver's reserved part not read, not subtracted)"}
        usable = data.get("memory_usable_gb")
        field = "memory_usable_gb" if usable is not None else "memory_gb"
        gb = data.get(field)
        if isinstance(gb, int | float) and not isinstance(gb, bool):
            data = dict(data)
            what = "usable (vendor platform table)" if field == "memory_usable_gb" else "label"
            if data.get("memory_label_unit", "gib") == "gb":
                data["memory_gib"] = round(gb * GIB_PER_GB, 3)
                data["memory_gib_basis"] = f"{what}, decimal: {field} * 10**9 / 2**30"
            else:
                data["memory_gib"] = float(gb)
                data["memory_gib_basis"] = f"{what}, binary: the vendor 'GB' is GiB (2**30-byte stacks/chips)"
        return data

    @model_validator(mode="after")
    def _usable_within_label(self) -> Accelerator:
        if self.memory_usable_gb is not None and self.memory_usable_gb > self.memory_gb:
            raise ValueError(msg("rec_usable_above_label", usable=self.memory_usable_gb, label=self.memory_gb,
                                 allowed="memory_usable_gb <= memory_gb"))
        label = self.memory_label_gib
        for total in (self.memory_driver.smi_total_gib, self.memory_driver.cuda_total_gib) if self.memory_driver \
                else ():
            if total is not None and not DRIVER_MIN_LABEL_SHARE * label <= total <= label:
                raise ValueError(msg("rec_driver_memory_vs_label", total=f"{total:.2f}", label=f"{label:g}",
                                     share=f"{DRIVER_MIN_LABEL_SHARE:.0%}",
                                     allowed=f"{DRIVER_MIN_LABEL_SHARE:g} x {label:g} GiB .. {label:g} GiB"))
        return self

    def source_ids(self) -> set[str]:
        ids = super().source_ids()
        if self.memory_driver:
            ids.update(self.memory_driver.sources)
        if self.l2_cache:
            ids.update(self.l2_cache.sources)
        if self.sm_occupancy:
            ids.update(self.sm_occupancy.sources)
        return ids

    @property
    def memory_driver_gib(self) -> float | None:
        """What a process can allocate, where the catalog has a reading (None: the label is used)."""
        return self.memory_driver.usable_gib if self.memory_driver else None

    @property
    def host_gpus_max(self) -> int | None:
        """Most GPUs one host of the product holds: host_gpus; else, for parts on a board-level scale-up fabric
        (NVLink / xGMI / HCCS on an HGX, UBB or Atlas board: the board is the host), the scale-up domain; None
        where servers differ (PCIe cards: 1-10 per host)."""
        if self.host_gpus:
            return int(self.host_gpus)
        if self.scaleup_tech in ("nvlink", "xgmi", "hccs"):
            return int(self.scaleup_domain)
        return None

    @property
    def rack_nvlink(self) -> bool:
        """A rack-scale NVLink domain sold as a rack system (GB200 / GB300 NVL72: 18 compute trays of 4 GPUs in one
        72-GPU NVLink domain, NVLink switch trays and power shelves in the rack): a plan buys, powers and cables whole
        racks. Not Huawei's supernode (ascend-910c: a 768-die domain over its own fabric, sold as 16-die servers)."""
        return self.scaleup_tech == "nvlink" and int(self.scaleup_domain or 0) >= 72

    @property
    def gpus_per_host(self) -> int:
        """GPUs per host / compute tray: host_gpus, else 8 (the HGX / DGX board)."""
        if self.host_gpus:
            return int(self.host_gpus)
        return 8

    @property
    def scaleup_gb_s_per_dir(self) -> float:
        """Scale-up bandwidth per GPU, one direction, 10**9 B/s."""
        return self.scaleup_bw_bidir_gb_s / 2

    def supported_precisions(self) -> list[str]:
        t = self.tflops_dense
        return [p for p in TRAINING_PRECISIONS if self._lookup(p, t) is not None]

    @staticmethod
    def _lookup(precision: str, t: dict[str, float | None]) -> float | None:
        # FP32 training runs on TF32 tensor cores when the part has them, else matrix FP32, else vector FP32.
        order = ("tf32", "fp32_matrix", "fp32") if precision == "fp32" else (precision,)
        for key in order:
            value = t.get(key)
            if value:
                return float(value)
        return None

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s for a training precision ('fp32' uses TF32 tensor cores when available)."""
        p = str(precision).lower()
        if p not in TRAINING_PRECISIONS:
            raise SpecError(
                "precision",
                msg("error_unknown_name", kind=msg("kind_precision")),
                value=precision,
                allowed=TRAINING_PRECISIONS,
                suggestion=did_you_mean(p, TRAINING_PRECISIONS),
            )
        value = self._lookup(p, self.tflops_dense)
        if value is None:
            raise SpecError(
                "precision",
                msg("no_published_throughput", accelerator=self.id, precision=p),
                value=precision,
                allowed=self.supported_precisions(),
            )
        return value


# ------------------------------------------------------------------------------------------------ servers
class NicSpec(_Frozen):
    count: int = Field(ge=0)
    gbps: float = Field(gt=0)  # per port line rate, 10**9 bit/s
    model: str | None = None


class Server(Record):
    """A node (or, for NVL72, a rack) with its accelerators."""

    name: str
    accelerator: str
    gpus: int = Field(ge=1)
    cpu_model: str
    cpu_cores: int | None = Field(default=None, ge=1)
    ram_gib: float | None = Field(default=None, gt=0)
    # whether the order can carry more host RAM than ram_gib (DIMM slots); False where the memory is soldered with
    # the CPU (Grace LPDDR5X on a GB200 / GB300 tray), None where the catalog does not know
    ram_extensible: bool | None = None
    nvme_tb: float | None = Field(default=None, gt=0)
    nics: NicSpec
    storage_nics: NicSpec | None = None
    power_max_w: float = Field(gt=0)
    rack_units: float = Field(gt=0)
    cooling: str
    launch_year: int | None = None
    scaleup: str | None = None
    status: Availability = "shipping"
    available_from: str | None = Field(default=None, pattern=DATE_PATTERN)

    @property
    def plannable_by_default(self) -> bool:
        """False for systems announced but not shipping: plans leave them out unless a job names them."""
        return self.status in PLANNABLE_BY_DEFAULT

    @property
    def cooling_kind(self) -> str:
        """What `cooling` (the vendor's words, kept as written) says the server needs: liquid (liquid only),
        air_or_liquid (both offered), air, or unknown (not published). The one reading of the field: the search's
        constraints.cooling check, the facility block, and the words a plan prints in either language
        (`server_cooling_<kind>` in data/messages.yaml)."""
        text = self.cooling.lower()
        air, liquid = "air" in text, "liquid" in text
        if liquid:
            return "air_or_liquid" if air else "liquid"
        return "air" if air else "unknown"


# ------------------------------------------------------------------------------------------------ network
class Network(Record):
    """A selectable scale-out network."""

    name: str
    kind: Literal["ib", "roce", "efa", "ethernet"]
    generation: str | None = None
    gbps_per_nic: float = Field(gt=0)
    nics_per_node_default: int = Field(ge=1)
    efficiency: float | None = Field(default=None, gt=0, le=1)  # measured payload / line rate
    efficiency_planning: float = Field(gt=0, le=1)
    efficiency_basis: str
    measured_payload_gb_s_per_nic: float | None = Field(default=None, gt=0)
    # NCCL's all-to-all (send / recv to every peer) off-node: its payload per NIC as a share of the ring payload above,
    # where measured on this network; None = not measured, the all-to-all charged at the ring payload
    alltoall_payload_share: float | None = Field(default=None, gt=0, le=1)
    latency_us: float | None = Field(default=None, gt=0)
    nic: str
    switch: str | None = None
    # How the per-GPU bandwidth is built: `gbps_per_nic` is one switch-facing port, `nics_per_node_default`
    # counts ports per node; `ports_per_gpu` ports of one GPU's NIC go to `planes` independent switch planes
    # (ConnectX-8 on Ethernet: 2 x 400GbE, one per plane). Switch and cable counts follow the ports.
    ports_per_gpu: int = Field(default=1, ge=1)
    planes: int = Field(default=1, ge=1)

    @property
    def gbps_per_gpu(self) -> float:
        """Line rate per GPU (all its ports), 10**9 bit/s."""
        return self.gbps_per_nic * self.ports_per_gpu

    @property
    def line_gb_s_per_nic(self) -> float:
        """Line rate in 10**9 B/s per NIC and direction (gbps / 8)."""
        return self.gbps_per_nic / 8

    @property
    def payload_gb_s_per_nic(self) -> float:
        """Expected payload per NIC and direction: line rate x efficiency_planning."""
        return self.line_gb_s_per_nic * self.efficiency_planning


class Switch(Record):
    name: str
    kind: Literal["ib", "ethernet", "nvlink"]
    generation: str | None = None
    radix_by_gbps: dict[int, int]
    switching_tbps_as_marketed: float | None = None
    rack_units: float | None = None
    sharp: str | None = None
    cooling: str | None = None
    role: str | None = None
    status: str | None = None

    def radix(self, gbps: float) -> int:
        """Ports at a port speed (10**9 bit/s)."""
        key = int(gbps)
        if key not in self.radix_by_gbps:
            raise SpecError(
                f"switch {self.id}", msg("cat_no_ports_at_speed"), value=gbps, allowed=sorted(self.radix_by_gbps)
            )
        return self.radix_by_gbps[key]


# ------------------------------------------------------------------------------------------ low..high spans
def _low_typical_high(span: Any) -> Any:
    """A price or figure range reads low <= typical <= high (the validator of PartPrice and _Span)."""
    if span.low > span.high:
        raise ValueError(msg("rec_low_above_high", low=span.low, high=span.high))
    if span.typical is not None and not span.low <= span.typical <= span.high:
        raise ValueError(msg("rec_typical_outside", typical=span.typical, low=span.low, high=span.high))
    return span


def _mid(span: Any) -> float:
    return span.typical if span.typical is not None else (span.low + span.high) / 2


# ------------------------------------------------------------------------------------------------ parts
PART_KINDS = ("cable", "transceiver", "rack", "pdu", "ups", "storage_server", "subnet_manager", "nvlink_switch")


class PartPrice(_Frozen):
    """A planning price range for one part in one currency, with its own evidence."""

    low: float = Field(ge=0)
    high: float = Field(ge=0)
    typical: float | None = Field(default=None, ge=0)
    sources: tuple[str, ...] = Field(min_length=1)
    date: str = Field(pattern=DATE_PATTERN)
    basis: str | None = None  # how the figure was obtained (quote, derived from ..., ...)

    _ordered = model_validator(mode="after")(_low_typical_high)

    @property
    def mid(self) -> float:
        return _mid(self)


class Part(Record):
    """A bill-of-materials part other than GPUs, servers and switches (cables, optics, racks, power).

    `gbps` is the line rate per link the part carries; `reach_m` its longest supported link; `links` how many
    switch/NIC ports one part serves (a twin-port OSFP transceiver serves 2). Prices per unit, by currency."""

    name: str
    kind: Literal["cable", "transceiver", "rack", "pdu", "ups", "storage_server", "subnet_manager",
                  "nvlink_switch", "host_memory"]
    medium: str | None = None  # dac | acc | mmf | smf (cables and optics)
    gbps: float | None = Field(default=None, gt=0)
    reach_m: float | None = Field(default=None, gt=0)
    links: int = Field(default=1, ge=1)
    power_w: float | None = Field(default=None, ge=0)
    rack_units: float | None = Field(default=None, gt=0)
    kw: float | None = Field(default=None, gt=0)  # rack / PDU / UPS rating
    capacity_tb: float | None = Field(default=None, gt=0)
    read_gb_s: float | None = Field(default=None, gt=0)
    write_gb_s: float | None = Field(default=None, gt=0)
    price: dict[Literal["USD", "CNY"], PartPrice] = Field(default_factory=dict)

    def source_ids(self) -> set[str]:
        ids = super().source_ids()
        for p in self.price.values():
            ids.update(p.sources)
        return ids


# ------------------------------------------------------------------------------------------------ storage
class PcieGeneration(Record):
    gen: int = Field(ge=1)
    x16_gb_s_per_dir: float = Field(gt=0)
    x4_gb_s_per_dir: float = Field(gt=0)


class StorageTier(Record):
    name: str
    kind: Literal["node_local", "nfs", "parallel_fs", "object"]
    read_gb_s_per_node: Range | None = None
    write_gb_s_per_node: Range | None = None
    read_gb_s_per_su: Range | None = None
    write_gb_s_per_su: Range | None = None
    write_gb_s_aggregate: float | None = Field(default=None, gt=0)
    capacity_tb_per_node: float | None = Field(default=None, gt=0)


# -------------------------------------------------------------------------------------- prices / figures
class _Span(Record):
    low: float = Field(ge=0)
    high: float = Field(ge=0)
    typical: float | None = Field(default=None, ge=0)
    period: str | None = None
    # True when the figure is a forecast or an announced list price not yet paid by buyers, not an observation.
    projection: bool = False

    _ordered = model_validator(mode="after")(_low_typical_high)

    @property
    def mid(self) -> float:
        """The source's typical value when it gives one, else the arithmetic mean of low and high."""
        return _mid(self)


class PriceRange(_Span):
    """The planning price range for one subject (accelerator, server or switch)."""

    subject: str
    kind: Literal["purchase", "rent"]
    currency: Literal["USD", "CNY"]
    unit: Literal["per_gpu", "per_server", "per_rack", "per_switch", "per_gpu_hour"]
    basis: tuple[str, ...] = ()
    # Rent only: the largest allocation the listings behind this price offer (e.g. 8 = single servers with no
    # multi-node fabric). A larger job cannot be rented at this price; None = no limit is known.
    max_gpus: int | None = Field(default=None, ge=1)
    # Rent only: how the listings behind the price bill (None: per GPU, per hour, as on-demand instances).
    # billed_gpus: the GPUs of one rental unit (a superchip, an 8-GPU node under contract, a rack): a job rents
    # whole units; min_hours: the shortest term billed (a monthly contract 730 h, an annual lease 8,760 h).
    billed_gpus: int | None = Field(default=None, ge=1)
    min_hours: float | None = Field(default=None, gt=0)
    # Rent only: the listings rent a multi-host scale-up domain whole (an NVL72 rack of 18 trays), so a job larger
    # than one domain pays for every rack it is placed in (evaluate.rented_gpus); a job inside one rack bills as above.
    billed_whole_domains: bool = False
    # Rent only: the billing term every figure of the range is on (one range never mixes terms). None: on demand,
    # what a job of hours or days pays; "reserved": a committed term of `min_hours` (a 1-year reservation), kept
    # as its own record (id `<kind>-<currency>-<subject>-reserved`) beside the on-demand one and read by the
    # buy-vs-rent comparison, never as a job's price (Catalog.price skips it unless asked).
    term: Literal["reserved"] | None = None

    @field_validator("currency", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @property
    def source(self) -> str:
        """Source ids, comma separated (the registry has titles, urls and dates)."""
        return ", ".join(self.sources)


class PricePoint(_Span):
    """One dated price observation (traceability for PriceRange.basis). A rental instance's own host RAM and GPUs
    where a listing states them (instance_ram_gib, instance_gpus, from instance_ram_sources):
    what a rented layout that offloads states to host RAM is held to (Catalog.rent_instance_ram)."""

    item: str
    provider: str | None = None
    subject: str | None = None
    currency: Literal["USD", "CNY"]
    unit: str
    instance_ram_gib: float | None = Field(default=None, gt=0)
    instance_gpus: int | None = Field(default=None, ge=1)
    instance_ram_sources: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _instance_ram_whole(self) -> PricePoint:
        """An instance's RAM is stated with its GPU count and the source it was read from."""
        if (self.instance_ram_gib is None) != (self.instance_gpus is None) or (
                self.instance_ram_gib is not None and not self.instance_ram_sources):
            raise ValueError("instance_ram_gib needs instance_gpus and instance_ram_sources")
        return self

    def source_ids(self) -> set[str]:
        return super().source_ids() | set(self.instance_ram_sources)

    @property
    def ram_gib_per_gpu(self) -> float | None:
        return None if self.instance_ram_gib is None else self.instance_ram_gib / float(self.instance_gpus or 1)


class Figure(_Span):
    """A facility or reliability planning figure."""

    metric: str
    unit: str
    region: str | None = None


class ReliabilityDataset(Record):
    system: str
    accelerator: str | None = None
    gpus: int | None = Field(default=None, ge=1)
    nodes: int | None = Field(default=None, ge=1)
    days: float | None = Field(default=None, gt=0)
    interruptions_total: int | None = None
    planned: int | None = None
    unplanned: int | None = None
    failures_per_1000_node_days: float | None = None
    job_mtbf_hours: float | None = None
    per_gpu_mtbf_hours: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class Formula(Record):
    """A sizing formula as text with its origin (the estimate/search layers implement it)."""

    formula: str


ReliabilityFormula = Formula


class CollectiveMeasurement(Record):
    """A measured NCCL collective bandwidth (busbw, 10**9 B/s)."""

    system: str
    accelerator: str | None = None
    network: str | None = None
    gpus: int = Field(ge=1)
    nodes: int = Field(ge=1)
    op: str
    algo: str | None = None
    busbw_gb_s: Range
    algbw_gb_s: float | None = Field(default=None, gt=0)
    payload: str | None = None


# ------------------------------------------------------------------------------------------ documented scale
class ScaleEvidence(_Frozen):
    """One document of how large a platform is known to work (catalog/evidence/scale.yaml)."""

    gpus: int = Field(0, ge=0)  # 0: not a size (what a training stack documents about scale)
    kind: Literal["training_run", "benchmark", "reference_design", "software"] = "software"
    what: str = Field(min_length=1)
    sources: tuple[str, ...] = Field(min_length=1)
    date: str = Field(pattern=DATE_PATTERN)

    @field_validator("date", mode="before")
    @classmethod
    def _year(cls, value: Any) -> Any:
        """A bare year (`date: 2025`, YAML reads it as a number) is a date too."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class ScalePlatform(Record):
    """A platform (board, scale-up fabric, NICs, collective library), its accelerators and how large a cluster
    of it is documented to work: `demonstrated` (largest published run or benchmark), `designed` (largest
    vendor reference design); `also` smaller runs, `software` what the training stack documents."""

    name: str
    members: tuple[str, ...] = Field(min_length=1)
    demonstrated: ScaleEvidence | None = None
    designed: ScaleEvidence | None = None
    also: tuple[ScaleEvidence, ...] = ()
    software: tuple[ScaleEvidence, ...] = ()

    @model_validator(mode="after")
    def _sized(self) -> ScalePlatform:
        for level in ("demonstrated", "designed"):
            ev = getattr(self, level)
            if ev is not None and ev.gpus < 1:
                raise ValueError(msg("rec_scale_size", level=level))
        return self

    def evidence(self) -> tuple[ScaleEvidence, ...]:
        return tuple(e for e in (self.demonstrated, self.designed, *self.also, *self.software) if e is not None)

    def source_ids(self) -> set[str]:
        return super().source_ids() | {s for e in self.evidence() for s in e.sources}
