"""The job form: its fields, defaults and choices, and the form's values -> a job mapping.

Inputs are named by their path in the job file (`data.tokens`, `constraints.max_nodes`), so an error's
field names the input it belongs to. Values stay text: the job's own pydantic models convert and check
them, giving the same messages as a YAML file with the same values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, get_args

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.names import FRAMEWORKS, LORA_LINEAR_TARGETS
from trainsizer.spec.job import (
    Cooling,
    Currency,
    Goal,
    Method,
    Optimizer,
    Precision,
    Procurement,
)
from trainsizer.web.i18n import text_languages

FormValues = dict[str, str | list[str]]

# A sensible first job: a LoRA fine-tune of an 8B model, which most people start with.
DEFAULTS: dict[str, str] = {
    "model": "llama-3.1-8b", "method": "lora", "lora.rank": "16", "lora.targets": ",".join(LORA_LINEAR_TARGETS[:4]), "data_kind": "tokens",
    "data.tokens": "1e9", "text_language": "en", "data.epochs": "1", "seq_len": "4096",
    "batch_kind": "sequences", "batch_value": "64", "precision": "bf16", "optimizer": "adamw", "strategy.framework": "auto",
    "goal.deadline_days": "7", "goal.budget.currency": "", "goal.procurement": "rent", "goal.objective": "",
    "constraints.market": "global", "constraints.cooling": "",
}
CHOICES: dict[str, tuple[str, ...]] = {
    "method": get_args(Method),
    "precision": get_args(Precision),
    "optimizer": get_args(Optimizer),
    # the training stack: "auto" picks one per layout and says so; naming one keeps the plan to layouts it runs
    # (estimate.validate: no pipeline parallelism under hf / torchtune / fsdp)
    "strategy.framework": FRAMEWORKS,
    # "": the market's currency (spec.Job._one_currency: CNY for the China markets, else USD), as a job file without one
    "goal.budget.currency": ("", *get_args(Currency)),
    "goal.procurement": get_args(Procurement),
    "goal.objective": ("", *(a for a in get_args(get_args(Goal.model_fields["objective"].annotation)[0]))),
    "constraints.market": ("global", "china", "china-domestic"),
    "constraints.cooling": ("", *get_args(Cooling)),
    "lora.targets": (",".join(LORA_LINEAR_TARGETS[:4]), "all-linear"),
    "data_kind": ("tokens", "dataset_gb", "samples"),
    "batch_kind": ("sequences", "tokens"),
    "packing": ("false", "true"),
    "text_language": tuple(text_languages()),
}
MULTI = ("constraints.include", "constraints.exclude")
# Job paths an error can name -> the input that shows it.
ERROR_INPUT = {"global_batch": "batch_value", "global_batch.sequences": "batch_value",
               "global_batch.tokens": "batch_value", "lora": "lora.rank", "data": "data_kind",
               "goal.budget": "goal.budget.amount", "goal": "goal.deadline_days", "constraints": "constraints.include"}


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _scalar(text: str) -> str | int | float:
    """A number typed in a text box as the number it is (as YAML reads it), so messages quote the same
    value as for a job file; anything else stays text for the job's models to judge."""
    if not _NUMBER.match(text):
        return text
    number = float(text)
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def _text(values: Mapping[str, Any], key: str) -> str:
    v = values.get(key, "")
    return (v[0] if v else "") if isinstance(v, list) else str(v).strip()


def _put(out: dict[str, Any], path: str, value: Any) -> None:
    if isinstance(value, str) and path not in ("name", "model"):
        value = _scalar(value)
    *parents, leaf = path.split(".")
    node = out
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value


def _data(values: Mapping[str, Any], out: dict[str, Any]) -> None:
    kind = _text(values, "data_kind") or "tokens"
    if kind not in CHOICES["data_kind"]:
        raise SpecError("form: data_kind", msg("spec_not_allowed"), value=kind, allowed=CHOICES["data_kind"])
    keys = {"tokens": ("data.tokens",), "dataset_gb": ("data.dataset_gb", "data.bytes_per_token"),
            "samples": ("data.samples", "data.avg_tokens", "data.length_sigma", "data.max_tokens")}[kind]
    for key in (*keys, "data.epochs"):
        if _text(values, key):
            _put(out, key, _text(values, key))
    packing = _text(values, "packing") or "false"
    if kind == "samples" and packing not in CHOICES["packing"]:
        raise SpecError("form: packing", msg("spec_not_allowed"), value=packing, allowed=CHOICES["packing"])
    if kind == "samples" and packing == "true":
        out["packing"] = True
    if kind == "dataset_gb" and not _text(values, "data.bytes_per_token"):
        lang = _text(values, "text_language") or "en"
        if lang not in text_languages():
            raise SpecError("form: text_language", msg("spec_not_allowed"), value=lang, allowed=list(text_languages()))
        _put(out, "data.bytes_per_token", text_languages()[lang]["bytes_per_token"])
    out.setdefault("data", {})


