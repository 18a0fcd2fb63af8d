"""What `trainsizer accept --slurm` forwards to each node's step is read from the command's own options."""

from __future__ import annotations

from pathlib import Path

from trainsizer.accept.command import FORWARDED, accept, forwarded_args


def test_every_forwarded_name_is_an_option_of_the_command():
    names = {p.name for p in accept.params}
    assert set(FORWARDED) <= names
    # what only the submitting side uses stays there
    assert not set(FORWARDED) & {"use_slurm", "nodes", "slurm_dir", "merge_paths", "out", "html", "nnodes",
                                 "rdzv_endpoint", "wait", "dry_run", "history", "no_history"}


def test_forwarded_arguments_keep_flags_values_and_order(tmp_path):
    plan = tmp_path / "plan.json"
    values = {"plan_path": str(plan), "platform": None, "telemetry": "auto", "storage_size": "256MiB",
              "checkpoint_size": "1GiB", "gemm_size": 8192, "thermal": "1m", "burn_in": "2m",
              "sample_interval": "1s", "dcgm_level": 2, "storage_path": None, "dataset_path": "data",
              "collective_max_size": None, "nodes": 4}
    assert forwarded_args(accept, values) == [
        "--plan", str(plan.resolve()), "--telemetry", "auto", "--storage-size", "256MiB",
        "--checkpoint-size", "1GiB", "--gemm-size", "8192", "--thermal", "1m", "--burn-in", "2m",
        "--sample-interval", "1s", "--dcgm-level", "2", "--dataset-path", str(Path("data").resolve()),
    ]
