"""Errors a user can act on.

Every error trainsizer raises for bad input is a `TrainsizerError`: the CLI prints its message as one
paragraph (no traceback) and exits with status 2. Messages say what is wrong, where, and what is allowed.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from trainsizer.messages import Listing, Msg, Number, msg, tr
from trainsizer.messages import render as render_message

MAX_VALUE_CHARS = 80


class _Null:
    """A value the file gave as null (YAML `null` / `~`, JSON null): shown as "got null", where a SpecError's
    value None means that no value is shown."""

    def __repr__(self) -> str:
        return "null"


NULL = _Null()
LOCATION_SEP = ": "  # between a file name and the field inside it ("job.yaml: strategy.tp")


def located(where: str) -> str:
    """A location 'file: field' as the catalogue message `error_at`, so a Chinese sentence writes the full-width
    colon ('job.yaml：strategy.tp'); the English text is unchanged. A catalogue message, a field path alone or a
    'file:line' position stays as it is."""
    if not isinstance(where, str) or isinstance(where, Msg) or LOCATION_SEP not in where:
        return where
    origin, path = where.split(LOCATION_SEP, 1)
    return msg("error_at", origin=origin, path=path)


def shown_value(value: object) -> str:
    """A value as the user wrote it in a YAML or JSON file: true / false, null, 'text', [a, b], {key: value};
    never Python's spelling of them (True, None), which the user did not type. A number alone is written in the
    reader's numbers (messages.Number: 1万亿 / 1T, where Python wrote 1000000000000.0)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return Number(value)
    return _as_written(value)


def _as_written(value: object) -> str:
    if value is None or isinstance(value, _Null):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):  # inside a mapping or a list, as the file spells it: 8.5, inf, nan
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_as_written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(_as_written(v) for v in items) + "]"
    return str(value)


def given(value: object) -> object:
    """A value as the file gave it, for SpecError(value=...): a whole top level or section shown as written
    (cut at MAX_VALUE_CHARS), never its Python type name ('list', 'str'); null stays visible as null."""
    return NULL if value is None else value

class TrainsizerError(Exception):
    """Base class for errors caused by user input or environment, not by a bug."""

    exit_code = 2


class SpecError(TrainsizerError):
    """A value in a job, catalog or model file is wrong.

    `where` is a dotted field path (``strategy.tp``) optionally prefixed by the file name.
    """

    def __init__(
        self,
        where: str,
        problem: str,
        *,
        value: object = None,
        allowed: str | Iterable[str] | None = None,
        suggestion: str | None = None,
    ) -> None:
        self.where = located(where)
        self.problem = problem
        self._null = isinstance(value, _Null)  # given as null: shown, though `value` is None for scripts
        self.value = None if self._null else value
        # a list of allowed names may hold catalogue messages ("... (40 in all)"): kept to translate them
        self._allowed_items = None if allowed is None or isinstance(allowed, str) else list(allowed)
        if self._allowed_items is not None:
            allowed = Listing(self._allowed_items)
        self.allowed = allowed
        self.suggestion = suggestion
        super().__init__(self._render())

    def _render(self) -> str:
        return self.render("en")

    def at(self, where: str, problem: str | None = None) -> SpecError:
        """The same error at another place (a file name before the field), its allowed names still translatable."""
        items = self._allowed_items
        return SpecError(where, self.problem if problem is None else problem,
                         value=NULL if self._null else self.value,
                         allowed=self.allowed if items is None else items, suggestion=self.suggestion)

    def render(self, lang: str, *, located: bool = True) -> str:
        """The one-paragraph message in `lang` (the frame and any catalogue message are translated).
        `located=False`: without the field path in front, for a message shown beside its own input (the web
        form), where the path would repeat what the input's label says."""
        if located:
            out = _m("error_where", lang, where=tr(self.where, lang), problem=tr(self.problem, lang))
        else:
            problem = str(tr(self.problem, lang))
            out = problem[:1].upper() + problem[1:]
        if self.value is not None or self._null:
            shown = shown_value(NULL if self._null else self.value)
            if len(shown) > MAX_VALUE_CHARS:  # a 10 kB value in a one-paragraph error hides the message
                shown = _m("error_value_too_long", lang, shown=shown[:MAX_VALUE_CHARS], chars=len(shown))
            # a yes/no where a number or a name belongs reads as a slip of the pen in the user's words
            key = "error_got_bool" if isinstance(self.value, bool) else "error_got"
            out += _m(key, lang, value=shown)
        out += _m("error_end", lang)
        if self.suggestion:
            out += _m("error_suggestion", lang, suggestion=repr(self.suggestion))
        if self.allowed:
            out += _m("error_allowed", lang, allowed=tr(self.allowed, lang))
        return out