def job_from_form(values: Mapping[str, Any], config_json: bytes | None) -> dict[str, Any]:
    """The job mapping the form describes (not yet validated: `validate_job` does that).

    `config_json` is the uploaded config.json, parsed as JSON data and used as the model."""
    out: dict[str, Any] = {}
    for key in ("name", "model", "method", "seq_len", "precision", "optimizer", "goal.deadline_days",
                "goal.procurement", "goal.objective", "constraints.market", "constraints.max_nodes",
                "constraints.rack_kw", "constraints.cooling"):
        if _text(values, key):
            _put(out, key, _text(values, key))
    from trainsizer.web.jobinput import parse_json_object

    if config_json:  # an uploaded config.json: parsed as data, never opened as a path
        out["model"] = parse_json_object(config_json, "model_config", max_bytes=len(config_json))
    elif pasted_config(values):  # a config.json pasted into the model box: no preset name starts with "{"
        raw = _text(values, "model").encode()
        out["model"] = parse_json_object(raw, "model", max_bytes=len(raw))
    elif _text(values, "model_json") and not _text(values, "model"):  # a config carried over from an edit
        raw = _text(values, "model_json").encode()
        out["model"] = parse_json_object(raw, "model_config", max_bytes=len(raw))
    if _text(values, "method") in ("lora", "qlora"):
        if _text(values, "lora.rank"):
            _put(out, "lora.rank", _text(values, "lora.rank"))
        if _text(values, "lora.targets"):
            _put(out, "lora.targets", [t.strip() for t in _text(values, "lora.targets").split(",") if t.strip()])
    _data(values, out)
    framework = _text(values, "strategy.framework") or "auto"
    if framework not in CHOICES["strategy.framework"]:
        raise SpecError("form: strategy.framework", msg("spec_not_allowed"), value=framework,
                        allowed=CHOICES["strategy.framework"])
    if framework != "auto":  # a strategy that names the stack only: the plan still searches every layout it runs
        _put(out, "strategy.framework", framework)
    batch_kind = _text(values, "batch_kind") or "sequences"
    if batch_kind not in CHOICES["batch_kind"]:
        raise SpecError("form: batch_kind", msg("spec_not_allowed"), value=batch_kind, allowed=CHOICES["batch_kind"])
    out["global_batch"] = {}
    if _text(values, "batch_value"):
        _put(out, f"global_batch.{batch_kind}", _text(values, "batch_value"))
    currency = _text(values, "goal.budget.currency")  # "": the market's
    if currency and currency not in CHOICES["goal.budget.currency"]:
        raise SpecError("form: goal.budget.currency", msg("spec_not_allowed"), value=currency,
                        allowed=[c for c in CHOICES["goal.budget.currency"] if c])
    if _text(values, "goal.budget.amount"):
        amount = _scalar(_text(values, "goal.budget.amount"))  # a number, as every other box's (messages quote it so)
        _put(out, "goal.budget", {"amount": amount, **({"currency": currency} if currency else {})})
    if currency:
        _put(out, "constraints.currency", currency)  # prices in the budget's currency even without a budget
    for key in MULTI:
        chosen = [v for v in _list(values, key) if v]
        if chosen:
            _put(out, key, chosen)
    return out


def pasted_config(values: Mapping[str, Any]) -> bool:
    return _text(values, "model").startswith("{")


def config_kept(values: Mapping[str, Any], config_json: bytes | None) -> dict[str, Any]:
    """The form's values to show again after an error, an uploaded config.json among them as the hidden
    `model_json` (a browser never refills a file input, so the upload would otherwise be lost). An upload
    that is not a JSON object is not kept: its own message says why."""
    from trainsizer.web.jobinput import parse_json_object

    if not config_json:
        return dict(values)
    try:
        config = parse_json_object(config_json, "model_config", max_bytes=len(config_json))
    except SpecError:
        return dict(values)
    return {**values, "model": "", "model_json": json.dumps(config, sort_keys=True)}  # the upload replaced the preset


def config_input(values: Mapping[str, Any]) -> str:
    """The input a problem inside the model's config belongs to: the upload (or the one kept from before),
    else the model box it was pasted into."""
    return "model_config" if _text(values, "model_json") and not _text(values, "model") else "model"


def _list(values: Mapping[str, Any], key: str) -> list[str]:
    v = values.get(key, [])
    return [str(x) for x in v] if isinstance(v, list) else ([str(v)] if v else [])


def form_from_job(job: Mapping[str, Any]) -> FormValues:
    """Form values that describe `job` (to edit a job again from its link); the inverse of job_from_form."""
    values: FormValues = {}

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for k, v in node.items():
            key = f"{prefix}{k}"
            if isinstance(v, Mapping) and key != "model":
                walk(v, key + ".")
            elif key == "lora.targets":
                values[key] = "all-linear" if tuple(v) == LORA_LINEAR_TARGETS else ",".join(v)
            elif isinstance(v, list | tuple):
                values[key] = [str(x) for x in v]
            elif v is not None:
                values[key] = str(v)

    walk(job, "")
    if isinstance(job.get("model"), Mapping):
        values["model"] = ""
        values["model_json"] = json.dumps(job["model"], sort_keys=True)
    data = job.get("data", {}) if isinstance(job.get("data"), Mapping) else {}
    values["data_kind"] = next((k for k in ("tokens", "dataset_gb", "samples") if k in data), "tokens")
    values["packing"] = "true" if job.get("packing") is True else "false"
    constraints = job.get("constraints") if isinstance(job.get("constraints"), Mapping) else {}
    values.setdefault("goal.budget.currency", str(constraints.get("currency", "")))  # "": the market's
    batch = job.get("global_batch", {}) if isinstance(job.get("global_batch"), Mapping) else {}
    kind = "tokens" if "tokens" in batch else "sequences"
    values["batch_kind"], values["batch_value"] = kind, str(batch.get(kind, ""))
    return values


def error_input(field: str | None) -> str | None:
    """The form input an error about job path `field` belongs to."""
    if not field:
        return None
    return ERROR_INPUT.get(field, field)
