"""The Slurm path: script builder always; a real job on a single-node Slurm when one answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from trainsizer.accept import slurm
from trainsizer.accept.command import accept

SLURM_UP, SLURM_WHY = slurm.available()


def test_script_runs_node_checks_collectives_isolation_merge(tmp_path):
    job = slurm.SlurmJob(nodes=4, out_dir=tmp_path / "out", accept_args=["--platform", "h100-sxm-80gb"], nproc=8,
                         backend="nccl", partition="gpu", gpus_per_node=8, python="/opt/py")
    text = slurm.script(job)
    assert text.startswith("#!/bin/bash\n#SBATCH --job-name=trainsizer-accept\n#SBATCH --nodes=4\n")
    assert "#SBATCH --partition=gpu" in text and "#SBATCH --gpus-per-node=8" in text and "#SBATCH --exclusive" in text
    assert "ACCEPT=(/opt/py -m trainsizer.accept --platform h100-sxm-80gb)" in text
    assert '--only collectives --no-history --quiet \\\n  --nnodes "$SLURM_NNODES" --nproc 8 --backend nccl' in text
    assert '--rdzv-endpoint "$head_node:$port" --rdzv-id "$SLURM_JOB_ID"' in text
    assert "port=$(( 29000 + SLURM_JOB_ID % 500 ))" in text
    assert "-m trainsizer.accept.isolate" in text and '--merge "$OUT"' in text
    assert text.count("srun ") == 2


def test_dry_run_writes_the_script(tmp_path):
    res = CliRunner().invoke(accept, ["--slurm", "--dry-run", "--nodes", "2", "--slurm-dir", str(tmp_path / "s"),
                                      "--no-history", "--skip", "burnin,thermal", "--backend", "gloo"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "s" / "accept.sbatch").read_text()
    assert "#SBATCH --nodes=2" in text and "--backend gloo" in text
    assert "--only inventory,health,dcgm,gemm,hbm,rdma,storage,checkpoint --no-history" in text
    assert subprocess.run(["bash", "-n", str(tmp_path / "s" / "accept.sbatch")]).returncode == 0


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.skipif(not SLURM_UP, reason=f"Slurm not available: {SLURM_WHY}")
def test_real_single_node_job(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "job"
    cmd = [sys.executable, "-m", "trainsizer.accept", "--slurm", "--wait", "--wait-timeout", "150s", "--json",
           "--nodes", "1", "--slurm-dir", str(out), "--no-exclusive", "--time-limit", "00:05:00",
           "--backend", "gloo", "--nproc", "2", "--collective-max-size", "256KiB", "--only",
           "inventory,storage,checkpoint,collectives", "--storage-size", "4MiB", "--checkpoint-size", "4MiB",
           "--history", str(tmp_path / "h.sqlite"), "--storage-path", str(tmp_path)]
    # loopback only: rendezvous on 127.0.0.1 and gloo on lo (the job inherits this environment)
    env = {**os.environ, "TRAINSIZER_RDZV_HOST": "127.0.0.1", "GLOO_SOCKET_IFNAME": "lo"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=200, env=env)
    except subprocess.TimeoutExpired as err:
        _cancel(err.stderr)
        raise
    _cancel(proc.stderr)  # a job the command gave up waiting for must not stay in the queue
    assert proc.returncode in (0, 1), proc.stderr + proc.stdout
    doc = json.loads(proc.stdout)
    names = {c["name"] for c in doc["checks"]}
    assert {"inventory.cpu_cores", "storage.read", "checkpoint.integrity", "collectives.all_reduce.intra"} <= names
    by = {c["name"]: c for c in doc["checks"]}
    assert by["checkpoint.integrity"]["status"] == "pass"
    assert by["collectives.correctness.intra"]["status"] == "pass"
    assert doc["complete"] and doc["calibration"]["storage_read_gb_s"] > 0
    assert (out / "report.html").exists() and (out / "results.json").exists()


def _cancel(stderr: str | bytes | None) -> None:
    """scancel the job the command submitted ("submitted job N" on stderr), if it is still queued."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr or ""
    m = re.search(r"submitted job (\d+)", text)
    if m and shutil.which("scancel"):
        subprocess.run(["scancel", m[1]], capture_output=True, timeout=30, check=False)


def test_unavailable_slurm_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(slurm.shutil, "which", lambda name: None)
    ok, why = slurm.available()
    assert not ok and "not on PATH" in why
    with pytest.raises(slurm.SlurmError, match="cannot submit"):
        slurm.submit(slurm.write(slurm.SlurmJob(nodes=1, out_dir=tmp_path)))
