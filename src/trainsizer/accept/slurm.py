"""Running the acceptance suite across N nodes with Slurm: write, submit and wait for an sbatch script.

The script runs the node-local checks on every node (one srun task per node), the collective checks
across all nodes (srun starts `trainsizer accept --only collectives` on each node, which runs torchrun
with a c10d rendezvous on the first node: no home-made launcher), pairwise isolation if that fails, and
finally merges the per-node results. Pattern: docs/acceptance.md section 4 (Stas Bekman's srun + torchrun).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from trainsizer.errors import TrainsizerError


class SlurmError(TrainsizerError):
    pass


@dataclass
class SlurmJob:
    nodes: int
    out_dir: Path
    accept_args: list[str] = field(default_factory=list)  # forwarded to every `trainsizer accept` step
    nproc: int = 1
    backend: str = "nccl"
    time_limit: str = "02:00:00"
    partition: str | None = None
    gpus_per_node: int | None = None
    exclusive: bool = True
    port: int = 29000  # rendezvous port = port + job id % 500
    history: str | None = None  # None: no history recorded by the merge step
    node_only: str | None = "inventory,health,dcgm,gemm,hbm,rdma,storage,checkpoint,thermal,burnin"
    collectives: bool = True
    python: str = sys.executable


def script(job: SlurmJob) -> str:
    q = shlex.quote
    out = job.out_dir.resolve()
    common = " ".join(q(a) for a in job.accept_args)
    head = [
        "#!/bin/bash",
        "#SBATCH --job-name=trainsizer-accept",
        f"#SBATCH --nodes={job.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --time={job.time_limit}",
        f"#SBATCH --output={out}/slurm-%j.out",
    ]
    if job.partition:
        head.append(f"#SBATCH --partition={job.partition}")
    if job.exclusive:
        head.append("#SBATCH --exclusive")
    if job.gpus_per_node:
        head.append(f"#SBATCH --gpus-per-node={job.gpus_per_node}")
    history = f"--history {q(job.history)}" if job.history else "--no-history"
    node_step = coll_step = ""
    if job.node_only:
        node_step = f"""echo "== node-local checks on $SLURM_NNODES nodes"
srun --ntasks-per-node=1 --kill-on-bad-exit=0 "${{ACCEPT[@]}}" --only {q(job.node_only)} --no-history --quiet \\
  --out "$OUT/node-{{host}}.json"

"""
    if job.collectives:
        coll_step = f"""echo "== collectives across $SLURM_NNODES nodes (rendezvous $head_node:$port)"
srun --ntasks-per-node=1 --kill-on-bad-exit=0 "${{ACCEPT[@]}}" --only collectives --no-history --quiet \\
  --nnodes "$SLURM_NNODES" --nproc {job.nproc} --backend {q(job.backend)} \\
  --rdzv-endpoint "$head_node:$port" --rdzv-id "$SLURM_JOB_ID" --out "$OUT/collectives-{{host}}.json"
coll_rc=$?

if [ "$coll_rc" -ne 0 ] && [ "$SLURM_NNODES" -gt 2 ]; then
  echo "== collectives failed: pairwise re-tests to isolate bad nodes"
  {q(job.python)} -m trainsizer.accept.isolate --nodes "$(echo "$nodes" | paste -sd, -)" \\
    --port $((port + 1)) --out "$OUT/isolation.json" -- {common} --nproc {job.nproc} --backend {q(job.backend)}
fi

"""
    body = f"""
# Written by `trainsizer accept --slurm`. Steps: node-local checks on every node, collectives across all
# nodes (torchrun, c10d rendezvous on the first node), pairwise isolation if they fail, merge.
set -uo pipefail
OUT={q(str(out))}
ACCEPT=({q(job.python)} -m trainsizer.accept {common})
mkdir -p "$OUT"
nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
head_node=${{TRAINSIZER_RDZV_HOST:-$(echo "$nodes" | head -n 1)}}
port=$(( {job.port} + SLURM_JOB_ID % 500 ))  # per job, so that concurrent jobs on a node do not collide

{node_step}{coll_step}echo "== merge"
"${{ACCEPT[@]}}" --merge "$OUT" --out "$OUT/results.json" --html "$OUT/report.html" {history}
"""
    return "\n".join(head) + "\n" + body


def write(job: SlurmJob) -> Path:
    job.out_dir.mkdir(parents=True, exist_ok=True)
    path = job.out_dir / "accept.sbatch"
    path.write_text(script(job), encoding="utf-8")
    path.chmod(0o755)
    return path


def available(timeout_s: float = 10) -> tuple[bool, str]:
    """Whether a Slurm controller answers (`sinfo`), and why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return False, "sinfo/sbatch not on PATH (Slurm client not installed)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return False, f"sinfo did not answer within {timeout_s:g} s"
    if proc.returncode != 0:
        return False, f"sinfo failed: {proc.stderr.strip()[:200]}"
    return True, proc.stdout.strip()


def submit(path: Path) -> str:
    ok, why = available()
    if not ok:
        raise SlurmError(f"cannot submit {path}: {why}")
    proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True, timeout=60,
                          check=False)
    if proc.returncode != 0:
        raise SlurmError(f"sbatch {path} failed: {proc.stderr.strip()}")
    return proc.stdout.strip().split(";")[0]


def wait(job_id: str, timeout_s: float, poll_s: float = 2.0) -> str:
    """Wait until the job leaves the queue; its final state (scontrol), or raise on timeout."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True,
                              timeout=30, check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            break
        time.sleep(poll_s)
    else:
        raise SlurmError(f"job {job_id} still running after {timeout_s:g} s (scancel {job_id} to stop it)")
    proc = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, timeout=30,
                          check=False)
    for word in proc.stdout.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return "COMPLETED?"  # purged from slurmctld already (MinJobAge)
