from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trainsizer.accept import isolate


def pair_tester(bad: set[str], log: list):
    def test(a, b):
        log.append((a, b))
        return a not in bad and b not in bad
    return test


def test_one_bad_node_of_eight():
    nodes = [f"n{i}" for i in range(8)]
    log = []
    iso = isolate.isolate(nodes, pair_tester({"n5"}, log))
    assert iso.bad == ["n5"] and not iso.unresolved
    assert len(log) == 4 + 2  # pass 1: N/2 pairs; pass 2: one re-test per suspect


def test_all_pairs_fail_is_unresolved():
    iso = isolate.isolate(["a", "b"], pair_tester({"a"}, []))
    assert iso.bad == [] and iso.unresolved == ["a", "b"]


@given(st.integers(3, 40), st.data())
def test_finds_exactly_the_bad_nodes(n, data):
    nodes = [f"node{i:03d}" for i in range(n)]
    bad = set(data.draw(st.lists(st.sampled_from(nodes), max_size=max(1, n // 4), unique=True)))
    log = []
    iso = isolate.isolate(nodes, pair_tester(bad, log))
    if iso.unresolved:
        assert set(iso.unresolved) <= set(nodes)
    else:
        assert set(iso.bad) == bad
    assert len(log) <= (n + 1) // 2 + n  # O(N) pair tests


def test_result_and_srun_command(tmp_path):
    iso = isolate.Isolation(bad=["n3"], tests=[("n2", "n3", False), ("n3", "n0", False)])
    res = isolate.to_result(iso, "r1", "2026-11-30T00:00:00+00:00")
    assert res.verdict == "fail" and res.checks[-1].name == "isolate.bad_nodes" and res.checks[-1].measured == 1
    cmd = isolate.srun_pair_command("n2", "n3", ["--backend", "nccl"], tmp_path, 29600, python="py")
    assert cmd[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=n2,n3"]
    assert "--rdzv-endpoint" in cmd and cmd[cmd.index("--rdzv-endpoint") + 1] == "n2:29600"
