"""43 (w): one definition of a node's host RAM need (estimate.host_memory), read by the node block, the ranking's
host-RAM price (evaluate.host_ram_block / host_ram_added_gib) and the search's host verdict (search.engine._host_fits)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate import host_memory
from trainsizer.estimate.inputs import System
from trainsizer.search.engine import _host_fits

GIB = 2**30


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _system(host_ram_gib: float) -> System:
    return replace(System(accelerator="gb200", gpus=64, gpus_per_node=4, memory_gib=180.0,
                          peak_tflops={"bf16": 2250.0}, hbm_gb_s=8000.0, intra_node_gb_s=900.0), host_ram_gib=host_ram_gib)


def test_offloaded_rows_are_held_to_the_whole_need_not_the_states_alone():
    """690 GiB of states fit a 960 GiB tray alone, not beside the 651 GiB the node needs without them; a row that
    offloads nothing is not judged here (its host need is the node block's risk)."""
    rows = np.array([0, 1, 2])
    host = np.array([690.0 * GIB, 200.0 * GIB, 0.0])
    kept = _host_fits(rows, host, _system(960.0), lambda s: 651.0)
    assert kept.tolist() == [1, 2]
    assert _host_fits(rows, host, _system(960.0), None).tolist() == [0, 1, 2]  # no job figures: as before
    assert _host_fits(rows, host, _system(0.0), lambda s: 651.0).tolist() == [0, 1, 2]  # host RAM unknown


def test_the_need_is_its_parts():
    """need = OS + per GPU (process + pinned) + the node's checkpoint share + its dataset shard + the states."""
    parts = host_memory.need_parts(8, 2, 2.0 * 1000 * GIB, 1.0e9, offloaded_gib=100.0)
    assert parts["os_reserved"] == host_memory.value("os_reserved_gib")
    assert parts["training_processes"] == 8 * host_memory.value("process_host_gib_per_gpu")
    assert parts["async_checkpoint_staging"] == 1000.0
    assert parts["dataset_page_cache"] == 1.0e9 * host_memory.value("stored_bytes_per_token") / 2 / GIB
    assert host_memory.base_need_gib(8, 2, 2.0 * 1000 * GIB, 1.0e9) == sum(parts.values()) - 100.0


def test_every_host_memory_constant_cites_a_catalog_source(catalog):
    missing = [(r.name, r.source) for r in host_memory.all_rules() if r.source not in catalog.sources]
    assert missing == [] and len(host_memory.all_rules()) == 5


def test_a_server_of_known_ram_adds_what_the_whole_need_exceeds(catalog):
    """evaluate.host_ram_added_gib: on a DGX H100 (2,048 GiB) 1,500 GiB of states beside a 651 GiB base add 103 GiB;
    on a host the plan sizes (no catalog RAM) the states alone are added, the base being that host's own."""
    from trainsizer.evaluate import host_ram_added_gib

    dgx = System(accelerator="h100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=79.2,
                 peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0, host_ram_gib=2048.0)
    assert host_ram_added_gib(catalog, dgx, 1500.0, 651.0) == 103
    assert host_ram_added_gib(catalog, dgx, 1300.0, 651.0) == 0
    box = System(accelerator="rtx-5090", gpus=1, gpus_per_node=1, memory_gib=31.4, peak_tflops={"bf16": 209.5},
                 intra_node_gb_s=64.0,
                 hbm_gb_s=1792.0)
    assert host_ram_added_gib(catalog, box, 248.0, 243.0) == 248
