"""The GH200 Grace Hopper superchip (catalog gh200-96gb, quad-GH200 node): H100-class compute with 96 GB HBM3 at 4 TB/s,
NVLink-C2C to its own Grace, four GPUs a node on a switchless NVLink mesh; a job on it resolves, fits and is
estimated, and the plan's search takes it."""

from __future__ import annotations

import numpy as np

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config


def test_record_states_the_parts_figures():
    cat = load_catalog()
    gh, h100 = cat.accelerator("gh200-96gb"), cat.accelerator("h100-sxm-80gb")
    assert gh.tflops_dense["bf16"] == h100.tflops_dense["bf16"] and gh.tflops_dense["fp8"] == h100.tflops_dense["fp8"]
    assert not gh.tflops_dense.get("fp4")
    assert gh.memory_gb == 96 and gh.memory_bw_tb_s == 4.0 and gh.memory_gib > h100.memory_gib
    assert gh.scaleup_domain == 4 and gh.scaleup_mesh_links == 3 and not gh.nvls
    assert gh.host_gpus_max == 4 and gh.c2c_gb_s_per_dir == 450
    assert cat.accelerator("gh200").id == "gh200-96gb"  # alias
    assert "price_usd" in gh.none_known  # no dated price: said, not guessed
    server = cat.server("quad-gh200-node")
    assert server.accelerator == "gh200-96gb" and server.gpus == 4
    assert not [g for g in cat.coverage_gaps() if "gh200" in str(g)]


def _sc(count: int, tp: int):
    job = {"model": "llama-2-70b", "method": "lora", "seq_len": 8192, "data": {"samples": 1e4, "avg_tokens": 8192},
           "global_batch": {"sequences": 8}, "precision": "fp8",
           "hardware": {"accelerator": "gh200-96gb", "count": count} | ({"network": "ib-ndr200"} if count > 4 else {}),
           "strategy": {"tp": tp, "micro_batch": 1, "framework": "megatron-core", "recompute": "none"}}
    return resolve_job(job, load_catalog())


def test_lora_on_a_quad_node_is_estimated_and_tp_rides_the_mesh():
    sc = _sc(4, 4)
    step = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])
    assert 0 < step < 60
    # two quad nodes (JUPITER's 4 x NDR200 a node), TP 4 inside each node's mesh: data parallel 2 halves the step
    s8 = _sc(8, 4)
    assert float(np.asarray(step_time_arrays(s8.model, s8.training, s8.system, s8.strategy)["step_s"]).reshape(-1)[0]) < step


def test_search_takes_the_part_and_leaves_it_out_of_fp4():
    cat = load_catalog()
    sc = _sc(4, 4)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    assert "gh200-96gb" in {o.accelerator.id for o in c.options}
    sc4 = resolve_job({"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
                       "global_batch": {"sequences": 16}, "precision": "fp8", "fp8_recipe": "nvfp4"}, cat)
    c4 = hardware_candidates(sc4, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    assert [r.code for r in c4.excluded["gh200-96gb"]] == ["precision"]
