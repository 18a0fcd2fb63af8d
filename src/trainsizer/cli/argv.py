"""Global options anywhere on the line: `trainsizer estimate job.yaml --lang zh` means `trainsizer --lang zh
estimate job.yaml`. Click only reads group options before the subcommand, so they are moved there."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Options of the `trainsizer` group that take a value; no subcommand defines an option of the same name.
GLOBAL_VALUE_OPTIONS = ("--lang", "--catalog")


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with every global option (and its value) moved to the front, order kept; `--` ends the
    options as usual, and a dangling option without a value is left for click to report."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_VALUE_OPTIONS and "=" in arg:
            front.append(arg)
        elif arg in GLOBAL_VALUE_OPTIONS and i + 1 < len(args):
            front.extend(args[i:i + 2])
            i += 1
        else:
            rest.append(arg)
        i += 1
    return front + rest


# Where each value flag lands in the job (spec.overrides, plan.core.apply_plan_overrides): an error about that field
# names the flag the value came from, not the job file it was merged into.
FLAG_PATHS = {
    **{k: f"hardware.{k}" for k in ("accelerator", "count", "per_node", "network")},
    **{k: f"strategy.{k}" for k in ("tp", "pp", "vpp", "dp", "cp", "ep", "etp", "zero", "fsdp", "micro_batch", "recompute",
                                    "recompute_method", "recompute_num_layers", "offload", "framework")},
    "max_nodes": "constraints.max_nodes", "max_gpus": "constraints.max_gpus", "deadline_days": "goal.deadline_days",
    "budget": "goal.budget.amount", "procurement": "goal.procurement",
}


@contextmanager
def flags_blamed(flags: dict[str, Any]) -> Iterator[None]:
    """Re-raise a job error about a field a flag set (`--zero 5`) at the flag: '--zero (strategy.zero): ...'."""
    from trainsizer.errors import SpecError
    from trainsizer.messages import Msg, msg

    try:
        yield
    except SpecError as err:
        where = err.where
        path = where.params.get("path") if isinstance(where, Msg) and where.key == "error_at" else str(where)
        for key, value in flags.items():
            if value is not None and FLAG_PATHS.get(key) == path:
                raise err.at(msg("error_at_flag", flag="--" + key.replace("_", "-"), path=path)) from None
        raise


def chosen_lang(args: list[str]) -> str:
    """The language of `--lang` in `args` (after hoisting), else the locale's; for messages printed before
    or outside the command (errors)."""
    from trainsizer.render.i18n import LANGS, default_lang

    for i, arg in enumerate(args):
        if arg == "--":
            break
        value = arg.split("=", 1)[1] if arg.startswith("--lang=") else (
            args[i + 1] if arg == "--lang" and i + 1 < len(args) else None)
        if value in LANGS:
            return value
    return default_lang()