class StrategyError(TrainsizerError):
    """A parallel strategy breaks a rule (e.g. TP does not divide the attention heads)."""

    def __init__(self, rule: str, detail: str) -> None:
        self.rule = rule
        self.detail = detail
        super().__init__(self.render("en"))

    def render(self, lang: str) -> str:
        return _m("error_invalid_strategy", lang, rule=self.rule, detail=tr(self.detail, lang))


def render_error(err: TrainsizerError, lang: str) -> str:
    """`err` in `lang` when it knows how (SpecError, StrategyError); its English message otherwise."""
    render = getattr(err, "render", None)
    return render(lang) if callable(render) else str(err)


_ORIGIN = re.compile(r"^(job|form|upload|body):\s*")
_TAIL = re.compile(r"\s*\(.*\)$")
_INDEX = re.compile(r"\[\d+\]")


def field_of(where: str | None) -> str | None:
    """The job path inside a SpecError's `where`: 'job.yaml: constraints.include[0]' -> 'constraints.include';
    a flag's ('--zero (strategy.zero)') -> 'strategy.zero'."""
    if not where:
        return None
    if isinstance(where, Msg) and where.key in ("error_at", "error_at_flag"):
        where = str(where.params["path"])
    path = _INDEX.sub("", _TAIL.sub("", _ORIGIN.sub("", where)))
    path = path.split(":")[-1].strip()
    return path or None


# every field of an error for scripts, none set (the HTTP API's ErrorDetail has the same; tests check)
ERROR_FIELDS: dict[str, Any] = dict.fromkeys(("kind", "message", "field", "where", "value", "allowed", "suggestion",
                                              "rule"))


def error_fields(err: TrainsizerError, lang: str) -> dict[str, Any]:
    """`err` for scripts (`--json`, the HTTP API's `{"error": ...}`): `kind` (spec | strategy), `message` (the
    paragraph the CLI prints after "error: ", in `lang`) and its parts: `field` (job path), `where`, `value`,
    `allowed`, `suggestion`, `rule` (a strategy rule's id). The value as the file gave it (null for null)."""
    out = {**ERROR_FIELDS, "kind": "spec", "message": render_error(err, lang)}
    if isinstance(err, SpecError):
        out.update(field=field_of(err.where), where=str(err.where), value=err.value,
                   allowed=None if err.allowed is None else str(err.allowed), suggestion=err.suggestion)
    elif isinstance(err, StrategyError):
        out.update(kind="strategy", field="strategy", rule=err.rule)
    return out


def quoted(err: TrainsizerError) -> str:
    """`err` as a catalogue message (key and parameters) for a sentence that quotes it ("memory not checked:
    ..."), so the sentence reads in one language; an error without one stays its English text."""
    if isinstance(err, StrategyError):
        return msg("error_invalid_strategy", rule=err.rule, detail=err.detail)
    if isinstance(err, SpecError):
        if err.value is None and not err._null:
            return msg("error_where", where=err.where, problem=err.problem)
        shown = shown_value(NULL if err._null else err.value)
        shown = shown if len(shown) <= MAX_VALUE_CHARS else shown[:MAX_VALUE_CHARS] + "..."
        return msg("error_where_got", where=err.where, problem=err.problem, value=shown)
    return str(err)


def _m(key: str, lang: str, **params: object) -> str:
    return render_message(key, lang, params)


