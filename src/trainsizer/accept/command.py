"""`trainsizer accept`: check delivered hardware against the plan, check by check."""

from __future__ import annotations

import datetime as dt
import socket
import sys
import tempfile
from pathlib import Path

import click

from trainsizer.accept import criteria as criteria_mod
from trainsizer.accept import fleet, report, runner, slurm, store
from trainsizer.accept.context import Context, Options
from trainsizer.accept.results import RunResult, load, save, write_atomic
from trainsizer.accept.telemetry import open_telemetry
from trainsizer.accept.units import parse_duration_s, parse_size_bytes
from trainsizer.errors import SpecError


def _host() -> str:
    return socket.gethostname().split(".")[0]


def _path(template: str | None) -> Path | None:
    return Path(template.replace("{host}", _host())) if template else None


def _writable(path: Path | None, option: str) -> None:
    """Refuse an output path whose folder cannot be made or written before any check runs."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path.parent).close()
    except OSError as err:
        raise SpecError(option, f"cannot write there ({err.strerror or err})", value=str(path),
                        allowed="a path in a folder you can write") from None
    if path.is_dir():
        raise SpecError(option, "is a folder, not a file", value=str(path), allowed="a file path")


def _torch_cuda() -> tuple[bool, int]:
    try:
        import torch
    except ImportError:
        return False, 0
    ok = torch.cuda.is_available()
    return ok, torch.cuda.device_count() if ok else 0


def _merge_inputs(paths: tuple[str, ...]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            # node-local results first, then the cluster-wide collectives, then isolation
            files += sorted((f for f in p.glob("*.json") if f.name != "results.json"),
                            key=lambda f: (not f.name.startswith("node-"), not f.name.startswith("collectives-"),
                                           f.name))
        elif p.is_file():
            files.append(p)
        else:
            raise SpecError("--merge", "no such file or folder", value=str(p))
    if not files:
        raise SpecError("--merge", "no result files found", value=", ".join(paths))
    return files


def _finish(result: RunResult, out: Path | None, html: Path | None, history: str | None, no_history: bool,
            as_json: bool, quiet: bool) -> None:
    if not no_history:
        con = store.connect(Path(history) if history else store.default_path())
        try:
            result.history = store.compare(con, result)
            store.record(con, result, out)
        finally:
            con.close()
    if out:
        save(result, out)
    if html:
        write_atomic(html, report.to_html(result))
    _show(result, as_json, quiet)
    if out and not as_json and not quiet:
        click.echo(f"results: {out}")


def _show(result: RunResult, as_json: bool, quiet: bool) -> None:
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not quiet:
        report.print_table(result)


@click.command("accept", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False), help="Plan (or criteria) JSON to accept against.")
@click.option("--platform", help="Platform reference, e.g. h100-sxm-80gb (default: from the plan or the GPU name).")
@click.option("--telemetry", default="auto", show_default=True,
              help="auto | nvml | nvidia-smi | none | path of a recorded telemetry JSON.")
@click.option("--only", multiple=True, help="Run only these checks (comma-separated or repeated).")
@click.option("--skip", multiple=True, help="Skip these checks.")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON on stdout instead of the table.")
@click.option("--out", help="Result file, rewritten after every check ({host} expands). "
              "Default: accept-{host}-<time>.json")
@click.option("--html", help="Also write an HTML report here ({host} expands).")
@click.option("--history", help="SQLite history database (default $TRAINSIZER_ACCEPT_DB or "
              "~/.local/share/trainsizer/accept-history.sqlite).")
@click.option("--no-history", is_flag=True, help="Do not record or compare with the history.")
@click.option("--quiet", is_flag=True, help="No table, no progress lines.")
@click.option("--nproc", type=click.IntRange(1), help="Processes per node for collectives (default: GPUs, or 2).")
@click.option("--backend", type=click.Choice(["auto", "gloo", "nccl"]), default="auto", show_default=True)
@click.option("--nnodes", type=click.IntRange(1), default=1, show_default=True)
@click.option("--rdzv-endpoint", help="host:port of the torchrun c10d rendezvous (multi-node).")
@click.option("--rdzv-id", default="trainsizer-accept", show_default=True)
@click.option("--collective-max-size", help="Largest collective message (default 1GiB on GPUs, 4MiB on CPU).")
@click.option("--storage-path", type=click.Path(file_okay=False), help="Planned storage path (default: temp dir).")
@click.option("--dataset-path", type=click.Path(), help="Planned dataset (file or folder): read its files cold.")
@click.option("--storage-size", default="256MiB", show_default=True)
@click.option("--checkpoint-size", default="256MiB", show_default=True,
              help="Checkpoint size (a plan's checkpoint_size_gb wins).")
@click.option("--gemm-size", type=click.IntRange(64), default=8192, show_default=True)
@click.option("--thermal", "thermal", default="1m", show_default=True, help="Thermal soak duration (plan: 30m).")
@click.option("--burn-in", "burn_in", default="2m", show_default=True, help="Burn-in duration (plan: 24h).")
@click.option("--sample-interval", default="1s", show_default=True)
@click.option("--dcgm-level", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option("--merge", "merge_paths", multiple=True, help="Merge result files/folders instead of running checks.")
@click.option("--slurm", "use_slurm", is_flag=True, help="Write and submit an sbatch script for --nodes nodes.")
@click.option("--dry-run", is_flag=True, help="With --slurm: write the script only.")
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True, help="With --slurm: node count.")
@click.option("--partition", help="With --slurm: partition.")
@click.option("--time-limit", default="02:00:00", show_default=True, help="With --slurm: job time limit.")
@click.option("--gpus-per-node", type=click.IntRange(0), help="With --slurm: --gpus-per-node for sbatch.")
@click.option("--slurm-dir", default="accept-slurm", show_default=True, help="With --slurm: output folder.")
@click.option("--no-exclusive", is_flag=True, help="With --slurm: do not ask for whole nodes.")
@click.option("--wait/--no-wait", default=False, help="With --slurm: wait for the job and print its report.")
@click.option("--wait-timeout", default="3h", show_default=True)
@click.pass_context
def accept(click_ctx: click.Context, plan_path, platform, telemetry, only, skip, as_json, out, html, history,
           no_history, quiet, nproc, backend, nnodes, rdzv_endpoint, rdzv_id, collective_max_size, storage_path,
           dataset_path, storage_size, checkpoint_size, gemm_size, thermal, burn_in, sample_interval, dcgm_level,
           merge_paths, use_slurm, dry_run, nodes, partition, time_limit, gpus_per_node, slurm_dir, no_exclusive,
           wait, wait_timeout) -> None:
    """Check delivered servers against the plan: pass/fail per check, with figure, threshold and source."""
    groups = runner.select(only, skip)
    out_path = _path(out) or Path(f"accept-{_host()}-{dt.datetime.now():%Y%m%dT%H%M%S}.json")
    html_path = _path(html)
    if nnodes > 1 and not rdzv_endpoint:
        raise SpecError("--rdzv-endpoint", "needed with --nnodes > 1 (host:port of the first node)")
    if dry_run and not use_slurm:
        raise SpecError("--dry-run", "only applies with --slurm")
    if not use_slurm:
        _writable(out_path, "--out")
        _writable(html_path, "--html")

    if merge_paths:
        results = [load(p) for p in _merge_inputs(merge_paths)]
        crit = criteria_mod.resolve(plan_path, platform, None)
        merged = fleet.merge(results, crit)
        _finish(merged, out_path, html_path, history, no_history, as_json, quiet)
        click_ctx.exit(1 if merged.verdict == "fail" else 0)

    cuda, ngpu = _torch_cuda()
    if backend == "auto":
        backend = "nccl" if cuda else "gloo"
    opts = Options(
        nproc=nproc or (ngpu if backend == "nccl" and ngpu else 2), backend=backend, nnodes=nnodes,
        rdzv_endpoint=rdzv_endpoint, rdzv_id=rdzv_id,
        collective_max_bytes=parse_size_bytes(collective_max_size, "--collective-max-size") if collective_max_size
        else (2**30 if backend == "nccl" else 4 * 2**20),
        storage_path=Path(storage_path) if storage_path else None,
        dataset_path=Path(dataset_path) if dataset_path else None,
        storage_size_bytes=parse_size_bytes(storage_size, "--storage-size"),
        checkpoint_size_bytes=parse_size_bytes(checkpoint_size, "--checkpoint-size"),
        gemm_size=gemm_size, thermal_s=parse_duration_s(thermal, "--thermal"),
        burnin_s=parse_duration_s(burn_in, "--burn-in"),
        sample_interval_s=parse_duration_s(sample_interval, "--sample-interval"), dcgm_level=dcgm_level,
    )

    if use_slurm:
        forward = [a for a in (
            *(["--plan", str(Path(plan_path).resolve())] if plan_path else []),
            *(["--platform", platform] if platform else []),
            "--telemetry", telemetry, "--storage-size", storage_size, "--checkpoint-size", checkpoint_size,
            "--gemm-size", str(gemm_size), "--thermal", thermal, "--burn-in", burn_in,
            "--sample-interval", sample_interval, "--dcgm-level", str(dcgm_level),
            *(["--storage-path", str(Path(storage_path).resolve())] if storage_path else []),
            *(["--dataset-path", str(Path(dataset_path).resolve())] if dataset_path else []),
            *(["--collective-max-size", collective_max_size] if collective_max_size else []),
        )]
        node_groups = [g for g in groups if g != "collectives"]
        job = slurm.SlurmJob(
            nodes=nodes, out_dir=Path(slurm_dir), accept_args=forward, nproc=opts.nproc, backend=backend,
            time_limit=time_limit, partition=partition, gpus_per_node=gpus_per_node, exclusive=not no_exclusive,
            history=None if no_history else str(Path(history).resolve() if history else store.default_path()),
            node_only=",".join(node_groups) if node_groups else None, collectives="collectives" in groups,
        )
        path = slurm.write(job)
        if dry_run:
            click.echo(f"wrote {path} (not submitted: --dry-run)")
            return
        job_id = slurm.submit(path)
        click.echo(f"submitted job {job_id}: {path}", err=True)
        if wait:
            state = slurm.wait(job_id, parse_duration_s(wait_timeout, "--wait-timeout"))
            final = job.out_dir / "results.json"
            if not final.exists():
                raise slurm.SlurmError(f"job {job_id} ended ({state}) without {final}; see {job.out_dir}/slurm-{job_id}.out")
            result = load(final)
            _show(result, as_json, quiet)
            click_ctx.exit(1 if result.verdict == "fail" else 0)
        else:
            click.echo(job_id)
        return

    tel, why = open_telemetry(telemetry)
    gpu_name = None
    if tel is not None:
        gpus = tel.gpus()
        gpu_name = gpus[0].name if gpus else None
    crit = criteria_mod.resolve(plan_path, platform, gpu_name)
    ctx = Context(criteria=crit, telemetry=tel, telemetry_why=why, options=opts)

    def progress(checks) -> None:
        if not quiet and not as_json:
            for c in checks:
                click.echo(f"  {c.status:7} {c.name}: {c.why}", err=True)

    result = runner.run_checks(ctx, groups, out_path, on_check=progress)
    _finish(result, out_path, html_path, history, no_history, as_json, quiet)
    click_ctx.exit(1 if result.verdict == "fail" else 0)


def main(argv: list[str] | None = None) -> int:
    """`python -m trainsizer.accept`: errors for bad input print one line and exit 2."""
    from trainsizer.cli_support import run_command

    return run_command(accept, argv, prog_name="trainsizer accept")


if __name__ == "__main__":
    sys.exit(main())
