"""`trainsizer accept`: check delivered hardware against the plan, check by check."""

from __future__ import annotations

import datetime as dt
import os
import socket
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
from rich.cells import cell_len

from trainsizer.accept import criteria as criteria_mod
from trainsizer.accept import fleet, report, runner, slurm, store
from trainsizer.accept.context import Context, Options
from trainsizer.accept.results import RunResult, load, save, write_atomic
from trainsizer.accept.telemetry import open_telemetry
from trainsizer.accept.units import parse_duration_s, parse_size_bytes
from trainsizer.cli_support import HelpCommand
from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.messages import render as render_message


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
        raise SpecError(option, msg("cli_cannot_write_there", reason=str(err.strerror or err)), value=str(path),
                        allowed=msg("acc_allowed_writable")) from None
    if path.is_dir():
        raise SpecError(option, msg("acc_is_folder"), value=str(path), allowed=msg("acc_allowed_file"))


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
            raise SpecError("--merge", msg("acc_no_such_path"), value=str(p))
    if not files:
        raise SpecError("--merge", msg("acc_no_results"), value=", ".join(paths))
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
        write_atomic(html, report.to_html(result, _lang()))
    _show(result, as_json, quiet)
    if out and not as_json and not quiet:
        click.echo(render_message("accept_results_at", _lang(), {"path": out}))


def _lang() -> str:
    """`trainsizer --lang` when accept runs under the trainsizer command, else English."""
    ctx = click.get_current_context(silent=True)
    lang = getattr(ctx.find_root().obj, "lang", None) if ctx is not None else None
    return lang if lang in ("en", "zh") else "en"


