import json
from pathlib import Path

import pytest

from trainsizer.accept import criteria
from trainsizer.accept.criteria import AcceptanceCriteria


def test_criteria_are_in_the_accept_schema(blocks):
    acc = blocks().acceptance
    again = AcceptanceCriteria.model_validate(json.loads(acc.model_dump_json()))
    assert again == acc
    assert acc.platform == "h100-sxm-80gb"
    assert acc.gpu_count.value == 8 and acc.gpu_count.source.startswith("plan:")
    assert acc.nic_count_min.value == 8 and acc.nic_speed_gbps_min.value == 400
    assert acc.busbw_inter_gb_s_min.all_reduce.value == pytest.approx(0.8 * 8 * 400 / 8)
    assert acc.rdma_gbps_min.value == pytest.approx(380)
    assert acc.busbw_intra_gb_s_min.all_reduce is not None  # from the platform table (NVLS)
    assert acc.gemm_tflops_min["bf16"].value > 0


def test_thresholds_follow_the_plan(blocks):
    out = blocks()
    acc, st, node = out.acceptance, out.storage, out.node
    assert acc.cpu_cores_min.value == node.cpu_cores.value and acc.ram_gib_min.value == node.ram_gib.value
    assert acc.checkpoint_size_gb == pytest.approx(st.checkpoint_gb / 2, rel=1e-3)
    assert acc.checkpoint_save_s_max.value == pytest.approx(st.write_budget_s.value, rel=1e-3)
    assert acc.storage_write_gb_s_min.value == pytest.approx(st.write_gb_s_sync.value / 2, rel=1e-3)
    assert acc.driver_version_min.value == "580.65.06"


def test_no_platform_row_gets_a_ring_rule(blocks):
    """H800 (no row; NVSwitch with NVLS): gathers at the ring floor, the all-reduce at the NVLS floor."""
    acc = blocks(hardware={"accelerator": "h800-sxm-80gb"}).acceptance
    assert acc.platform is None
    ag = acc.busbw_intra_gb_s_min.all_gather
    assert ag.value == pytest.approx(0.75 * 200) and "ring" in ag.source
    assert acc.busbw_intra_gb_s_min.all_reduce.value == pytest.approx(0.9 * 200)


def test_xgmi_mesh_ring_rule_passes_a_healthy_mi300x_node(blocks):
    # Azure's health check passes 8x MI300X at 314 GB/s RCCL all-reduce (448 per direction over 7 xGMI links);
    # the switch ratio (0.75 x 448 = 336) would fail every healthy node
    acc = blocks(hardware={"accelerator": "mi325x"}).acceptance
    ar = acc.busbw_intra_gb_s_min.all_reduce
    assert ar.value == pytest.approx(0.70 * 448) and ar.value <= 314 and "xGMI" in ar.source


def test_xid_list_is_for_nvidia_parts_only(blocks):
    """An Xid is the NVIDIA driver's error report (NVRM: Xid in the kernel log): an AMD plan's thresholds carry no
    Xid list (it read 'Critical Xid errors 48, 56, ...' for MI325X nodes), an NVIDIA plan's keep it."""
    amd = blocks(hardware={"accelerator": "mi325x"}).acceptance
    assert amd.critical_xids is None and amd.critical_xids_source is None
    nvidia = blocks().acceptance
    assert nvidia.critical_xids and 79 in nvidia.critical_xids and "azurehpc" in nvidia.critical_xids_source


def test_amd_plans_name_the_amdgpu_kernel_log_events_that_fail_a_node(blocks):
    """In the place of Xid, an AMD plan lists the amdgpu RAS / reset lines `trainsizer accept` fails a node on;
    an NVIDIA plan carries no such list."""
    amd = blocks(hardware={"accelerator": "mi325x"}).acceptance
    assert amd.critical_amdgpu_events == ["uncorrectable", "deferred", "reset", "reset_failed"]
    assert "node-scraper" in amd.critical_amdgpu_events_source
    nvidia = blocks().acceptance
    assert nvidia.critical_amdgpu_events is None and nvidia.critical_amdgpu_events_source is None


def test_plan_file_loads_in_accept(blocks, tmp_path):
    out = blocks()
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"job": {}, **out.model_dump(mode="json")}))
    loaded = criteria.load(path)
    assert loaded.nic_count_min.value == 8
    resolved = criteria.resolve(path, None, None)
    assert resolved.cpu_cores_min.source.startswith("plan:")


