"""Acceptance criteria: the JSON schema `trainsizer plan` writes and `trainsizer accept` reads.

Every threshold is a `Limit` with its source. Until plans exist, `from_platform` derives the criteria from
the platform reference table (data/platforms.yaml); a plan's criteria win field by field (`merged`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trainsizer.accept import platforms
from trainsizer.accept.amdgpu_log import AMDGPU_EVENT_KINDS
from trainsizer.errors import SpecError, given
from trainsizer.messages import Msg, msg, storable
from trainsizer.spec.load import pydantic_problem
from trainsizer.spec.parse_problems import parse_problem

OPS = ("all_reduce", "all_gather", "reduce_scatter")
# the collectives' floors by the path a test runs over: one node, one scale-up domain inside a node, across nodes
BUSBW_SCOPES = ("intra", "domain", "inter")


def suite_check(number: int, rule: str | None = None) -> Msg:
    """Where a check of the acceptance suite is described: its row in docs/acceptance.md section 3, and the
    rule applied (a message key, `acc_rule_*`) when one is named."""
    where = msg("acc_src_suite_check", number=number)
    return msg("acc_src_suite_rule", where=where, rule=msg(rule)) if rule else where


class Limit(BaseModel):
    """A threshold value and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float | int | str
    source: str
    # a plan's threshold: the catalogue message `source` was written from ({key, params}; plan/texts.py), so a
    # report shows it in the reader's language
    source_msg: dict[str, Any] | None = None

    @classmethod
    def said(cls, value: float | int | str, source: Msg) -> Limit:
        """A threshold whose source is a catalogue message: English in `source`, the message in `source_msg`."""
        return cls(value=value, source=str(source), source_msg=storable(source))


def _numeric(limit: Limit | None) -> Limit | None:
    """A threshold compared as a number must be one ("fast" would only fail when its check runs)."""
    if limit is not None and (isinstance(limit.value, bool) or not isinstance(limit.value, int | float)):
        raise ValueError(msg("acc_value_number", value=repr(limit.value)))
    return limit


class CollectiveLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    all_reduce: Limit | None = None
    all_gather: Limit | None = None
    reduce_scatter: Limit | None = None

    _numbers = field_validator("all_reduce", "all_gather", "reduce_scatter")(_numeric)