def results_dir() -> Path:
    """Where result files go by default: $TRAINSIZER_RESULTS_DIR, else ~/.local/share/trainsizer/results
    (beside the history database) -- never the current folder, which is often a source tree."""
    env = os.environ.get("TRAINSIZER_RESULTS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".local/share/trainsizer/results"


def _show(result: RunResult, as_json: bool, quiet: bool) -> None:
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not quiet:
        report.print_table(result, lang=_lang())


# Options every node's `trainsizer accept` step gets under --slurm, in this order. Their flags and values come
# from the command's own parameters (`forwarded_args`); paths are made absolute, since the job runs elsewhere.
FORWARDED = ("plan_path", "platform", "telemetry", "storage_size", "checkpoint_size", "gemm_size", "thermal",
             "burn_in", "sample_interval", "dcgm_level", "storage_path", "dataset_path", "collective_max_size")
_ABSOLUTE = ("plan_path", "storage_path", "dataset_path")


def forwarded_args(command: click.Command, values: Mapping[str, Any]) -> list[str]:
    """The `FORWARDED` options as command-line arguments (`--flag value`), unset ones left out."""
    flags = {p.name: p.opts[0] for p in command.params if isinstance(p, click.Option)}
    out: list[str] = []
    for name in FORWARDED:
        value = values.get(name)
        if value is None or value == "":
            continue
        out += [flags[name], str(Path(value).resolve() if name in _ABSOLUTE else value)]
    return out


def _options(p: SimpleNamespace) -> Options:
    """Probe settings of a local run (also what a Slurm job's nodes will use)."""
    cuda, ngpu = _torch_cuda()
    backend = ("nccl" if cuda else "gloo") if p.backend == "auto" else p.backend
    return Options(
        nproc=p.nproc or (ngpu if backend == "nccl" and ngpu else 2), backend=backend, nnodes=p.nnodes,
        rdzv_endpoint=p.rdzv_endpoint, rdzv_id=p.rdzv_id,
        collective_max_bytes=parse_size_bytes(p.collective_max_size, "--collective-max-size")
        if p.collective_max_size else (2**30 if backend == "nccl" else 4 * 2**20),
        storage_path=Path(p.storage_path) if p.storage_path else None,
        dataset_path=Path(p.dataset_path) if p.dataset_path else None,
        storage_size_bytes=parse_size_bytes(p.storage_size, "--storage-size"),
        checkpoint_size_bytes=parse_size_bytes(p.checkpoint_size, "--checkpoint-size"),
        gemm_size=p.gemm_size, thermal_s=parse_duration_s(p.thermal, "--thermal"),
        burnin_s=parse_duration_s(p.burn_in, "--burn-in"),
        sample_interval_s=parse_duration_s(p.sample_interval, "--sample-interval"), dcgm_level=p.dcgm_level,
    )


def _merge(click_ctx: click.Context, p: SimpleNamespace, out_path: Path, html_path: Path | None) -> None:
    """--merge: join result files (nodes, collectives, isolation) into one verdict; no checks run."""
    results = [load(f) for f in _merge_inputs(p.merge_paths)]
    crit = criteria_mod.resolve(p.plan_path, p.platform, None)
    merged = fleet.merge(results, crit)
    _finish(merged, out_path, html_path, p.history, p.no_history, p.as_json, p.quiet)
    click_ctx.exit(1 if merged.verdict == "fail" else 0)


def _slurm(click_ctx: click.Context, p: SimpleNamespace, groups: list[str], opts: Options) -> None:
    """--slurm: write (and submit) an sbatch script running the checks on every node, then merging them."""
    node_groups = [g for g in groups if g != "collectives"]
    job = slurm.SlurmJob(
        nodes=p.nodes, out_dir=Path(p.slurm_dir), accept_args=forwarded_args(click_ctx.command, vars(p)),
        nproc=opts.nproc, backend=opts.backend, time_limit=p.time_limit, partition=p.partition,
        gpus_per_node=p.gpus_per_node, exclusive=not p.no_exclusive,
        history=None if p.no_history else str(Path(p.history).resolve() if p.history else store.default_path()),
        node_only=",".join(node_groups) if node_groups else None, collectives="collectives" in groups,
    )
    path = slurm.write(job)
    if p.dry_run:
        click.echo(render_message("accept_slurm_written", _lang(), {"path": path}))
        return
    job_id = slurm.submit(path)
    click.echo(render_message("accept_slurm_submitted", _lang(), {"job": job_id, "path": path}), err=True)
    if not p.wait:
        click.echo(job_id)
        return
    state = slurm.wait(job_id, parse_duration_s(p.wait_timeout, "--wait-timeout"))
    final = job.out_dir / "results.json"
    if not final.exists():
        raise slurm.SlurmError(f"job {job_id} ended ({state}) without {final}; see {job.out_dir}/slurm-{job_id}.out")
    result = load(final)
    _show(result, p.as_json, p.quiet)
    click_ctx.exit(1 if result.verdict == "fail" else 0)


def _local(click_ctx: click.Context, p: SimpleNamespace, groups: list[str], opts: Options, out_path: Path,
           html_path: Path | None) -> None:
    """Run the checks on this machine (one node; collectives across nodes through torchrun's rendezvous)."""
    tel, why = open_telemetry(p.telemetry)
    gpu_name = None
    if tel is not None:
        gpus = tel.gpus()
        gpu_name = gpus[0].name if gpus else None
    crit = criteria_mod.resolve(p.plan_path, p.platform, gpu_name)
    ctx = Context(criteria=crit, telemetry=tel, telemetry_why=why, options=opts)

    def progress(checks) -> None:
        if not p.quiet and not p.as_json:
            for c in checks:
                status = render_message(f"accept_status_{c.status}", _lang(), {})
                # padded by display width: a Chinese status is two cells a character ("未通过" is 6, not 3)
                pad = " " * max(0, 7 - cell_len(status))
                click.echo(f"  {status}{pad} {c.name}: {report.why_text(c, _lang())}", err=True)

    result = runner.run_checks(ctx, groups, out_path, on_check=progress)
    _finish(result, out_path, html_path, p.history, p.no_history, p.as_json, p.quiet)
    click_ctx.exit(1 if result.verdict == "fail" else 0)


# --help of the command and every option: data/cli_help.yaml `accept` (en + zh, cli_support.HelpCommand)
@click.command("accept", cls=HelpCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False))
@click.option("--platform")
@click.option("--telemetry", default="auto", show_default=True)
@click.option("--only", multiple=True)
@click.option("--skip", multiple=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--out")
@click.option("--results-dir", "results")
@click.option("--html")
@click.option("--history")
@click.option("--no-history", is_flag=True)
@click.option("--quiet", is_flag=True)
@click.option("--nproc", type=click.IntRange(1))
@click.option("--backend", type=click.Choice(["auto", "gloo", "nccl"]), default="auto", show_default=True)
@click.option("--nnodes", type=click.IntRange(1), default=1, show_default=True)
@click.option("--rdzv-endpoint")
@click.option("--rdzv-id", default="trainsizer-accept", show_default=True)
@click.option("--collective-max-size")
@click.option("--storage-path", type=click.Path(file_okay=False))
@click.option("--dataset-path", type=click.Path())
@click.option("--storage-size", default="256MiB", show_default=True)
@click.option("--checkpoint-size", default="256MiB", show_default=True)
@click.option("--gemm-size", type=click.IntRange(64), default=8192, show_default=True)
@click.option("--thermal", "thermal", default="1m", show_default=True)
@click.option("--burn-in", "burn_in", default="2m", show_default=True)
@click.option("--sample-interval", default="1s", show_default=True)
@click.option("--dcgm-level", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option("--merge", "merge_paths", multiple=True)
@click.option("--slurm", "use_slurm", is_flag=True)
@click.option("--dry-run", is_flag=True)
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True)
@click.option("--partition")
@click.option("--time-limit", default="02:00:00", show_default=True)
@click.option("--gpus-per-node", type=click.IntRange(0))
@click.option("--slurm-dir", default="accept-slurm", show_default=True)
@click.option("--no-exclusive", is_flag=True)
@click.option("--wait/--no-wait", default=False)
@click.option("--wait-timeout", default="3h", show_default=True)
@click.pass_context
def accept(click_ctx: click.Context, **params: Any) -> None:
    p = SimpleNamespace(**params)
    groups = runner.select(p.only, p.skip)
    folder = Path(p.results).expanduser() if p.results else results_dir()
    out_path = _path(p.out) or folder / f"accept-{_host()}-{dt.datetime.now():%Y%m%dT%H%M%S}.json"
    html_path = _path(p.html)
    if p.nnodes > 1 and not p.rdzv_endpoint:
        raise SpecError("--rdzv-endpoint", msg("acc_rdzv_needed"))
    if p.dry_run and not p.use_slurm:
        raise SpecError("--dry-run", msg("acc_dry_run_slurm"))
    if not p.use_slurm:
        _writable(out_path, "--out")
        _writable(html_path, "--html")
    if p.merge_paths:
        _merge(click_ctx, p, out_path, html_path)
    opts = _options(p)
    if p.use_slurm:
        _slurm(click_ctx, p, groups, opts)
    else:
        _local(click_ctx, p, groups, opts, out_path, html_path)


def main(argv: list[str] | None = None) -> int:
    """`python -m trainsizer.accept`: errors for bad input print one line and exit 2."""
    from trainsizer.cli_support import run_command, wants_json

    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(accept, args, prog_name="trainsizer accept", as_json=wants_json(args))


if __name__ == "__main__":
    sys.exit(main())