@pytest.mark.torch
@pytest.mark.slow
def test_accept_judges_against_the_plan_end_to_end(tmp_path, run_cli):
    """trainsizer build writes plan.json; trainsizer accept --plan runs storage, checkpoint and gloo collectives
    and judges them against the plan's thresholds."""
    pytest.importorskip("torch")
    repo = Path(__file__).resolve().parents[2]
    code, _, err = run_cli("build", str(repo / "examples" / "lora-8b-one-gpu.yaml"), "--out-dir", str(tmp_path / "p"),
                           "--json")
    assert code == 0, err
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    code, out, err = run_cli("accept", "--plan", str(tmp_path / "p" / "plan.json"), "--only",
                             "storage,checkpoint,collectives", "--backend", "gloo", "--nproc", "2",
                             "--storage-path", str(tmp_path), "--telemetry", "none", "--no-history", "--json",
                             "--out", str(tmp_path / "r.json"))
    assert code in (0, 1), err
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    for name, field in (("storage.write", "storage_write_gb_s_min"), ("checkpoint.save", "checkpoint_save_s_max"),
                        ("checkpoint.restore", "checkpoint_restore_s_max")):
        assert checks[name]["threshold"] == plan["acceptance"][field]["value"]
        assert checks[name]["source"].startswith("plan:")
        assert checks[name]["status"] in ("pass", "fail")
    assert checks["checkpoint.integrity"]["status"] == "pass"
    assert checks["collectives.correctness.intra"]["status"] == "pass"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_accept_report_shows_a_plan_thresholds_source_in_the_readers_language(blocks, tmp_path, lang):
    """A plan's thresholds carry the message their source was written from; `trainsizer accept` shows that
    source, whole, in the reader's language."""
    import io

    from rich.console import Console

    from trainsizer.accept import report
    from trainsizer.accept.context import Context
    from trainsizer.accept.results import RunResult
    from trainsizer.plan.texts import say

    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"job": {}, **blocks().model_dump(mode="json")}))
    crit = criteria.load(path)
    check = Context(crit, None, "no telemetry").at_least("host.cpu_cores", 1, crit.cpu_cores_min, "cores",
                                                         "CPU cores")
    assert check.source == crit.cpu_cores_min.source and check.source_msg == crit.cpu_cores_min.source_msg
    expected = say(crit.cpu_cores_min.source_msg, lang)
    assert report.source_text(check, lang) == expected
    assert (expected == check.source) == (lang == "en") and len(expected) > 20
    out = io.StringIO()
    report.print_table(RunResult(run_id="r", started_at="2026-12-01T00:00:00", checks=[check]),
                       Console(file=out, width=1000), lang=lang)
    assert expected in out.getvalue()


def test_gb200_reads_its_own_memory_not_b200s(blocks):
    """GB200 reads B200's platform row (same NVLink 5 switch) but its own HBM: the catalog's nvidia-smi total of a
    GB200 (189,471 MiB -> 185.0 GiB, rounded down), not the B200's (183,359 MiB -> 179.0)."""
    acc = blocks(hardware={"accelerator": "gb200", "count": 128, "per_node": 4, "network": "ib-ndr400"},
                 constraints={"cooling": "liquid"}, global_batch={"sequences": 128}).acceptance
    assert acc.platform == "b200-sxm-180gb"
    assert acc.gpu_memory_gib_min.value == pytest.approx(185.0)
    assert acc.gpu_memory_gib_min.source.startswith("plan:") and "189,471" in acc.gpu_memory_gib_min.source


def test_a_part_without_the_rows_switch_reads_no_row(catalog):
    """H200 NVL (NVLink bridges, no NVSwitch, no NVLS) must not inherit H200 SXM's NVLS threshold."""
    from trainsizer.plan.buildout.acceptance import platform_for

    assert platform_for(catalog.accelerator("h200-nvl-141gb")) is None
    assert platform_for(catalog.accelerator("h200-sxm-141gb")) == "h200-sxm-141gb"


