"""Run every build-out block for one configuration, in dependency order, into one JSON-ready model."""

from __future__ import annotations

from typing import Any

from trainsizer.accept.criteria import AcceptanceCriteria
from trainsizer.plan.buildout.bom import BomBlock
from trainsizer.plan.buildout.bom_lines import bom_block
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.facility import FacilityBlock, facility_block
from trainsizer.plan.buildout.inputs import BuildInput, acquisition, build_input
from trainsizer.plan.buildout.network import NetworkBlock, network_block
from trainsizer.plan.buildout.node import NodeBlock, node_block
from trainsizer.plan.buildout.phases import PhasesBlock, phases_block
from trainsizer.plan.buildout.rented import rented_network, rented_storage
from trainsizer.plan.buildout.risks import Risk, risks_block
from trainsizer.plan.buildout.rules_of_thumb import Thumb, thumbs
from trainsizer.plan.buildout.software import SoftwareBlock, software_block
from trainsizer.plan.buildout.storage import StorageBlock, storage_block


class BuildOut(Block):
    bom: BomBlock
    node: NodeBlock
    network: NetworkBlock
    storage: StorageBlock
    facility: FacilityBlock
    software: SoftwareBlock
    risks: list[Risk]
    acceptance: AcceptanceCriteria
    phases: PhasesBlock
    rules_of_thumb: list[Thumb]


def build_blocks(b: BuildInput) -> BuildOut:
    from trainsizer.plan.buildout.acceptance import acceptance_block

    node = node_block(b)
    storage = storage_block(b)
    app = b.catalog.part(storage.appliance) if storage.appliance else None
    storage_u = (app.rack_units or 0) * storage.appliances if app is not None else 0
    net = network_block(b, storage_servers=storage.appliances if b.nodes > 1 else 0)
    fac = facility_block(b, net, storage.appliances, storage_u)
    net = network_block(b, storage_servers=storage.appliances if b.nodes > 1 else 0, pdus=fac.pdus)
    sw = software_block(b, net, int(node.cpu_cores.value), float(node.ram_gib.value))
    bom = bom_block(b, net, storage, fac)
    if acquisition(b) == "rent":  # shown as the provider's; the owned sizing stays behind buy vs rent
        net, storage = rented_network(b, net), rented_storage(storage)
    blocks: dict[str, Any] = {"node": node, "storage": storage, "network": net, "facility": fac, "bom": bom}
    return BuildOut(bom=bom, node=node, network=net, storage=storage, facility=fac, software=sw,
                    risks=risks_block(b, blocks), acceptance=acceptance_block(b, node, net, storage, sw),
                    phases=phases_block(b, net), rules_of_thumb=thumbs(b, blocks))


def build_plan(scenario: Any, catalog: Any, evaluation: dict[str, Any] | None = None,
               server_id: str | None = None) -> dict[str, Any]:
    """The build-out blocks of one evaluated configuration as a JSON-ready dict (keys: bom, node, network,
    storage, facility, software, risks, acceptance, phases, rules_of_thumb)."""
    return build_blocks(build_input(scenario, catalog, evaluation, server_id)).model_dump(mode="json", by_alias=True)
