import pytest

from trainsizer.plan.buildout.node import node_block


def test_breakdowns_add_up(build):
    n = node_block(build())
    assert n.cpu_cores.value == sum(n.cpu_cores_breakdown.values())
    assert n.ram_gib.value == pytest.approx(sum(n.ram_breakdown_gib.values()), abs=0.1)
    assert n.server == "dgx-h100" and n.enough == {"cpu_cores": True, "ram_gib": True, "nvme_tb": True}


def test_offload_needs_host_ram_and_cores(build):
    plain = node_block(build())
    off = node_block(build(strategy={"offload": "optimizer"}))
    assert off.ram_breakdown_gib["offloaded_states"] > 0 == plain.ram_breakdown_gib["offloaded_states"]
    # 12 B/param of fp32 master + Adam, sharded over dp 16, for 8 GPUs of the node
    params = 8.03e9
    assert off.ram_breakdown_gib["offloaded_states"] == pytest.approx(params * 12 / 16 * 8 / 2**30, rel=0.02)
    assert off.cpu_cores_breakdown["cpu_adam_offload"] >= 1


def test_async_checkpoint_share_shrinks_with_nodes(build):
    two = node_block(build())
    eight = node_block(build(hardware={"count": 64}))
    assert eight.ram_breakdown_gib["async_checkpoint_staging"] == pytest.approx(
        two.ram_breakdown_gib["async_checkpoint_staging"] / 4, rel=0.01)
