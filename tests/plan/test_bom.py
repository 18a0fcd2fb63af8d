import pytest

from trainsizer.plan.buildout.bom import Price, convert


def test_totals_add_up(blocks):
    bom = blocks().bom
    for k in ("low", "typical", "high"):
        assert bom.totals[k] == pytest.approx(sum(ln.total[k] for ln in bom.lines if ln.total))
    for ln in bom.lines:
        if ln.total:
            assert ln.total["typical"] == pytest.approx(ln.quantity * ln.unit_price.typical)
    assert bom.totals["low"] <= bom.totals["typical"] <= bom.totals["high"]


def test_unpriced_lines_are_named_not_counted(blocks):
    bom = blocks().bom
    unpriced = [ln for ln in bom.lines if ln.unit_price is None and not ln.note.startswith("included")]
    assert unpriced and {ln.part or ln.item for ln in unpriced} == set(bom.unpriced)
    assert len(bom.unpriced) == len(set(bom.unpriced))  # a part on several lines is named once


def test_a_part_on_several_fabrics_lines_is_named_once(blocks):
    """The 2-node plan's compute and converged fabrics both use the 800G splitter: one part to quote."""
    bom = blocks().bom
    lines = [ln for ln in bom.lines if ln.part == "dac-osfp-800g-2x400g-3m"]
    assert len(lines) == 2 and bom.unpriced.count("dac-osfp-800g-2x400g-3m") == 1


def test_servers_switches_and_optics_are_on_the_bill(blocks):
    b = blocks(hardware={"count": 512}, global_batch={"sequences": 512})
    compute: dict = {}
    for ln in b.bom.lines:
        if ln.item.startswith(("compute", "GPU server")):
            compute[ln.part] = compute.get(ln.part, 0) + ln.quantity
    net = b.network.compute
    assert compute["dgx-h100"] == 64
    assert compute["quantum-2-qm9700"] == net.leaves + net.spines + net.cores == 16 + 8
    assert compute["xcvr-osfp-400g-sr4"] == net.links["node_leaf"]
    assert compute["xcvr-osfp-800g-2xsr4"] == net.links["node_leaf"] // 2 + net.links["leaf_spine"]


def test_cny_uses_cny_ranges_or_labels_the_conversion(blocks, catalog):
    bom = blocks(goal={"budget": {"amount": 1e8, "currency": "CNY"}}).bom
    assert bom.currency == "CNY"
    for ln in bom.lines:
        if ln.unit_price is None:
            continue
        assert ln.unit_price.currency == "CNY"
        native = ln.part and ln.part in catalog.switches and catalog.price("purchase", ln.part, "CNY")
        if ln.unit_price.converted:
            assert "7.18" in ln.unit_price.converted and "2024-01" in ln.unit_price.converted
            assert not native


def test_conversion_is_labelled():
    p = Price(low=1, typical=2, high=3, currency="USD", source="s", date="2026")
    c = convert(p, "CNY")
    assert c.typical == pytest.approx(2 * 7.18) and "CNY/USD" in c.converted
    assert convert(p, "USD") is p


def test_break_even(blocks):
    bvr = blocks().bom.buy_vs_rent
    assert bvr.rent_per_month > bvr.running_per_month
    assert bvr.break_even_month == pytest.approx(bvr.capex["typical"] / (bvr.rent_per_month - bvr.running_per_month))


def test_no_break_even_without_a_purchase_price_for_the_gpus_or_servers(blocks):
    # MI325X: no public server price and no per-GPU purchase price in the catalog; the switches alone
    # would "pay back" in under a month
    bom = blocks(hardware={"accelerator": "mi325x"}).bom
    bvr = bom.buy_vs_rent
    assert {"oam-8x-mi325x", "mi325x"} <= set(bom.unpriced)
    assert bvr.rent_per_month and bvr.break_even_month is None
    assert "oam-8x-mi325x" in bvr.verdict and "months" not in bvr.verdict


