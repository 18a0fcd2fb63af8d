"""What every build-out block reads: one evaluated configuration and the catalog records behind it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.scenario import Scenario, domain_job_gpus, domain_shares


@dataclass(frozen=True)
class BuildInput:
    """A configuration (job + hardware + strategy) with its estimate, and the catalog parts it is built from.

    `evaluation` is `trainsizer.evaluate.evaluate(...)`'s dict (memory, time, cost, energy). `server` is the
    catalog server holding the GPUs (None when the catalog has none for this accelerator and node size);
    `network` the catalog network record (None for one node or a network described by hand)."""

    scenario: Scenario
    catalog: Any
    evaluation: dict[str, Any]
    server: Any = None
    network: Any = None
    # a catalog server set aside because the plan is a workstation holding fewer GPUs than that server (its id)
    server_set_aside: str | None = None

    @property
    def job(self) -> Any:
        return self.scenario.job

    @property
    def system(self) -> Any:
        return self.scenario.system

    @property
    def strategy(self) -> Any:
        return self.scenario.strategy

    @property
    def accelerator(self) -> Any:
        return self.scenario.accelerator

    @property
    def gpus(self) -> int:
        return int(self.system.gpus)

    @property
    def per_node(self) -> int:
        return int(self.system.gpus_per_node)

    @property
    def nodes(self) -> int:
        return int(self.system.nodes)

    @property
    def nvl72(self) -> bool:
        """A rack-scale NVLink domain (GB200/GB300 NVL72): racks of 72 GPUs in trays of 4 (Accelerator.rack_nvlink)."""
        return bool(self.accelerator.rack_nvlink)

    @property
    def rack_shares(self) -> tuple[int, ...]:
        """The job's GPUs in each NVL72 rack it takes (scenario.domain_shares: the placement the estimate times);
        () off NVL72. The plan buys, powers, cables and accepts these racks."""
        if not self.nvl72:
            return ()
        return domain_shares(domain_job_gpus(self.accelerator, self.per_node), self.per_node, self.gpus)

    @property
    def racks(self) -> int:
        """NVL72 racks the job takes (0 off NVL72)."""
        return len(self.rack_shares)

    @property
    def currency(self) -> str:
        return self.job.currency

    @property
    def nics_per_node(self) -> int:
        view = self.scenario.network
        return int(view.nics_per_node) if view else 0

    @property
    def gbps_per_nic(self) -> float:
        view = self.scenario.network
        return float(view.gbps_per_nic) if view else 0.0

    @property
    def network_kind(self) -> str | None:
        view = self.scenario.network
        return view.kind if view else None

    @property
    def tokens_per_s(self) -> float:
        return float(self.evaluation["time"]["tokens_per_s"])

    @property
    def train_days(self) -> float:
        return float(self.evaluation["time"]["train_days"])


def acquisition(b: BuildInput) -> str:
    """'rent' or 'buy': the job's goal.procurement, or under 'either' the cheaper of the two as the plan prices
    the job (`evaluate.job_cost`; buy when neither has a price). A part the catalog prices in the other currency
    only is ranked on that price converted (plan.searched.converted_cost), so its basis is read there too: a
    CNY plan renting rtx-a6000 (USD rent, no purchase price) got a "buy" bill of materials totalling 0."""
    procurement = b.job.goal.procurement
    if procurement in ("rent", "buy"):
        return procurement
    from trainsizer.catalog.catalog import CURRENCIES
    from trainsizer.evaluate import job_cost

    costs = b.evaluation.get("cost") or {}
    for currency in (b.currency, *(c for c in CURRENCIES if c != b.currency)):
        basis = job_cost(costs, currency)[1]
        if basis:
            return basis
    return "buy"


def pick_server(catalog: Any, accelerator_id: str, per_node: int, server_id: str | None = None) -> Any:
    """The catalog server for this accelerator and node size: the one named, else the first that matches
    (catalog order: vendor reference systems first), else None (the plan then says what it assumed)."""
    if server_id is not None:
        server = catalog.server(server_id)
        if server.accelerator != accelerator_id:
            raise SpecError("--server", msg("plan_server_holds", server=server.id, holds=server.accelerator,
                                                acc=accelerator_id),
                            value=server_id, allowed=[s.id for s in catalog.servers_for(accelerator_id)])
        return server
    candidates = catalog.servers_for(accelerator_id)
    exact = [s for s in candidates if s.gpus == per_node]
    racks = [s for s in candidates if s.gpus > per_node and s.gpus % per_node == 0]
    return (exact or racks or [None])[0]


def build_input(scenario: Scenario, catalog: Any, evaluation: dict[str, Any] | None = None,
                server_id: str | None = None) -> BuildInput:
    """A BuildInput for a scenario with hardware and strategy (evaluated here when `evaluation` is None)."""
    from trainsizer.evaluate import evaluate, require_configuration

    require_configuration(scenario)
    if evaluation is None:
        evaluation = evaluate(scenario, catalog)
    acc = scenario.accelerator
    server = pick_server(catalog, acc.id, scenario.system.gpus_per_node, server_id)
    network = None
    if scenario.network is not None and scenario.network.id != "custom":
        network = catalog.network(scenario.network.id)
    b = BuildInput(scenario=scenario, catalog=catalog, evaluation=evaluation, server=server, network=network)
    return workstation_host(b)


def workstation_host(b: BuildInput) -> BuildInput:
    """A bought workstation (facility site 'workstation': one node on one ordinary circuit) that holds fewer GPUs
    than the catalog server of its accelerator is a box of its own GPUs, not that rack server (an 8-card 4U
    chassis draws several kW): the plan sizes its host from the job (node block) and names the server it set
    aside. A rented node of a few PCIe cards is the provider's instance: no catalog server is named for it (the
    node block read "1 of the 8 GPUs of pcie-8x-rtx-4090; server figures are whole-server" with no figures). A
    rack-scale record (an NVL72 tray) and a node that is part of a bigger server in a cluster keep it."""
    from trainsizer.plan.buildout.facility import site_scale

    srv = b.server
    from trainsizer.scenario import module_part

    if srv is None or b.nvl72 or srv.gpus <= b.per_node or b.nodes != 1 or module_part(b.accelerator):
        return b
    site = site_scale(b)
    if site == "rented":  # a rented instance of a few cards is the provider's host, not the catalog's 8-card box
        return replace(b, server=None)
    if site != "workstation":
        return b
    return replace(b, server=None, server_set_aside=srv.id)