def test_nvswitch_part_without_a_row_gets_the_nvls_rule(blocks):
    """B300 (no platform row, NVLS on its NVSwitch): the 8-GPU all-reduce floor is 0.9 x 900 GB/s (NVLS), the
    gathers keep the ring floor 0.75 x 900."""
    acc = blocks(hardware={"accelerator": "b300", "network": "ib-xdr800"}).acceptance
    assert acc.platform is None
    intra = acc.busbw_intra_gb_s_min
    assert intra.all_reduce.value == pytest.approx(0.9 * 900) and "NVLS" in intra.all_reduce.source
    assert intra.all_gather.value == pytest.approx(0.75 * 900)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_nvl72_floors_say_their_path_and_use_its_rate(blocks, lang):
    """One NVL72 rack: its trays meet over NVLink (multi-node NVLink), so the across-node floor is the NVLink one
    (0.75 x 900 GB/s), not 0.8 x the tray's 4 NICs (160 GB/s) that no test across those trays ever loads. Two
    racks: the across-node floor is the NICs' and says to test it across racks. Every floor names its path."""
    from trainsizer.plan.texts import say

    def acc(count: int):
        return blocks(hardware={"accelerator": "gb200", "count": count, "per_node": 4, "network": "ib-ndr400"},
                      constraints={"cooling": "liquid"}, global_batch={"sequences": count}).acceptance

    one, two = acc(72), acc(144)
    intra = one.busbw_intra_gb_s_min.all_gather.value
    assert one.busbw_inter_gb_s_min.all_gather.value == intra == pytest.approx(0.75 * 900)
    assert two.busbw_inter_gb_s_min.all_reduce.value == pytest.approx(0.8 * 4 * 400 / 8)
    assert one.rdma_gbps_min.value == two.rdma_gbps_min.value == pytest.approx(380)  # the NICs still checked
    keys = {("one", "inter"): "acc_path_domain", ("two", "inter"): "acc_path_racks", ("one", "intra"): "acc_path_tray"}
    for (which, scope), key in keys.items():
        limits = getattr({"one": one, "two": two}[which], f"busbw_{scope}_gb_s_min")
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            stored = getattr(limits, op).source_msg
            assert stored["key"] == "acc_on_path" and stored["params"]["path"]["key"] == key
            assert "NVLink" in say(stored, lang)
    hgx = blocks().acceptance
    assert hgx.busbw_inter_gb_s_min.all_reduce.source_msg["params"]["path"]["key"] == "acc_path_nics"
    assert hgx.busbw_intra_gb_s_min.all_reduce.source_msg["params"]["path"]["key"] == "acc_path_node"


def test_every_scale_up_technology_reads_as_words(catalog):
    """The in-node floors name their link ('xGMI (Infinity Fabric)', not the catalog code 'xgmi'), for every
    technology an accelerator record may state, in both languages."""
    from typing import get_args

    from trainsizer.catalog.records import Accelerator
    from trainsizer.plan.buildout.acceptance import scaleup_name

    techs = get_args(Accelerator.model_fields["scaleup_tech"].annotation)
    assert "xgmi" in techs
    for tech in techs:
        name = scaleup_name(type("A", (), {"scaleup_tech": tech})())
        assert name.tr("en") != tech and name.tr("zh")


def test_a_one_gpu_plan_counts_in_the_singular(blocks):
    """A one-GPU, one-node plan's sources read 'plan: 1 GPUs per node', 'over 1 nodes'."""
    acc = blocks(hardware={"count": 1, "per_node": 1, "network": None}, global_batch={"sequences": 8},
                 method="lora", strategy={"fsdp": "none"}).acceptance
    said = " ".join(str(x.source) for x in (acc.gpu_count, acc.storage_read_gb_s_min, acc.storage_write_gb_s_min,
                                            acc.checkpoint_restore_s_max))
    assert "plan: 1 GPU per node" in said and "on the one node" in said, said
    assert "1 GPUs" not in said and "1 nodes" not in said, said