def test_network_lines_name_each_fabric_in_words_a_buyer_reads(blocks):
    """The management fabrics are written out ('out-of-band management network', '带外管理网'), never the
    engineers' 'oob'; part numbers stay as the catalog has them."""
    import re

    from trainsizer.messages import tr
    from trainsizer.plan.texts import as_msg

    bom = blocks().bom
    oob = [ln for ln in bom.lines if ln.part in ("sn2201", "cable-rj45-cat6")]
    assert oob, [ln.item for ln in bom.lines]
    for ln in oob:
        assert str(ln.item).startswith("out-of-band management network")
        assert str(tr(as_msg(ln.item_msg), "zh")).startswith("带外管理网")
    for ln in bom.lines:
        assert not re.search(r"\boob\b", str(ln.item), re.I), ln.item
        assert not ln.item_msg or not re.search(r"\boob\b", str(tr(as_msg(ln.item_msg), "zh")), re.I), ln.item


def test_server_sizes_are_grouped_and_an_unknown_one_is_said_not_questioned(blocks):
    """'RAM 17280 GiB per server' and 'NVMe ? TB per server' (the GB200 NVL72 rack publishes no NVMe size). An
    NVL72 rack is bought whole: its CPUs, memory and drives are counted per rack (as the rack line is), the memory
    also per compute tray (a node of the plan)."""
    bom = blocks(hardware={"accelerator": "gb200", "count": 64, "per_node": 4}, constraints={"cooling": "liquid"},
                 goal={"procurement": "buy"}).bom
    items = [str(ln.item) for ln in bom.lines]
    assert "RAM 17,280 GiB per rack (960 GiB in each of its 18 compute trays)" in items
    assert "NVMe per rack (size not in the catalog)" in items
    assert not any("?" in item or "per server" in item for item in items)
    # the rack record is ordered as a rack system, not a "GPU server"
    assert "GPU system NVIDIA GB200 NVL72 rack (DGX GB200)" in items and not any("GPU server" in i for i in items)
    included = [ln for ln in bom.lines if ln.part is None and "gb200-nvl72" in str(ln.note)]
    assert included and {ln.unit for ln in included} <= {"per_rack", "per_nic"}


def test_sentences_of_plans_written_before_still_read():
    """A plan stores its sentences as {key, params}: a new wording with new parameters took new keys
    (bom_verdict_break_even_job, node_note_rack_tray_sourced), so a plan.json saved before renders in
    either language (its old keys kept their parameters)."""
    from trainsizer.plan.texts import say

    old = [{"key": "bom_verdict_break_even", "params": {"months": "17.2", "job_months": "0.0"}},
           {"key": "node_note_rack_tray", "params": {"used": 4, "gpus": 72, "server": "gb200-nvl72"}}]
    for stored in old:
        for lang in ("en", "zh"):
            assert say(stored, lang)


def test_rented_line_bills_what_the_price_bills_and_matches_the_estimate(blocks, build):
    """A short job on the CNY H100 rental (8-GPU nodes on monthly contracts): the rent line's quantity is the 730 h
    billed, its note says why (en / zh), and the job's rent is the estimate's (evaluate) rent."""
    from trainsizer.plan.texts import say

    changes = dict(goal={"procurement": "rent"}, hardware={"count": 8, "network": None},
                   constraints={"currency": "CNY"}, data={"tokens": 2.0e8})
    out, b = blocks(**changes), build(**changes)
    gpus = out.bom.lines[0]
    assert gpus.quantity == pytest.approx(8 * 730) and b.train_days * 24 < 730
    assert "730" in gpus.note and "730" in say(gpus.note_msg.model_dump(), "zh")
    assert gpus.total["typical"] == pytest.approx(b.evaluation["cost"]["rent"]["mid"])
    assert out.bom.buy_vs_rent.rent_for_job == pytest.approx(gpus.total["typical"])


def test_rented_nvl72_line_names_trays_and_racks(blocks):
    out = blocks(goal={"procurement": "rent"}, constraints={"cooling": "liquid"}, global_batch={"sequences": 128},
                 hardware={"accelerator": "gb200", "count": 128, "per_node": 4})
    item = out.bom.lines[0].item
    assert "32 compute trays of 4 GPUs in 2 gb200-nvl72 racks" in item


