"""Check 1: inventory vs plan (GPUs, memory, versions, NVLink, NICs, CPUs, RAM, disks)."""

from __future__ import annotations

from dataclasses import asdict

from trainsizer.accept import host
from trainsizer.accept.context import Context
from trainsizer.accept.criteria import Limit, suite_check, version_at_least
from trainsizer.accept.results import CheckResult
from trainsizer.accept.telemetry import GpuInfo
from trainsizer.estimate.memory import GIB
from trainsizer.messages import msg


def node_info(ctx: Context, info: host.HostInfo | None = None) -> dict:
    info = info or host.probe(ctx.options.sysfs_root)
    tel = ctx.telemetry
    return {
        "hostname": ctx.node,
        "telemetry": tel.source if tel else ctx.telemetry_why,
        "driver_version": tel.driver_version() if tel else None,
        "cuda_version": tel.cuda_version() if tel else None,
        "nccl_version": host.nccl_version(),
        "gpus": [asdict(g) for g in ctx.gpus()],
        "cpu_count": info.cpu_count,
        "ram_gib": round(info.ram_bytes / GIB, 1) if info.ram_bytes else None,
        "disks": info.disks,
        "nics": [asdict(n) for n in info.nics],
    }


def _version(ctx: Context, name: str, have: str | None, need: Limit | None, why_missing: str) -> CheckResult:
    if have is None:
        return ctx.skipped(name, why_missing, limit=need)
    if need is None:
        return ctx.result(name, "skipped", measured=have, why=msg("acc_why_found_no_minimum", have=have))
    ok = version_at_least(have, str(need.value))
    return ctx.result(name, "pass" if ok else "fail", measured=have, limit=need,
                      why=msg("acc_why_version", have=have, rel=">=" if ok else "<", need=need.value))


def _equal(ctx: Context, name: str, measured: int, limit: Limit | None, what: str) -> CheckResult:
    if limit is None:
        return ctx.result(name, "skipped", measured=measured,
                          why=msg("acc_why_found_not_in_criteria", what=what, measured=measured))
    ok = measured == int(limit.value)
    return ctx.result(name, "pass" if ok else "fail", measured=measured, limit=limit,
                      why=msg("acc_why_found_plan", what=what, measured=measured, rel="=" if ok else "!=",
                              planned=limit.value))


def _no_telemetry(ctx: Context) -> list[CheckResult]:
    crit = ctx.criteria
    limits = {"gpu_count": crit.gpu_count, "gpu_model": crit.gpu_model, "gpu_memory": crit.gpu_memory_gib_min}
    return [ctx.skipped(f"inventory.{name}", ctx.telemetry_why, limit=limits.get(name))
            for name in ("gpu_count", "gpu_model", "gpu_memory", "driver_version", "cuda_version", "ecc_mode",
                         "nvlink_up")]


def _gpu_model(ctx: Context, gpus: list[GpuInfo]) -> CheckResult:
    crit = ctx.criteria
    names = sorted({g.name for g in gpus})
    if crit.gpu_model is None:
        return ctx.result("inventory.gpu_model", "skipped", measured=", ".join(names),
                          why=msg("acc_why_no_gpu_model"))
    want = str(crit.gpu_model.value).lower()
    bad = [g.index for g in gpus if want not in g.name.lower()]
    return ctx.result(
        "inventory.gpu_model", "fail" if bad or not gpus else "pass", measured=", ".join(names),
        limit=crit.gpu_model,
        why=msg("acc_why_gpus_not_model", gpus=str(bad), model=repr(crit.gpu_model.value)) if bad
        else msg("acc_why_all_gpus_match", model=repr(want)),
    )


def _ecc_mode(ctx: Context, gpus: list[GpuInfo]) -> CheckResult:
    ecc = {g.index: g.ecc_enabled for g in gpus if g.ecc_enabled is not None}
    off = sorted(i for i, on in ecc.items() if not on)
    if not ecc:
        return ctx.skipped("inventory.ecc_mode", msg("acc_why_ecc_not_reported_amd" if ctx.telemetry.vendor == "amd"
                                                     else "acc_why_ecc_not_reported"))
    return ctx.result("inventory.ecc_mode", "fail" if off else "pass", measured=len(off), threshold=0,
                      unit="GPUs without ECC", source=suite_check(1, "acc_rule_ecc_enabled"),
                      why=msg("acc_why_ecc_off", gpus=str(off)) if off else msg("acc_why_ecc_on", n=len(ecc)))


def _nvlink_up(ctx: Context, gpus: list[GpuInfo]) -> CheckResult:
    crit = ctx.criteria
    ups = [(g.index, g.nvlinks_up, g.nvlinks_total) for g in gpus if g.nvlinks_up is not None]
    if not ups:
        return ctx.skipped("inventory.nvlink_up", msg("acc_why_nvlink_not_reported"),
                           limit=crit.nvlinks_per_gpu)
    low = min(u for _, u, _ in ups)
    down = [i for i, u, t in ups if t is not None and u < t]
    res = ctx.at_least("inventory.nvlink_up", low, crit.nvlinks_per_gpu, "links", msg("acc_what_nvlinks_up"),
                       details={"per_gpu": {i: u for i, u, _ in ups}})
    if down and res.status != "fail":
        res.status = "fail"
        ctx.add_why(res, msg("acc_why_inactive_nvlinks", gpus=str(down)), key="acc_why_because")
    return res


