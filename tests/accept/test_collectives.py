"""The collective benchmark for real: gloo on CPU processes under torchrun, on loopback only."""

from __future__ import annotations

import socket
import threading

import pytest

from trainsizer.accept import collectives
from trainsizer.accept.context import Context, Options
from trainsizer.accept.criteria import CollectiveLimits, Limit, generic

torch = pytest.importorskip("torch", reason="torch not installed (pip install 'trainsizer[torch]')")

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ctx_for(**opts) -> Context:
    base = {"nproc": 2, "backend": "gloo", "collective_max_bytes": 2**20, "collective_iters": 3,
            "collective_timeout_s": 60}
    return Context(criteria=generic(), telemetry=None, telemetry_why="test", node="n0", options=Options(**{**base, **opts}))


def by_name(results):
    return {r.name: r for r in results}


def test_two_processes_one_node_gloo(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    ctx = ctx_for()
    ctx.criteria.busbw_intra_gb_s_min = CollectiveLimits(
        all_reduce=Limit(value=1e-6, source="test: tiny"), all_gather=Limit(value=1e6, source="test: huge"))
    r = by_name(collectives.run(ctx))
    ar = r["collectives.all_reduce.intra"]
    assert ar.status == "pass" and ar.measured > 0 and ar.unit == "GB/s" and ar.source == "test: tiny"
    assert ar.details["ranks"] == 2 and ar.details["backend"] == "gloo" and ar.details["calibration"] is False
    rows = ar.details["rows"]
    assert rows[-1]["size_bytes"] == 2**20
    # nccl-tests definitions: all-reduce busbw = algbw x 2(n-1)/n = algbw at n = 2
    assert all(row["busbw_gb_s"] == pytest.approx(row["algbw_gb_s"]) for row in rows)
    ag = r["collectives.all_gather.intra"]
    assert ag.status == "fail" and "<" in ag.why
    assert all(row["busbw_gb_s"] == pytest.approx(row["algbw_gb_s"] / 2) for row in ag.details["rows"])
    assert r["collectives.reduce_scatter.intra"].status == "skipped"  # no threshold: reported, not passed
    assert r["collectives.correctness.intra"].status == "pass" and r["collectives.correctness.intra"].measured == 0


def test_two_nodes_on_loopback_rendezvous(monkeypatch):
    """Two torchrun agents (--nnodes 2) meeting at a c10d rendezvous on 127.0.0.1."""
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    endpoint = f"127.0.0.1:{free_port()}"
    results = {}

    def node(i):
        ctx = ctx_for(nproc=1, nnodes=2, rdzv_endpoint=endpoint, rdzv_id="loopback-test")
        ctx.node = f"n{i}"
        results[i] = by_name(collectives.run(ctx))

    threads = [threading.Thread(target=node, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=200)
    assert set(results) == {0, 1}
    for i in range(2):
        ar = results[i]["collectives.all_reduce.inter"]
        assert ar.measured > 0 and ar.details["ranks"] == 2, ar.why
        assert results[i]["collectives.correctness.inter"].status == "pass"


def test_nccl_backend_without_gpu_is_skipped():
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    r = collectives.run(ctx_for(backend="nccl"))
    assert all(x.status == "skipped" and "CUDA" in x.why for x in r)


def test_torchrun_command_shapes(tmp_path):
    one = collectives.torchrun_command(ctx_for(), tmp_path / "o.json", python="py")
    assert one[:4] == ["py", "-m", "torch.distributed.run", "--nproc-per-node=2"] and "--standalone" in one
    multi = collectives.torchrun_command(ctx_for(nnodes=4, rdzv_endpoint="node01:29500", rdzv_id="job7"),
                                         tmp_path / "o.json", python="py")
    assert "--nnodes=4" in multi and "--rdzv-backend=c10d" in multi and "--rdzv-endpoint=node01:29500" in multi
    assert "--standalone" not in multi and "--max-restarts=0" in multi


def test_failed_torchrun_is_an_error(monkeypatch):
    ctx = ctx_for(collective_timeout_s=5)
    monkeypatch.setattr(collectives, "torchrun_command", lambda c, out, python=None, group_size=0: ["python3", "-c", "raise SystemExit(3)"])
    r = collectives.run(ctx)
    assert all(x.status == "error" and "exited 3" in x.why for x in r)


def test_single_rank_is_skipped():
    rows = {"all_reduce": [{"size_bytes": 1024, "time_us": 1.0, "algbw_gb_s": 1.0, "busbw_gb_s": 0.0, "wrong": 0}]}
    res = collectives._verdicts(ctx_for(), rows, {}, "intra", {"tool": "t", "backend": "nccl", "ranks": 1})
    assert res[0].status == "skipped" and "1 rank" in res[0].why


def test_a_node_with_smaller_scale_up_domains_is_also_tested_per_domain(monkeypatch):
    """Criteria naming 2-GPU domains (NVLink-bridged pairs): the whole node's ring is judged on the node's floor, and
    the rings of each pair, run at once in groups of 2 consecutive ranks, on the domain's floor."""
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    ctx = ctx_for(nproc=4)
    ctx.criteria.scaleup_domain_gpus = 2
    ctx.criteria.busbw_domain_gb_s_min = CollectiveLimits(all_reduce=Limit(value=1e-6, source="test: bridge"))
    r = by_name(collectives.run(ctx))
    node, pair = r["collectives.all_reduce.intra"], r["collectives.all_reduce.domain"]
    assert node.details["ranks"] == 4 and "group_size" not in node.details
    assert pair.status == "pass" and pair.source == "test: bridge" and pair.details["group_size"] == 2
    assert "2 groups of 2" in pair.why
    # busbw over each group of 2: all-reduce busbw = algbw x 2(2-1)/2 = algbw
    assert all(row["busbw_gb_s"] == pytest.approx(row["algbw_gb_s"]) for row in pair.details["rows"])
    assert r["collectives.correctness.domain"].status == "pass"
    odd = ctx_for(nproc=3)
    odd.criteria.scaleup_domain_gpus = 2
    assert collectives._domain(odd)[0].status == "skipped"