class AcceptanceCriteria(BaseModel):
    """What a delivered node (and the fleet) must show. `None` = not required / no reference."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    platform: str | None = None
    source: str = "defaults"
    # 1. inventory (per node)
    gpu_count: Limit | None = None
    gpu_model: Limit | None = None
    gpu_memory_gib_min: Limit | None = None
    driver_version_min: Limit | None = None
    cuda_version_min: Limit | None = None
    # NCCL's version on an NVIDIA node, RCCL's (which numbers itself as the NCCL API it implements) on an AMD one
    nccl_version_min: Limit | None = None
    rocm_version_min: Limit | None = None
    nvlinks_per_gpu: Limit | None = None
    xgmi_links_per_gpu: Limit | None = None
    nic_count_min: Limit | None = None
    nic_speed_gbps_min: Limit | None = None
    cpu_cores_min: Limit | None = None
    ram_gib_min: Limit | None = None
    disks_min: Limit | None = None
    # 2. health
    critical_xids: list[int] | None = None
    critical_xids_source: str | None = None
    # the amdgpu kernel-log events (accept.amdgpu_log.AMDGPU_EVENT_KINDS) that fail an AMD node, where Xid does not apply
    critical_amdgpu_events: list[str] | None = None
    critical_amdgpu_events_source: str | None = None
    ecc_corrected_max: Limit | None = None
    # 3. compute (per GPU)
    gemm_tflops_min: dict[Literal["bf16", "fp8"], Limit] = Field(default_factory=dict)
    hbm_gb_s_min: Limit | None = None
    # 4. collectives (busbw, nccl-tests definition) and RDMA wire
    busbw_intra_gb_s_min: CollectiveLimits = Field(default_factory=CollectiveLimits)
    busbw_inter_gb_s_min: CollectiveLimits = Field(default_factory=CollectiveLimits)
    # a node whose scale-up domain is smaller than the node (NVLink bridges join 2 of its 8 PCIe cards): the GPUs of
    # one domain, and the floors of a ring inside each domain (all domains tested at once); busbw_intra is then the
    # whole node's ring, which crosses the slower host link
    scaleup_domain_gpus: int | None = Field(default=None, ge=2)
    busbw_domain_gb_s_min: CollectiveLimits = Field(default_factory=CollectiveLimits)
    rdma_gbps_min: Limit | None = None
    # 5. storage
    storage_path: str | None = None
    dataset_path: str | None = None
    storage_read_gb_s_min: Limit | None = None
    storage_write_gb_s_min: Limit | None = None
    checkpoint_size_gb: float | None = None
    checkpoint_save_s_max: Limit | None = None
    checkpoint_restore_s_max: Limit | None = None
    # 6. thermal / burn-in / fleet
    temp_max_c: Limit | None = None
    fleet_min_ratio: Limit | None = None

    _numbers = field_validator(
        "gpu_count", "gpu_memory_gib_min", "nvlinks_per_gpu", "xgmi_links_per_gpu", "nic_count_min",
        "nic_speed_gbps_min", "cpu_cores_min",
        "ram_gib_min", "disks_min", "ecc_corrected_max", "hbm_gb_s_min", "rdma_gbps_min", "storage_read_gb_s_min",
        "storage_write_gb_s_min", "checkpoint_save_s_max", "checkpoint_restore_s_max", "temp_max_c",
        "fleet_min_ratio")(_numeric)

    @field_validator("critical_amdgpu_events")
    @classmethod
    def _amdgpu_kinds(cls, value: list[str] | None) -> list[str] | None:
        unknown = [k for k in value or [] if k not in AMDGPU_EVENT_KINDS]
        if unknown:
            raise ValueError(msg("acc_amdgpu_event_kind", kinds=", ".join(unknown),
                                 allowed=", ".join(AMDGPU_EVENT_KINDS)))
        return value

    @field_validator("gemm_tflops_min")
    @classmethod
    def _gemm_numbers(cls, value: dict[str, Limit]) -> dict[str, Limit]:
        for limit in value.values():
            _numeric(limit)
        return value


def _lim(value: float | int | str, source_id: str) -> Limit:
    return Limit(value=value, source=platforms.source_text(source_id))


def _scaled(ref: dict, ratio: dict, digits: int = 1, derived: dict | None = None, floor: str = "") -> Limit:
    """reference x cited ratio; a floor the platform row `derived` marks derived (`derived_floors`: no vendor or
    cloud pass mark for the part was read) says so before how it was derived."""
    value = round(float(ref["value"]) * float(ratio["value"]), digits)
    ref_source = ref["source"] if isinstance(ref["source"], Msg) else platforms.source_text(ref["source"])
    how = msg("acc_src_scaled", ratio=ratio["value"], ref=ref["value"],
              ratio_source=platforms.source_text(ratio["source"]), ref_source=ref_source)
    if derived is not None and floor in derived.get("derived_floors", ()):
        return Limit.said(value, msg("acc_src_derived", platform=derived["id"], how=how))
    return Limit.said(value, how)


def generic() -> AcceptanceCriteria:
    """Criteria without a platform: health, temperature and fleet rules only."""
    d = platforms.defaults()
    return AcceptanceCriteria(
        source=str(msg("acc_criteria_defaults")),
        critical_xids=list(d["critical_xids"]["value"]),
        critical_xids_source=platforms.source_text(d["critical_xids"]["source"]),
        critical_amdgpu_events=list(d["critical_amdgpu_events"]["value"]),
        critical_amdgpu_events_source=platforms.source_text(d["critical_amdgpu_events"]["source"]),
        ecc_corrected_max=_lim(d["ecc_corrected_max"]["value"], d["ecc_corrected_max"]["source"]),
        temp_max_c=_lim(d["temp_max_c"]["value"], d["temp_max_c"]["source"]),
        fleet_min_ratio=_lim(d["fleet_min_ratio"]["value"], d["fleet_min_ratio"]["source"]),
    )


def from_platform(platform_id: str, *, gpus_per_node: int | None = None) -> AcceptanceCriteria:
    """Criteria derived from the platform reference table (thresholds = reference x cited ratio)."""
    p = platforms.get(platform_id)
    d = platforms.defaults()
    crit = generic()
    crit.platform = platform_id
    crit.source = str(msg("acc_criteria_platform", platform=platform_id))
    n = gpus_per_node or p["gpus_per_node"]
    crit.gpu_count = Limit.said(n, msg("acc_src_gpus_per_node", platform=platform_id, gpus=p["gpus_per_node"]))
    crit.gpu_model = Limit.said(p["match"][0], msg("acc_src_platform", platform=platform_id))
    mem = {"value": p["memory_label_gib"], "source": msg("acc_src_memory_label", platform=platform_id)}
    crit.gpu_memory_gib_min = _scaled(mem, d["memory_min_ratio"], 1)
    for field, key in (("nvlinks_per_gpu", "nvlinks_per_gpu"), ("xgmi_links_per_gpu", "xgmi_links_per_gpu")):
        if key in p:
            setattr(crit, field, _lim(p[key]["value"], p[key]["source"]))
    crit.nic_count_min = _lim(p["nics_per_node"]["value"], p["nics_per_node"]["source"])
    crit.nic_speed_gbps_min = _lim(p["nic_line_rate_gbps"]["value"], p["nic_line_rate_gbps"]["source"])
    # a reference x the cited ratio (Bekman's MAMF), or the vendor's own pass mark as it stands (AMD RVS GST targets)
    crit.gemm_tflops_min = {**{k: _scaled(v, d["gemm_min_ratio"]) for k, v in p.get("gemm_ref_tflops", {}).items()},
                            **{k: _lim(v["value"], v["source"]) for k, v in p.get("gemm_min_tflops", {}).items()}}
    # the vendor's own floor for the copy accept/hbm.py times (AMD CVS on MI300X), else the cited ratio x the data sheet
    crit.hbm_gb_s_min = (_lim(p["hbm_min_gb_s"]["value"], p["hbm_min_gb_s"]["source"]) if "hbm_min_gb_s" in p
                         else _scaled(p["hbm_spec_gb_s"], d["hbm_min_ratio"], 0, p, "hbm")
                         if "hbm_spec_gb_s" in p else None)
    _vendor_lists(crit, p.get("vendor", "nvidia"))
    # a switchless xGMI mesh rings at a lower share of its links than an NVSwitch port (docs/acceptance.md check 9)
    link, ratio = (p["xgmi_uni_gb_s"], d["ring_min_ratio_mesh"]) if "xgmi_uni_gb_s" in p else \
        (p["nvlink_uni_gb_s"], d["ring_min_ratio"])
    ring = _scaled(link, ratio, 1, p, "ring")
    nvls = p.get("nvls")
    if nvls and n >= nvls["min_gpus"]:
        ar = _lim(p["allreduce_nvls_min_gb_s"]["value"], p["allreduce_nvls_min_gb_s"]["source"])
        ar = Limit.said(ar.value, msg("acc_src_nvls", gpus=n, min_gpus=nvls["min_gpus"],
                                      nvls_source=platforms.source_text(nvls["source"]), source=ar.source))
    elif "allreduce_ring_min_gb_s" in p:
        ar = _lim(p["allreduce_ring_min_gb_s"]["value"], p["allreduce_ring_min_gb_s"]["source"])
    else:
        ar = ring
    crit.busbw_intra_gb_s_min = CollectiveLimits(all_reduce=ar, all_gather=ring, reduce_scatter=ring)
    # Ring busbw across nodes is bounded by the per-node NIC aggregate (sum of line rates / 8).
    aggregate = {
        "value": p["nics_per_node"]["value"] * p["nic_line_rate_gbps"]["value"] / 8,
        "source": msg("acc_src_nic_aggregate", nics=p["nics_per_node"]["value"],
                      gbps=p["nic_line_rate_gbps"]["value"],
                      source=platforms.source_text(p["nic_line_rate_gbps"]["source"])),
    }
    inter = _scaled(aggregate, d["inter_ring_min_ratio"])
    crit.busbw_inter_gb_s_min = CollectiveLimits(all_reduce=inter, all_gather=inter, reduce_scatter=inter)
    crit.rdma_gbps_min = _scaled(p["nic_line_rate_gbps"], d["rdma_min_ratio"])
    return crit


def _vendor_lists(crit: AcceptanceCriteria, vendor: str) -> None:
    """A platform row's kernel-log list: critical Xids on NVIDIA, amdgpu's RAS / reset events on AMD, not both."""
    if vendor != "nvidia":
        crit.critical_xids = crit.critical_xids_source = None
    if vendor != "amd":
        crit.critical_amdgpu_events = crit.critical_amdgpu_events_source = None


def fleet_ratio(crit: AcceptanceCriteria | None) -> tuple[float, str]:
    """The straggler rule's ratio and its source: the criteria's, else the platform table's default."""
    limit = crit.fleet_min_ratio if crit is not None else None
    if limit is None:
        d = platforms.defaults()["fleet_min_ratio"]
        limit = _lim(d["value"], d["source"])
    return float(limit.value), limit.source


