"""An NVL72 plan buys what it times (known-gaps 55 (f)): the racks of the BOM, the facility, the NVLink block, the
acceptance path and Slurm's topology blocks are the domains the estimate places the job in (scenario.domain_shares)."""

from __future__ import annotations

import pytest

from trainsizer.plan.buildout.slurm_files import parse_conf
from trainsizer.scenario import domain_shares


def _nvl72(blocks, acc: str, gpus: int):
    return blocks(hardware={"accelerator": acc, "count": gpus, "per_node": 4, "network": "ib-ndr400"},
                  constraints={"cooling": "liquid"}, global_batch={"sequences": gpus},
                  strategy={"tp": 4, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1, "recompute": "full"})


@pytest.mark.parametrize("acc", ["gb200", "gb300"])
@pytest.mark.parametrize("gpus, racks", [(128, 2), (144, 2), (200, 3), (256, 4), (576, 8)])
def test_every_block_counts_the_racks_the_job_is_placed_in(blocks, acc, gpus, racks):
    out = _nvl72(blocks, acc, gpus)
    shares = domain_shares(72, 4, gpus)
    assert len(shares) == racks  # 200: 72 + 64 + 64 in 3 racks, not 5 domains of 40 beside 3 racks bought
    nv = out.network.nvlink
    assert (nv.domains, nv.job_gpus_by_domain, nv.job_gpus_per_domain) == (racks, list(shares), min(shares))
    assert nv.nvlink_switch_trays == 9 * racks
    assert out.facility.node_racks == racks
    rack_lines = [ln for ln in out.bom.lines if str(ln.unit) == "per_rack" and ln.part]
    assert rack_lines and all(ln.quantity == racks for ln in rack_lines)
    blocks_conf = [e for e in parse_conf(out.software.files["topology.conf"]) if "BlockName" in e]
    assert len(blocks_conf) == racks
    assert f"{racks} NVLink domains (racks)" in str(out.acceptance.busbw_inter_gb_s_min.all_reduce.source)


def test_200_gb200_draws_and_says_the_racks_it_buys():
    """The build row and the diagram's legend name each rack's share where they differ (en / zh)."""
    from trainsizer.render.build_view import _domain_row

    nv = {"domain_size_gpus": 72, "gpus_per_domain": 72, "job_gpus_per_domain": 64, "domains": 3,
          "job_gpus_by_domain": [72, 64, 64]}
    assert _domain_row(nv, "NVLink", "en") == "NVLink: 3 x 72-GPU domain, the job's GPUs 72 + 64 + 64 (timed at 64 a domain)"
    assert "72 + 64 + 64" in _domain_row(nv, "NVLink", "zh")
    assert _domain_row({**nv, "job_gpus_by_domain": [64, 64], "domains": 2}, "NVLink", "en").endswith(
        "64 GPUs of the job in each")
