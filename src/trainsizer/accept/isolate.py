"""Finding bad nodes when a multi-node collective fails: pairwise two-pass re-tests.

Method: Google cluster-health-scanner's two-pass pairing and Meta gcm's --pairwise (docs/acceptance.md
sections 2.6 and 4): pass 1 pairs the nodes; every node of a failing pair is a suspect; pass 2 re-tests
each suspect with a node from a passing pair; a suspect that fails again is bad. O(N) pair tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trainsizer.accept.results import CheckResult, RunResult, save, verdict_of
from trainsizer.messages import msg, storable


@dataclass
class Isolation:
    bad: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    tests: list[tuple[str, str, bool]] = field(default_factory=list)


def first_pass_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    pairs = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2 == 1 and len(nodes) > 1:
        pairs.append((nodes[-1], nodes[0]))
    return pairs


def isolate(nodes: list[str], test_pair: Callable[[str, str], bool]) -> Isolation:
    out = Isolation()
    if len(nodes) < 2:
        return out
    for a, b in first_pass_pairs(nodes):
        out.tests.append((a, b, test_pair(a, b)))
    passed = {n for a, b, ok in out.tests if ok for n in (a, b)}
    suspects = list(dict.fromkeys(n for a, b, ok in out.tests if not ok for n in (a, b) if n not in passed))
    good = [n for n in nodes if n in passed]
    if not good:
        out.unresolved = suspects
        return out
    for i, s in enumerate(suspects):
        partner = good[i % len(good)]
        ok = test_pair(s, partner)
        out.tests.append((s, partner, ok))
        if not ok:
            out.bad.append(s)
    return out


def to_result(iso: Isolation, run_id: str, started_at: str) -> RunResult:
    checks = [CheckResult(name=f"isolate.pair.{a}+{b}", status="pass" if ok else "fail", node="fleet",
                          why=(why := msg("acc_why_pair", a=a, b=b, result=msg("acc_why_passed" if ok else "acc_why_failed"))),
                          why_msg=storable(why)) for a, b, ok in iso.tests]
    status = "fail" if iso.bad else ("error" if iso.unresolved else "pass")
    why = (f"bad nodes: {', '.join(iso.bad)}" if iso.bad else
           f"every pair failed; cannot tell which of {iso.unresolved} is bad" if iso.unresolved
           else "no bad node found in pairwise re-tests")
    checks.append(CheckResult(name="isolate.bad_nodes", status=status, measured=len(iso.bad), threshold=0,
                              unit="nodes", node="fleet", why=why, source="two-pass pairwise (Google CHS)",
                              details={"bad": iso.bad, "unresolved": iso.unresolved}))
    res = RunResult(run_id=run_id, started_at=started_at, checks=checks, complete=True)
    res.verdict = verdict_of(checks)
    return res


def srun_pair_command(a: str, b: str, accept_args: list[str], out: Path, port: int,
                      python: str = sys.executable) -> list[str]:
    """srun step running the collective check on nodes a and b (inside the Slurm allocation)."""
    return ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", f"--nodelist={a},{b}",
            python, "-m", "trainsizer.accept", *accept_args, "--only", "collectives", "--nnodes", "2",
            "--rdzv-endpoint", f"{a}:{port}", "--rdzv-id", f"pair-{a}-{b}", "--no-history", "--quiet",
            "--out", str(out / f"pair-{a}-{b}-{{host}}.json")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="trainsizer.accept.isolate")
    ap.add_argument("--nodes", required=True, help="comma-separated node names")
    ap.add_argument("--out", required=True, type=Path, help="result file of the isolation")
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--timeout-s", type=float, default=900)
    ap.add_argument("accept_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    nodes = [n for n in args.nodes.split(",") if n]
    work = args.out.parent / "pairs"
    work.mkdir(parents=True, exist_ok=True)
    extra = [a for a in args.accept_args if a != "--"]

    def test_pair(a: str, b: str) -> bool:
        cmd = srun_pair_command(a, b, extra, work, args.port)
        try:
            rc = subprocess.run(cmd, timeout=args.timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            return False
        files = list(work.glob(f"pair-{a}-{b}-*.json"))
        if rc != 0 or not files:
            return False
        doc = json.loads(files[0].read_text())
        return all(c["status"] not in ("fail", "error") for c in doc["checks"])

    from trainsizer.accept.runner import now

    started = now()
    iso = isolate(nodes, test_pair)
    save(to_result(iso, run_id="isolation", started_at=started), args.out)
    print(json.dumps({"bad": iso.bad, "unresolved": iso.unresolved, "tests": iso.tests}))
    return 1 if iso.bad or iso.unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