def _xgmi_up(ctx: Context, gpus: list[GpuInfo]) -> CheckResult:
    """AMD Instinct: the xGMI links each GPU has to its peers, up (amd-smi xgmi -l), in the place of NVLinks."""
    crit = ctx.criteria
    ups = [(g.index, g.xgmi_links_up, g.xgmi_links_total) for g in gpus if g.xgmi_links_up is not None]
    if not ups:
        return ctx.skipped("inventory.xgmi_up", msg("acc_why_xgmi_not_reported"), limit=crit.xgmi_links_per_gpu)
    down = [i for i, u, t in ups if t is not None and u < t]
    res = ctx.at_least("inventory.xgmi_up", min(u for _, u, _ in ups), crit.xgmi_links_per_gpu, "links",
                       msg("acc_what_xgmi_up"), details={"per_gpu": {i: u for i, u, _ in ups}})
    if down:  # which GPUs, whether or not the count already failed
        res.status = "fail"
        ctx.add_why(res, msg("acc_why_xgmi_down", gpus=str(down)), key="acc_why_because")
    return res


def _toolkit(ctx: Context) -> CheckResult:
    """CUDA's version on an NVIDIA node; on an AMD node the ROCm release (amd-smi version), whose amdgpu it ships."""
    tel, crit = ctx.telemetry, ctx.criteria
    if tel.vendor == "amd":
        return _version(ctx, "inventory.rocm_version", tel.rocm_version(), crit.rocm_version_min,
                        msg("acc_why_rocm_not_reported"))
    return _version(ctx, "inventory.cuda_version", tel.cuda_version(), crit.cuda_version_min,
                    msg("acc_why_cuda_not_reported"))


def _gpu_checks(ctx: Context) -> list[CheckResult]:
    """The GPUs as the telemetry reports them: count, model, memory, driver, CUDA (ROCm), ECC, NVLink (xGMI)."""
    crit = ctx.criteria
    gpus = ctx.gpus()
    mems = [g.memory_total_bytes / GIB for g in gpus if g.memory_total_bytes]
    return [
        _equal(ctx, "inventory.gpu_count", len(gpus), crit.gpu_count, msg("acc_what_gpus")),
        _gpu_model(ctx, gpus),
        ctx.at_least("inventory.gpu_memory", round(min(mems), 1) if mems else None,
                     crit.gpu_memory_gib_min, "GiB", msg("acc_what_gpu_memory")),
        _version(ctx, "inventory.driver_version", ctx.telemetry.driver_version(),
                 crit.driver_version_min, msg("acc_why_driver_not_reported")),
        _toolkit(ctx),
        _ecc_mode(ctx, gpus),
        _xgmi_up(ctx, gpus) if ctx.telemetry.vendor == "amd" else _nvlink_up(ctx, gpus),
    ]


def _nic_checks(ctx: Context, info: host.HostInfo) -> list[CheckResult]:
    crit = ctx.criteria
    out: list[CheckResult] = []
    rdma = [n for n in info.nics if n.kind == "rdma"]
    active = [n for n in rdma if n.up]
    nic_details = {"rdma": [asdict(n) for n in rdma]}
    if not rdma and crit.nic_count_min is None:
        out.append(ctx.skipped("inventory.nics", msg("acc_why_no_rdma_nic"), details=nic_details))
    else:
        out.append(ctx.at_least("inventory.nics", len(active), crit.nic_count_min, "ports", msg("acc_what_rdma_ports"),
                                details=nic_details))
    speeds = [n.speed_gbps for n in active if n.speed_gbps is not None]
    if not speeds:
        out.append(ctx.skipped("inventory.nic_speed", msg("acc_why_no_rdma_rate"), limit=crit.nic_speed_gbps_min,
                               unit="Gb/s"))
    else:
        out.append(ctx.at_least("inventory.nic_speed", min(speeds), crit.nic_speed_gbps_min, "Gb/s",
                                msg("acc_what_rdma_slowest")))
    return out


def _host_checks(ctx: Context, info: host.HostInfo) -> list[CheckResult]:
    crit = ctx.criteria
    ram = round(info.ram_bytes / GIB, 1) if info.ram_bytes else None
    return [
        ctx.at_least("inventory.cpu_cores", info.cpu_count, crit.cpu_cores_min, "CPUs", msg("acc_what_cpus")),
        ctx.at_least("inventory.ram", ram, crit.ram_gib_min, "GiB", msg("acc_what_ram")),
        ctx.at_least("inventory.disks", len(info.disks), crit.disks_min, "disks", msg("acc_what_disks"),
                     details={"disks": info.disks}),
    ]


def run(ctx: Context, info: host.HostInfo | None = None) -> list[CheckResult]:
    info = info or host.probe(ctx.options.sysfs_root)
    out = _no_telemetry(ctx) if ctx.telemetry is None else _gpu_checks(ctx)
    amd = ctx.telemetry is not None and ctx.telemetry.vendor == "amd"
    # a ROCm build of torch answers torch.cuda.nccl.version() with RCCL's version
    out.append(_version(ctx, "inventory.rccl_version" if amd else "inventory.nccl_version", host.nccl_version(),
                        ctx.criteria.nccl_version_min, msg("acc_why_rccl_unknown" if amd else "acc_why_nccl_unknown")))
    return out + _nic_checks(ctx, info) + _host_checks(ctx, info)