def did_you_mean(name: str, choices: Iterable[str]) -> str | None:
    """Closest known name to a misspelt one, or None."""
    matches = difflib.get_close_matches(str(name).lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not matches:
        return None
    lowered = {c.lower(): c for c in choices}
    return lowered[matches[0]]


# English kinds passed to unknown_name -> their catalogue key (other kinds print as given)
KIND_KEYS = {
    "accelerator": "kind_accelerator", "model preset": "kind_model_preset",
    "model preset (or path to a config.json)": "kind_model_preset_or_path",
    "model_type (model family)": "kind_model_type", "network": "kind_network", "switch": "kind_switch",
    "server": "kind_server", "storage tier": "kind_storage", "recompute mode": "kind_recompute",
    "training framework": "kind_framework", "training method": "kind_method", "precision": "kind_precision",
    "optimizer": "kind_optimizer", "LoRA target module": "kind_lora_target", "platform": "kind_platform",
    "offload mode": "kind_offload", "FP8 scaling recipe": "kind_fp8_recipe", "evaluate_batch part": "kind_batch_part",
    "loss implementation": "kind_loss_impl", "attention kernel": "kind_attention_kernel",
    "norm kernel": "kind_norm_kernel", "activation kernel": "kind_activation_kernel", "RoPE kernel": "kind_rope_kernel",
    "eager attention chain": "kind_eager_attention",
    "FSDP reshard point": "kind_fsdp_reshard",
    "optimizer precision": "kind_optimizer_precision",
    "experts implementation": "kind_experts_implementation",
    "checkpoint implementation": "kind_checkpoint_impl", "FSDP mode": "kind_fsdp_mode",
    "FSDP version": "kind_fsdp_version",
    "ZeRO-3 expert fetch": "kind_zero3_expert_fetch", "ZeRO-3 bucket sizes": "kind_zero3_bucket_sizes",
    "MoE routing pattern": "kind_moe_routing",
    "MoE router aux loss": "kind_moe_aux_loss",
    "facility figure": "kind_facility_figure", "reliability figure": "kind_reliability_figure",
    "accelerator, server or switch": "kind_price_subject", "price subject (accelerator, server or switch)":
    "kind_price_subject", "source id": "kind_source", "price point": "kind_price_point",
    "catalog kind": "kind_catalog_kind", "rule": "kind_rule",
}


def unknown_name(where: str, kind: str, name: str, choices: Iterable[str],
                 aliases: dict[str, str] | None = None, limit: int = 12,
                 describe: Callable[[str], object] | None = None) -> SpecError:
    """Error for a name not found among `choices`, with a suggestion. `aliases` (alias -> id) are accepted
    names that are not entries of their own: an ambiguous short name lists each entry once, each as `describe`
    words it when given (what tells the entries apart: "h100-sxm-80gb (80 GB, SXM / NVLink)")."""
    choices = sorted(choices)
    what = msg(KIND_KEYS[kind]) if kind in KIND_KEYS else kind

    def starting(prefix: str) -> list[str]:
        found = [c for c in choices if prefix and c.lower().startswith(prefix.lower())]
        return sorted({aliases.get(c, c) for c in found}) if aliases else found

    # A short name that starts several ids ("h100") is ambiguous rather than misspelt: name the candidates.
    starts = starting(str(name))
    if len(starts) > 1:
        if describe is not None:
            return SpecError(where, msg("error_ambiguous_described", kind=what,
                                        names=Listing([describe(s) for s in starts])), value=name)
        return SpecError(where, msg("error_ambiguous_name", kind=what, names=Listing(starts)), value=name)
    # One stray character at the end ("h100x"): the ids the rest starts, not the closest spelling ("h800").
    near = starting(str(name)[:-1]) if not starts and len(str(name)) > 3 else []
    near = [c for c in near if c.lower() == str(name)[:-1].lower()] or near  # "b2000": b200 itself
    if len(near) > 1:
        return SpecError(where, msg("error_unknown_name_near", kind=what, prefix=str(name)[:-1],
                                    names=Listing(near)), value=name)
    shown = choices if len(choices) <= limit else [*choices[:limit], msg("error_more_choices", n=len(choices))]
    return SpecError(
        where,
        msg("error_unknown_name", kind=what),
        value=name,
        allowed=shown,
        suggestion=starts[0] if starts else did_you_mean(name, choices) or (near[0] if near else None),
    )
