"""evaluate() directly: it joins memory, time, cost, energy and the goal of one configuration."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.energy import default_pue, load_energy_constants
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 2.0e9}, "seq_len": 4096,
       "global_batch": {"sequences": 64}, "goal": {"deadline_days": 30, "procurement": "rent"},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8},
       "strategy": {"tp": 1, "pp": 1, "dp": 8, "zero": 1, "micro_batch": 1, "recompute": "full"}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


class _NoPue:
    """The catalog with no PUE figure in its facility section."""

    def __init__(self, catalog):
        self._catalog = catalog
        self.facility = SimpleNamespace(pue=None, electricity_per_kwh=catalog.facility.electricity_per_kwh)

    def __getattr__(self, name):
        return getattr(self._catalog, name)


def test_memory_and_time_sections_are_the_estimators_own(catalog):
    sc = resolve_job(JOB, catalog)
    out = evaluate(sc, catalog)
    args = (sc.model, sc.training, sc.system, sc.strategy)
    # the estimator's own section, and where its capacity comes from (test below)
    assert {k: v for k, v in out["memory"].items() if k != "capacity_basis"} == estimate_memory(*args).to_dict()
    expected_time = estimate_time(*args).to_dict()
    expected_time.pop("notes")
    assert out["time"] == expected_time
    assert {"job", "memory", "time", "cost", "energy", "goal", "calibration", "notes"} <= set(out)


def test_a_configuration_that_does_not_fit_says_so_once_in_the_memory_section(catalog):
    job = {**JOB, "model": "llama-3.1-70b", "strategy": {**JOB["strategy"], "zero": 0}}
    out = evaluate(resolve_job(job, catalog), catalog)
    assert out["memory"]["fits"] is False
    assert not any("does not fit" in n for n in out["notes"])


def test_energy_is_gpus_times_board_power_times_node_overhead_times_pue(catalog):
    out = evaluate(resolve_job(JOB, catalog), catalog)
    k = load_energy_constants()
    en, t = out["energy"], out["time"]
    busy = t["breakdown_s"]["compute"] / t["step_s"]
    board_w = 700.0 * (k["idle_fraction"] + (1 - k["idle_fraction"]) * busy)  # H100 SXM TDP 700 W
    hours = t["train_days"] * 24
    assert en["pue"] == catalog.facility.pue.mid
    assert en["busy_fraction"] == pytest.approx(busy)
    assert en["gpu_power_w"] == pytest.approx(board_w)
    assert en["kwh"] == pytest.approx(8 * board_w * (1 + k["node_overhead_fraction"]) * en["pue"] / 1000 * hours)


def test_without_a_catalog_pue_the_shipped_fallback_is_used(catalog):
    out = evaluate(resolve_job(JOB, catalog), _NoPue(catalog))
    # the fallback is the built-in catalog's figure, not a copy of it
    assert out["energy"]["pue"] == default_pue() == load_catalog().facility.pue.mid


def test_rent_cost_is_gpu_hours_times_the_catalog_price_and_the_deadline_is_checked(catalog):
    out = evaluate(resolve_job(JOB, catalog), catalog)
    price = catalog.rent_per_gpu_hour("h100-sxm-80gb", currency="USD")
    rent = out["cost"]["rent"]
    assert rent["quantity"] == out["time"]["gpu_hours"]
    assert rent["mid"] == pytest.approx(out["time"]["gpu_hours"] * price.mid)
    assert out["goal"]["meets_deadline"] == (out["time"]["train_days"] <= 30)
    assert "buy" not in out["cost"]  # procurement: rent


def test_a_job_without_a_strategy_is_refused_with_what_is_missing(catalog):
    job = {k: v for k, v in JOB.items() if k != "strategy"}
    with pytest.raises(SpecError, match="needs strategy"):
        evaluate(resolve_job(job, catalog), catalog)


def _pcie_job(count: int, per_node: int) -> dict:
    dp = count
    return JOB | {"hardware": {"accelerator": "rtx-pro-6000", "count": count, "per_node": per_node,
                               **({"network": "ib-ndr400"} if count > per_node else {})},
                  "strategy": JOB["strategy"] | {"dp": dp, "zero": 3}}


def test_single_server_rental_listings_price_one_server_but_not_a_cluster(catalog):
    price = catalog.rent_per_gpu_hour("rtx-pro-6000", currency="USD")
    assert price.max_gpus == 8  # marketplace listings of single 8-card servers
    one = evaluate(resolve_job(_pcie_job(8, 8), catalog), catalog)
    assert one["cost"]["rent"]["mid"] == pytest.approx(one["time"]["gpu_hours"] * price.mid)
    two = evaluate(resolve_job(_pcie_job(16, 8), catalog), catalog)
    assert "rent" not in two["cost"]
    assert any("offer at most 8 GPUs" in n and "16 GPUs need a quote" in n for n in two["notes"])


def test_data_center_rentals_have_no_single_server_limit(catalog):
    assert catalog.rent_per_gpu_hour("h100-sxm-80gb", currency="USD").max_gpus is None


def test_a_catalog_overlay_of_the_reliability_figures_changes_the_estimate(catalog, tmp_path):
    """The goodput model reads the catalog's reliability figures, and only them (one source): an overlay that
    halves the per-GPU MTBF, doubles the restart time and raises the checkpoint size costs days."""
    job = {**JOB, "global_batch": {"sequences": 512}, "data": {"tokens": 2.0e11},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 512, "per_node": 8, "network": "ib-ndr400"},
           "strategy": {**JOB["strategy"], "dp": 512}}
    overlay = tmp_path / "failures.yaml"
    overlay.write_text(
        "date: 2026-11-30\nreliability_figures:\n"
        "  per-gpu-mtbf-hours: {low: 20000, typical: 25350}\n"
        "  restart-overhead-minutes: {typical: 20}\n"
        "  checkpoint-bytes-per-param: {typical: 16}\n", encoding="utf-8")
    ours = load_catalog([overlay])
    base = evaluate(resolve_job(job, catalog), catalog)["time"]
    mine = evaluate(resolve_job(job, ours), ours)["time"]
    assert mine["step_s"] == base["step_s"]  # failures change the days, not the step
    assert mine["goodput"] < base["goodput"] < 1.0
    assert mine["train_days"] > base["train_days"]
    assert mine["gpu_hours"] / base["gpu_hours"] == pytest.approx(base["goodput"] / mine["goodput"], rel=1e-9)
    from trainsizer.estimate.reliability import failure_figures, reliability

    fig = failure_figures(ours.reliability)
    assert (fig.per_gpu_mtbf_h, fig.restart_s, fig.checkpoint_bytes_per_param) == (25350, 1200.0, 16)
    sc = resolve_job(job, ours)
    expected = reliability(sc.model.params_total, 512, 8, failures_per_gpu_day=24 / 25350, restart_s=1200,
                           checkpoint_bytes_per_param=16).goodput
    assert mine["goodput"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("procurement", ["buy", "either"])
def test_the_budget_is_checked_on_the_plans_basis_not_the_amortised_share(catalog, procurement):
    """A budget above the job's amortised share of a purchase but below its price: `trainsizer plan` counts the
    purchase at full price (job_cost), so `estimate` says the same, and names the basis it checked."""
    from trainsizer.evaluate import job_cost

    job = {**JOB, "goal": {"deadline_days": 30, "procurement": procurement}}
    costs = evaluate(resolve_job(job, catalog), catalog)["cost"]
    buy = costs["buy"]
    budget = (buy["mid"] + buy["capex_total"]) / 2   # between the amortised share and the purchase
    job["goal"]["budget"] = {"amount": budget, "currency": "USD"}
    out = evaluate(resolve_job(job, catalog), catalog)
    cost, basis = job_cost(out["cost"], "USD")
    assert (out["goal"]["cost_mid"], out["goal"]["cost_basis"]) == (cost, basis)
    assert out["goal"]["within_budget"] == (cost <= budget)
    if procurement == "buy":
        assert basis == "buy" and cost == buy["capex_total"] + buy["electricity"]
        assert out["goal"]["within_budget"] is False   # the amortised share (buy.mid) alone would have passed


def test_a_rental_priced_by_the_month_bills_the_month_for_a_short_job(catalog):
    """The catalog's CNY H100 rental is 8-GPU nodes on monthly contracts (prices.yaml billed_gpus 8, min_hours
    730): a job of a few hours pays 8 GPUs x 730 h, and a note says why; USD on-demand is GPU-hours x price."""
    price = catalog.rent_per_gpu_hour("h100-sxm-80gb", currency="CNY")
    assert (price.billed_gpus, price.min_hours) == (8, 730)
    job = JOB | {"data": {"tokens": 2.0e8}, "constraints": {"currency": "CNY"}}
    out = evaluate(resolve_job(job, catalog), catalog)
    assert out["time"]["train_days"] * 24 < 730
    assert out["cost"]["rent"]["quantity"] == pytest.approx(8 * 730)
    assert out["cost"]["rent"]["mid"] == pytest.approx(8 * 730 * price.mid)
    assert any("730 h" in n and "5,840 GPU-hours billed" in n for n in out["notes"])
    usd = evaluate(resolve_job(JOB | {"data": {"tokens": 2.0e8}}, catalog), catalog)
    assert usd["cost"]["rent"]["quantity"] == pytest.approx(usd["time"]["gpu_hours"])
    assert not any("billed" in n for n in usd["notes"])


def _long(tokens: float, accelerator: str = "h100-sxm-80gb") -> dict:
    return JOB | {"data": {"tokens": tokens}, "goal": {"procurement": "rent"},
                  "hardware": {"accelerator": accelerator, "count": 8, "per_node": 8}}


def test_a_job_longer_than_a_committed_term_rents_the_term_at_the_reserved_rate(catalog):
    """known-gaps 34 (a): a job of over a year reserves the catalog's 1-year term (prices.yaml term: reserved)
    and rents only what is left on demand, cheaper than the whole job on demand; the note names the term."""
    od = catalog.rent_per_gpu_hour("h100-sxm-80gb", currency="USD")
    term = catalog.rent_reserved_per_gpu_hour("h100-sxm-80gb", "USD")
    out = evaluate(resolve_job(_long(2.2e12), catalog), catalog)  # about 420 days
    hours = out["time"]["gpu_hours"]
    assert hours / 8 > term.min_hours  # the job outlasts one term
    rent = out["cost"]["rent"]
    res = rent["reserved"]
    assert res["terms"] == 1 and res["quantity"] == pytest.approx(8 * term.min_hours)
    assert rent["quantity"] == pytest.approx(hours - 8 * term.min_hours)
    assert rent["mid"] == pytest.approx(rent["quantity"] * od.mid + res["quantity"] * term.mid)
    assert rent["mid"] < hours * od.mid
    assert any("12-month reservation" in n for n in out["notes"])


def test_a_short_job_stays_on_demand_and_a_long_one_without_a_term_price_says_so(catalog):
    short = evaluate(resolve_job(_long(2.0e9), catalog), catalog)
    assert "reserved" not in short["cost"]["rent"]
    assert short["cost"]["rent"]["quantity"] == pytest.approx(short["time"]["gpu_hours"])
    assert catalog.rent_reserved_per_gpu_hour("h200-sxm-141gb", "USD") is None
    long = evaluate(resolve_job(_long(2.2e12, "h200-sxm-141gb"), catalog), catalog)
    assert long["time"]["train_days"] > 365 and "reserved" not in long["cost"]["rent"]
    assert any("no committed-term price" in n for n in long["notes"])


@pytest.mark.parametrize(("months", "terms", "left_months"), [(6, 0, 6), (11, 1, 0), (13, 1, 1), (23, 2, 0)])
def test_committed_terms_are_the_cheapest_whole_terms(months, terms, left_months):
    from trainsizer.estimate.cost import committed_terms

    h = 730.0
    got = committed_terms(8, months * h, 8 * months * h, 2.95, 2.35, 12 * h)
    assert got[0] == terms and got[1] == pytest.approx(8 * left_months * h)


@pytest.mark.parametrize(("accelerator", "gpus", "bought"), [("h20", 1, 8), ("ascend-910b", 2, 8), ("h20", 8, 8),
                                                             ("l20", 1, 1), ("rtx-4090", 2, 2)])
def test_a_module_part_is_bought_with_its_server(catalog, accelerator, gpus, bought):
    """One H20 (SXM on an HGX board) or one Ascend 910B (OAM in an Atlas 800T A2) cannot be bought for a
    workstation: a purchase for fewer modules than its server pays for the server's 8, and says so; PCIe cards
    are bought one by one."""
    job = JOB | {"goal": {"procurement": "buy"}, "constraints": {"currency": "CNY", "market": "china"},
                 "hardware": {"accelerator": accelerator, "count": gpus, "per_node": gpus},
                 "strategy": {"tp": 1, "pp": 1, "dp": gpus, "zero": 3, "micro_batch": 1, "recompute": "full"}}
    out = evaluate(resolve_job(job, catalog), catalog)
    price = catalog.purchase(accelerator, currency="CNY")
    buy = out["cost"]["buy"]
    assert buy["quantity"] == bought and buy["capex_total"] == pytest.approx(bought * price.mid)
    assert any("module sold in its server" in n for n in out["notes"]) == (bought > gpus)


def test_capacity_is_what_the_driver_gives_and_says_so(catalog):
    """The fit is judged on what CUDA hands a process on the card (catalog memory_driver), and the result says where
    the capacity comes from in en and zh (docs/known-gaps.md 42)."""
    from trainsizer.evaluate import capacity_note
    from trainsizer.messages import tr

    mem = evaluate(resolve_job(JOB, catalog), catalog)["memory"]
    basis = mem["capacity_basis"]
    assert mem["capacity_gib"] == pytest.approx(79.205, abs=1e-3) and basis["label_gib"] == 80
    assert basis["kind"] == "driver" and basis["smi_total_gib"] == pytest.approx(79.647, abs=1e-3)
    note = capacity_note(basis)
    assert "79.2 GiB" in tr(note, "en") and "nvidia-smi shows 79.6 GiB" in tr(note, "en")
    assert "CUDA 交给进程" in tr(note, "zh")
    h800 = {**JOB, "hardware": {**JOB["hardware"], "accelerator": "h800-sxm-80gb"}}  # no public reading found
    label = evaluate(resolve_job(h800, catalog), catalog)["memory"]["capacity_basis"]
    assert label["kind"] == "label" and label["capacity_gib"] == 80
    assert "no reading" in tr(capacity_note(label), "en") and "标称值" in tr(capacity_note(label), "zh")


def test_capacity_note_names_the_parts_runtime(catalog):
    """An AMD part's capacity is what HIP (ROCm) hands a process, read with rocm-smi: the sentence names that
    runtime in en and zh, never CUDA."""
    from trainsizer.evaluate import capacity_note
    from trainsizer.messages import tr

    amd = {**JOB, "hardware": {**JOB["hardware"], "accelerator": "mi300x"}}
    basis = evaluate(resolve_job(amd, catalog), catalog)["memory"]["capacity_basis"]
    assert basis["kind"] == "driver" and basis["tool"] == "rocm-smi"
    en, zh = tr(capacity_note(basis), "en"), tr(capacity_note(basis), "zh")
    assert "what HIP (ROCm) hands a process" in en and "the HIP (ROCm) context" in en and "CUDA" not in en
    assert "HIP (ROCm) 交给进程" in zh and "CUDA" not in zh


# A 14B full fine-tune on one 24 GB card: only ZeRO-3 with optimizer + parameter offload fits, its states in host RAM
OFFLOAD_JOB = {"model": "qwen2.5-14b", "method": "full", "data": {"samples": 50000, "avg_tokens": 1024, "epochs": 3},
               "seq_len": 4096, "global_batch": {"sequences": 64}, "precision": "bf16", "optimizer": "adamw",
               "goal": {"deadline_days": 7, "procurement": "buy"},
               "hardware": {"accelerator": "rtx-4090", "count": 1, "per_node": 1},
               "strategy": {"tp": 1, "pp": 1, "dp": 1, "zero": 3, "micro_batch": 1, "recompute": "full",
                            "offload": "optimizer+params"}}


def _with(job, **changes):
    return {**job, **{k: {**job.get(k, {}), **v} if isinstance(v, dict) else v for k, v in changes.items()}}


def test_a_purchase_adds_the_host_ram_an_offloaded_layout_needs(catalog):
    out = evaluate(resolve_job(OFFLOAD_JOB, catalog), catalog)
    buy, need = out["cost"]["buy"], out["memory"]["host_gib_per_node"]
    ram = buy["host_ram"]
    price = catalog.part("ram-ddr5-rdimm-gib").price["USD"]
    assert need > 200 and ram["gib"] == math.ceil(need) and ram["host_gib_per_node"] == 0
    assert ram["mid"] == pytest.approx(ram["gib"] * price.mid) and ram["source"] and ram["date"]
    card = catalog.purchase("rtx-4090").mid
    assert buy["capex_total"] == pytest.approx(card + ram["mid"])
    assert any("DDR5 RDIMM" in n and f"{ram['gib']:,.0f} GiB" in n for n in out["notes"])
    # the same layout without offload keeps nothing on the host and adds nothing
    plain = evaluate(resolve_job(_with(JOB, goal={"procurement": "buy"}), catalog), catalog)
    assert "host_ram" not in plain["cost"]["buy"]


def test_a_budget_the_card_alone_meets_but_not_with_its_host_ram_fails(catalog):
    card = catalog.purchase("rtx-4090").mid
    job = _with(OFFLOAD_JOB, goal={"budget": {"amount": card + 500, "currency": "USD"}})
    goal = evaluate(resolve_job(job, catalog), catalog)["goal"]
    assert goal["within_budget"] is False and goal["cost_mid"] > card + 500


def test_a_module_part_server_of_known_ram_holds_the_offloaded_states(catalog):
    job = _with(OFFLOAD_JOB, hardware={"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8},
                strategy={"dp": 8})
    out = evaluate(resolve_job(job, catalog), catalog)
    assert "host_ram" not in out["cost"]["buy"]
    assert out["cost"]["buy"]["capex_total"] == pytest.approx(8 * catalog.purchase("h100-sxm-80gb").mid)
    assert any("within the catalog server's 2,048 GiB" in n for n in out["notes"])


def test_a_rented_offloaded_layout_says_what_ram_to_ask_for(catalog):
    out = evaluate(resolve_job(_with(OFFLOAD_JOB, goal={"procurement": "rent"}), catalog), catalog)
    assert "rent" in out["cost"] and "buy" not in out["cost"]
    assert any("the RAM of the instances behind the rtx-4090 rent price" in n for n in out["notes"])


def test_a_budget_in_a_currency_the_part_has_no_price_in_is_said_not_checked(catalog):
    """A CNY budget for one RTX 5090 (priced in USD only): `estimate` listed the purchase in USD and dropped the
    budget rows without a word, while `plan` converts and checks it. The goal now keeps the budget, marks it not
    checked (within_budget None, never a pass or a fail it did not compute) and a note names the part, the price it
    has and how to have it checked."""
    from trainsizer.messages import tr

    job = _with(JOB, hardware={"accelerator": "rtx-5090", "count": 1, "per_node": 1},
                strategy={"dp": 1, "zero": 0}, model="qwen2.5-7b", method="lora",
                goal={"procurement": "buy", "budget": {"amount": 20000, "currency": "CNY"}})
    out = evaluate(resolve_job(job, catalog), catalog)
    goal, buy = out["goal"], out["cost"]["buy"]
    assert buy["currency"] == "USD"
    assert goal["budget"] == 20000 and goal["budget_currency"] == "CNY" and goal["within_budget"] is None
    assert "cost_mid" not in goal
    note = next(n for n in out["notes"] if getattr(n, "key", "") == "note_budget_other_currency")
    en, zh = tr(note, "en"), tr(note, "zh")
    assert "rtx-5090" in en and "USD" in en and "trainsizer plan" in en and "$" in en
    assert "rtx-5090" in zh and "预算" in zh
    # the same budget in the part's own currency is checked as before
    usd = _with(job, goal={"budget": {"amount": 20000, "currency": "USD"}})
    assert evaluate(resolve_job(usd, catalog), catalog)["goal"]["within_budget"] is True


@pytest.mark.parametrize("doc", [{}, {"calibration": {}}, {"calibration": {"source": "node-1"}},
                                 {"calibration": {"gemm_tflops": {"fp8": 1200.0}}}])
def test_a_calibration_file_with_no_figure_for_the_job_is_refused(tmp_path, doc):
    """`estimate --calibration results.json` with an empty calibration section (an accept run whose measurements
    were all skipped, or GEMM figures for another precision only) estimated uncalibrated without a word."""
    import json as _json

    from trainsizer.evaluate import load_calibration

    path = tmp_path / "cal.json"
    path.write_text(_json.dumps(doc), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_calibration(path, "bf16")
    assert "no measured figure" in str(info.value) and "gemm_tflops" in str(info.value)
    assert "实测" in info.value.render("zh")
    path.write_text(_json.dumps({"calibration": {"hbm_gb_s": 3000.0}}), encoding="utf-8")
    assert load_calibration(path, "bf16").hbm_gb_s == 3000.0


def test_host_ram_that_cannot_be_added_is_not_priced_as_dimms():
    """A GB200 tray's Grace LPDDR5X is soldered (catalog Server.ram_extensible False, source sth_grace_memory):
    states beyond its 960 GiB add no DIMM line to the price or the bill of materials, and the note says the
    layout needs more host RAM than the host has; an HGX H100 host of unknown extensibility still gets DIMMs."""
    from types import SimpleNamespace

    from trainsizer.catalog import load_catalog
    from trainsizer.evaluate import host_ram_added_gib, host_ram_block, host_ram_fixed

    cat = load_catalog()
    assert cat.server("gb200-nvl72").ram_extensible is False and "sth_grace_memory" in cat.server("gb200-nvl72").sources
    tray = SimpleNamespace(accelerator="gb200", host_ram_gib=960.0, gpus_per_node=4, nodes=16)
    hgx = SimpleNamespace(accelerator="h100-sxm-80gb", host_ram_gib=2048.0, gpus_per_node=8, nodes=2)
    assert host_ram_fixed(cat, tray) and not host_ram_fixed(cat, hgx)
    notes: list[str] = []
    assert host_ram_added_gib(cat, tray, 1200.0) == 0 and host_ram_block(cat, tray, 1200.0, "USD", notes) is None
    assert "soldered" in notes[-1] and "more host RAM than the host has" in notes[-1]
    assert host_ram_added_gib(cat, hgx, 3000.0) == 3000 - 2048
    assert host_ram_block(cat, hgx, 3000.0, "USD", notes)["gib_per_node"] == 3000 - 2048