def test_memory_floor_is_the_catalogs_driver_reading(blocks):
    """An H100 80GB shows 81,559 MiB in nvidia-smi (catalog memory_driver; the plan's fit rests on it): the floor is
    that total, 79.6 GiB, not 0.99 x the 80 GB label (79.2, which a card short of what the plan assumed passes)."""
    acc = blocks().acceptance
    assert acc.gpu_memory_gib_min.value == pytest.approx(79.6)
    assert "81,559 MiB" in acc.gpu_memory_gib_min.source and "thamada_nvsmi_gls" in acc.gpu_memory_gib_min.source
    # a part without a reading keeps the label rule (GB200: 0.99 x the 186 GB of its platform table, above)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bridge_smaller_than_the_node_gets_floors_for_each_path(blocks, lang):
    """8 RTX A6000 whose NVLink bridges join pairs (catalog scaleup_domain 2): a ring over all 8 crosses PCIe, so the
    node's floor is the ring ratio x the PCIe link the estimate times it at (it was 0.75 x the 56.25 GB/s bridge,
    which a healthy machine fails); each bridged pair gets the bridge floor, on the path its test runs."""
    from trainsizer.plan.texts import say

    out = blocks(hardware={"accelerator": "rtx-a6000", "count": 8, "network": None})
    acc, pcie = out.acceptance, 31.5
    intra, domain = acc.busbw_intra_gb_s_min, acc.busbw_domain_gb_s_min
    assert intra.all_reduce.value == intra.all_gather.value == pytest.approx(0.75 * pcie, abs=0.05)
    assert acc.scaleup_domain_gpus == 2
    assert domain.all_reduce.value == domain.reduce_scatter.value == pytest.approx(0.75 * 56.25, abs=0.05)
    assert intra.all_reduce.source_msg["params"]["path"]["key"] == "acc_path_node_host"
    assert domain.all_reduce.source_msg["params"]["path"]["key"] == "acc_path_bridge"
    assert "PCIe" in say(intra.all_reduce.source_msg, lang) and "NVLink" in say(domain.all_gather.source_msg, lang)
    again = AcceptanceCriteria.model_validate(json.loads(acc.model_dump_json()))
    assert again.busbw_domain_gb_s_min == domain and again.scaleup_domain_gpus == 2
    pair = blocks(hardware={"accelerator": "rtx-a6000", "count": 2, "per_node": 2, "network": None},
                  strategy={"fsdp": "full"}).acceptance  # the bridge spans the node: one floor, the bridge's
    assert pair.scaleup_domain_gpus is None and pair.busbw_domain_gb_s_min.all_reduce is None
    assert pair.busbw_intra_gb_s_min.all_reduce.value == pytest.approx(0.75 * 56.25, abs=0.05)


def test_a_4_way_bridge_floor_is_the_meshs_and_the_hosts_pcie_ring_is_not(blocks):
    """8 H200 NVL in 4-way bridges (catalog scaleup_mesh_links 3, a full mesh): each bridge's floor takes the mesh ring
    ratio of its 450 GB/s, the ring over all 8 the switch ring ratio of the host's PCIe it crosses (known-gaps 146)."""
    acc = blocks(hardware={"accelerator": "h200-nvl-141gb", "count": 8, "network": None}).acceptance
    assert acc.scaleup_domain_gpus == 4
    assert acc.busbw_domain_gb_s_min.all_reduce.value == pytest.approx(0.70 * 450, abs=0.05)
    assert acc.busbw_intra_gb_s_min.all_gather.value == pytest.approx(0.75 * 63.0, abs=0.05)


def test_a_geforce_nodes_ring_floor_is_the_host_staged_rate(blocks):
    """GeForce drivers refuse PCIe peer-to-peer (catalog host_staged_gb_s_per_dir): the node's ring is timed at the
    host-staged rate, and its floor follows it rather than the PCIe link a healthy box never reaches."""
    acc = blocks(hardware={"accelerator": "rtx-4090", "count": 8, "network": None}).acceptance
    assert acc.busbw_intra_gb_s_min.all_reduce.value == pytest.approx(0.75 * 10.0)
    assert "peer-to-peer" in acc.busbw_intra_gb_s_min.all_reduce.source


def test_amd_plans_set_rocm_rccl_and_xgmi_floors(blocks):
    """An AMD plan's software floors are the ROCm release and RCCL's version of its software block (no amdgpu
    version: the block names the ROCm release that ships it), and every GPU's 7 xGMI links; MI300X reads its platform
    row (RVS's GEMM targets)."""
    for part in ("mi325x", "mi300x"):
        acc = blocks(hardware={"accelerator": part}).acceptance
        assert acc.rocm_version_min.value == "7.0.2" and "ROCm 7.0.2" in acc.rocm_version_min.source
        assert acc.nccl_version_min.value == "2.26.6"
        assert acc.driver_version_min is None and acc.cuda_version_min is None
        assert acc.xgmi_links_per_gpu.value == 7 and acc.nvlinks_per_gpu is None
    mi300x = blocks(hardware={"accelerator": "mi300x"}).acceptance
    assert mi300x.platform == "mi300x" and mi300x.gemm_tflops_min["bf16"].value == 552
    assert mi300x.busbw_intra_gb_s_min.all_reduce.value == 314 and mi300x.critical_xids is None
    assert mi300x.hbm_gb_s_min.value == 4500  # AMD CVS's floor for the copy accept/hbm.py times
    # MI325X and MI355X read their own rows (RVS's targets for each part), not MI300X's
    for part, bf16 in (("mi325x", 554), ("mi355x", 956)):
        acc = blocks(hardware={"accelerator": part}).acceptance
        assert acc.platform == part and acc.gemm_tflops_min["bf16"].value == bf16
