import pytest

from trainsizer.plan.buildout.storage import checkpoint_bytes, storage_block


def test_checkpoint_is_14_bytes_per_param(build, catalog):
    b = build()
    assert checkpoint_bytes(b) == pytest.approx(14 * b.scenario.model.params_total)


def test_lora_checkpoint_is_adapters_only(build):
    full = checkpoint_bytes(build())
    lora = checkpoint_bytes(build(method="lora", strategy={"fsdp": "none"}))
    assert lora < full / 100


def test_stall_share_at_daly_interval_meets_target(build):
    # big enough that failures, not the 2 h cap, set the interval
    st = storage_block(build(hardware={"count": 4096}, global_batch={"sequences": 4096}))
    assert st.checkpoint_interval_min.value < 120
    stall = st.write_budget_s.value / (st.checkpoint_interval_min.value * 60)
    # Daly's tau = sqrt(2 d M) - d, so d/tau is a little above s = d/sqrt(2 d M)
    assert stall == pytest.approx(st.stall_share_target.value, rel=0.1)
    assert st.write_gb_s_sync.value == pytest.approx(st.checkpoint_gb / st.write_budget_s.value)
    assert st.write_gb_s_async_drain.value < st.write_gb_s_sync.value


def test_rare_failures_cap_the_interval(build):
    st = storage_block(build())
    assert st.checkpoint_interval_min.value == 120
    assert st.write_budget_s.value == pytest.approx(0.05 * 7200)


def test_capacity_counts_retained_checkpoints_and_data(build):
    st = storage_block(build())
    need = (3 * st.checkpoint_gb + st.dataset_tokenised_gb + st.dataset_raw_gb) / 1000
    assert st.capacity_tb.value >= need


def test_tiers(build):
    assert storage_block(build(hardware={"count": 8, "network": None})).kind == "node_local"
    multi = storage_block(build())
    assert multi.kind == "parallel_fs" and multi.appliances >= 1
    assert multi.read_gb_s_tier >= multi.loader_read_gb_s.value


def test_the_catalogs_reliability_figures_size_the_checkpoints(tmp_path):
    """Checkpoint size and job MTBF come from the catalog the plan was built on (an overlay changes them)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.buildout.inputs import build_input
    from trainsizer.scenario import resolve_job

    from .conftest import make_job

    overlay = tmp_path / "fleet.yaml"
    overlay.write_text("date: 2026-11-30\nreliability_figures:\n"
                       "  per-gpu-mtbf-hours: {low: 20000, typical: 25350}\n"
                       "  checkpoint-bytes-per-param: {typical: 16}\n", encoding="utf-8")
    job = make_job(hardware={"count": 4096}, global_batch={"sequences": 4096})
    builtin, ours = load_catalog(), load_catalog([overlay])
    base = build_input(resolve_job(job, builtin), builtin)
    mine = build_input(resolve_job(job, ours), ours)
    assert checkpoint_bytes(mine) == pytest.approx(checkpoint_bytes(base) * 16 / 14)
    assert storage_block(mine).job_mtbf_h == pytest.approx(storage_block(base).job_mtbf_h * 25350 / 50700)


def test_async_save_copies_over_the_gpus_host_link(build, catalog):
    """The blocking part of an async save is the GPU -> host copy: over NVLink-C2C on a Grace superchip
    (GB200: c2c_gb_s_per_dir), over PCIe on an HGX part (B200, same Blackwell GPU)."""
    for acc_id, per_node in (("gb200", 4), ("b200", 8)):
        acc = catalog.accelerator(acc_id)
        st = storage_block(build(hardware={"accelerator": acc_id, "count": 16, "per_node": per_node}))
        link = acc.c2c_gb_s_per_dir or acc.pcie_gb_s
        assert st.async_block_s == pytest.approx(st.checkpoint_gb * 1e9 / (link * 1e9 * 16))
    gb200, b200 = catalog.accelerator("gb200"), catalog.accelerator("b200")
    assert gb200.host_link_gb_s_per_dir == gb200.c2c_gb_s_per_dir > gb200.pcie_gb_s
    assert b200.c2c_gb_s_per_dir is None and b200.host_link_gb_s_per_dir == b200.pcie_gb_s


def test_parallel_fs_count_covers_capacity_at_its_erasure_code(build, catalog):
    """A multi-node plan's PFS holds the usable capacity at 8+2 (raw = usable / 0.8): a 2 PB-class dataset needs
    more appliances than its bandwidth does; the note says which bound set the count."""
    from trainsizer.plan.buildout.storage import storage_block

    small = storage_block(build())
    assert small.protection.value == "8+2"
    assert small.capacity_raw_tb.value == pytest.approx(small.capacity_tb.value / 0.8, abs=0.02)
    big = storage_block(build(data={"tokens": 4e14}))
    app = catalog.part(big.appliance)
    assert big.appliances >= -(-big.capacity_raw_tb.value // app.capacity_tb) > 1
    assert big.appliances * app.capacity_tb * 0.8 >= big.capacity_tb.value


def test_read_floor_never_asks_a_node_for_more_than_the_tiers_single_node_read(build, catalog):
    """RA-11333 Table 6 'Good': 4 GB/s one node, 15 GB/s a 32-node SU. Two nodes floor at 2 x 4 = 8 GB/s (each
    node's acceptance read 4 GB/s, the tier's single-node figure), not the SU's 15 (7.5 GB/s a node, above it);
    one node 4; 18 nodes the SU's 15; 33 nodes two SUs' 30."""
    from trainsizer.plan.buildout.storage import _read_need

    tier = catalog.storage_tier("pfs-superpod-good")
    assert (tier.read_gb_s_per_node.low, tier.read_gb_s_per_su.low) == (4, 15)
    for gpus, floor in ((8, 4), (16, 8), (144, 15), (264, 30)):
        b = build(hardware={"count": gpus}, global_batch={"sequences": gpus}, data={"tokens": 1e8})
        need = _read_need(b)
        assert need.value == pytest.approx(floor), gpus
        assert need.value / b.nodes <= 4 or b.nodes == 1