def merged(plan: AcceptanceCriteria, base: AcceptanceCriteria) -> AcceptanceCriteria:
    """`plan` with every field it leaves empty filled from `base` (plan values win)."""
    out = base.model_copy(deep=True)
    for field in AcceptanceCriteria.model_fields:
        value = getattr(plan, field)
        if field in tuple(f"busbw_{scope}_gb_s_min" for scope in BUSBW_SCOPES):
            limits = getattr(out, field)
            for op in OPS:
                if getattr(value, op) is not None:
                    setattr(limits, op, getattr(value, op))
        elif field == "gemm_tflops_min":
            out.gemm_tflops_min = {**out.gemm_tflops_min, **value}
        elif value is not None and field not in ("schema_version",):
            setattr(out, field, value)
    out.source = plan.source if base.source.startswith("defaults") else f"{plan.source}; else {base.source}"
    return out


def load(path: str | Path) -> AcceptanceCriteria:
    """Criteria from a plan file: the criteria object itself, or a plan holding it under `acceptance` or
    `build.acceptance` (`trainsizer plan --out`)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SpecError(str(path), msg("acc_cannot_read_plan", reason=str(err.strerror))) from None
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}:{err.lineno}", msg("file_bad_json", detail=parse_problem(err.msg))) from None
    prefix = ""
    if isinstance(data, dict) and "acceptance" in data:
        data, prefix = data["acceptance"], "acceptance."
    elif isinstance(data, dict) and isinstance(data.get("build"), dict) and "acceptance" in data["build"]:
        # a `trainsizer plan` file: the build-out of the recommended (or --option) option holds the criteria
        data, prefix = data["build"]["acceptance"], "build.acceptance."
    if not isinstance(data, dict):
        raise SpecError(f"{path}", msg("acc_criteria_not_object"), value=given(data))
    data.setdefault("source", f"plan {path.name}")
    try:
        return AcceptanceCriteria.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = prefix + ".".join(str(p) for p in first["loc"])
        allowed = None
        if first["type"] == "extra_forbidden":
            allowed = sorted(AcceptanceCriteria.model_fields)
        raise SpecError(f"{path.name}: {where}", pydantic_problem(first),
                        value=first.get("input"),
                        allowed=allowed) from None


def resolve(plan_path: str | Path | None, platform_id: str | None, gpu_name: str | None) -> AcceptanceCriteria:
    """The criteria for a run: plan, else platform (given, from the plan, or detected), else generic."""
    plan = load(plan_path) if plan_path else None
    pid = platform_id or (plan.platform if plan else None) or (platforms.detect(gpu_name) if gpu_name else None)
    if platform_id:
        platforms.get(platform_id)
    elif plan and plan.platform:
        platforms.get(plan.platform, where=f"{Path(plan_path).name}: platform")
    base = from_platform(pid) if pid else generic()
    return merged(plan, base) if plan else base


def version_at_least(have: str, need: str) -> bool:
    """'535.104.05' >= '535.54' compared numerically part by part."""
    def parts(v: str) -> tuple[int, ...]:
        out = []
        for piece in str(v).replace("-", ".").split("."):
            digits = "".join(ch for ch in piece if ch.isdigit())
            out.append(int(digits) if digits else 0)
        return tuple(out)
    return parts(have) >= parts(need)