def test_buy_vs_rent_weighs_a_purchase_against_a_reserved_term_and_the_job_pays_on_demand(blocks, catalog):
    """A month of full use is rented on a committed term where the catalog lists one (H100: the 1-year reserved
    rate), and the on-demand month is shown beside it; the job itself, hours long, pays on demand. Was: one
    month at the on-demand typical from a range whose low was the reserved rate."""
    out = blocks(goal={"procurement": "rent"})
    bvr, rent = out.bom.buy_vs_rent, out.bom.rent
    reserved = catalog.rent_reserved_per_gpu_hour("h100-sxm-80gb")
    on_demand = catalog.rent_usd_per_gpu_hour("h100-sxm-80gb")
    assert bvr.rent_per_month == pytest.approx(16 * 730 * reserved.typical)
    assert bvr.rent_per_month_on_demand == pytest.approx(16 * 730 * on_demand.typical)
    capex, running = bvr.capex["typical"], bvr.running_per_month
    assert bvr.break_even_month == pytest.approx(capex / (bvr.rent_per_month - running))
    assert "reserved" in bvr.rent_basis and bvr.rent_basis_msg.key == "bom_rent_basis_reserved"
    assert rent["per_gpu_hour"]["typical"] == on_demand.typical  # the job's own rent
    assert out.bom.lines[0].unit_price.typical == on_demand.typical


def test_buy_vs_rent_without_a_reserved_rate_says_it_is_on_demand(blocks):
    bvr = blocks(hardware={"accelerator": "b200"}, goal={"procurement": "rent"}).bom.buy_vs_rent
    assert bvr.rent_per_month_on_demand is None and bvr.rent_basis_msg.key == "bom_rent_basis_on_demand"


def test_a_break_even_over_priced_lines_only_says_it_is_a_lower_bound(blocks):
    """One RTX 4090 bought: the host has no catalog price, so the break-even month counts the GPU alone; the
    verdict says the month is over the priced lines only and names what is missing (was: a bare '7.8 months')."""
    bvr = blocks(model="llama-3.1-8b", method="qlora", goal={"procurement": "buy"},
                 hardware={"accelerator": "rtx-4090", "count": 1, "per_node": 1, "network": None},
                 strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                 global_batch={"sequences": 8}).bom.buy_vs_rent
    assert bvr.break_even_month is not None
    assert bvr.verdict_msg.key == "bom_verdict_priced_only" and "host for the one GPU" in bvr.verdict
    assert "later than this" in bvr.verdict


def test_a_supernode_part_is_bought_as_its_servers_not_as_nvl72_racks(blocks, catalog):
    """Ascend 910C's scale-up domain spans 768 dies over Huawei's own fabric, but its catalog server holds 16: the
    plan buys four servers for 64 dies, and no NVLink switch tray. Read as an NVL72 rack (domain >= 72) it bought
    one server for 64 dies and nine NVLink switch trays."""
    acc = catalog.accelerator("ascend-910c")
    assert int(acc.scaleup_domain) >= 72 and not acc.rack_nvlink
    assert catalog.accelerator("gb200").rack_nvlink
    b = blocks(hardware={"accelerator": "ascend-910c", "count": 64, "per_node": 16, "network": "roce-200"},
               strategy={"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "selective"})
    servers = [ln for ln in b.bom.lines if ln.part in {s.id for s in catalog.servers_for("ascend-910c")}]
    assert [ln.quantity for ln in servers] == [4]
    assert not [ln for ln in b.bom.lines if ln.part == "nvlink-switch-tray-nvl72"]


def test_a_node_contract_is_rented_whole_on_each_node_the_job_uses(build, blocks):
    """43 (w): 16 H100 at 4 a node on the CNY price (8-GPU nodes on monthly contracts) rent 4 nodes, 32 GPUs, for the
    month: the ranking and the BOM bill 32 x 730 GPU-hours, and say the unit never spans hosts."""
    from trainsizer.messages import tr

    changes = dict(goal={"procurement": "rent"}, hardware={"count": 16, "per_node": 4},
                   constraints={"currency": "CNY"}, data={"tokens": 2.0e8})
    b, out = build(**changes), blocks(**changes)
    assert b.evaluation["cost"]["rent"]["quantity"] == pytest.approx(32 * 730)
    assert out.bom.lines[0].quantity == pytest.approx(32 * 730)
    assert any("never spans hosts" in tr(n, "en") for n in b.evaluation["notes"])
