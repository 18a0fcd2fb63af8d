"""Read the built-in catalog YAML files and user overlays into validated records.

File shape (built-in files and overlays alike): a mapping of section name -> {entry id -> record}. An overlay
may also carry `date` (as-of date of its figures) and `title`. An overlay entry whose id exists changes only
the fields it gives (nested mappings such as `tflops_dense` are merged key by key); the changed fields record
the overlay (registered as source ``overlay_<file stem>``) plus any `sources` the entry lists in
`field_sources`, and the record's `date` becomes the entry's or the overlay's date (else the file's mtime).
Changing `low`/`high` of a price or figure without giving `typical` clears the old `typical`. A new id adds
an entry (sources: the entry's own plus the overlay; confidence defaults to 'medium').
Every problem becomes a SpecError naming the file, the entry, the field, the value and what is allowed.
"""

from __future__ import annotations

import copy
import datetime as _dt
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from trainsizer.catalog import records as r
from trainsizer.errors import SpecError, did_you_mean, given
from trainsizer.messages import Msg, msg

DATA_DIR = Path(__file__).parent / "data"

SECTIONS: dict[str, type[BaseModel]] = {
    "sources": r.Source,
    "vendors": r.Vendor,
    "accelerators": r.Accelerator,
    "servers": r.Server,
    "networks": r.Network,
    "switches": r.Switch,
    "storage_tiers": r.StorageTier,
    "pcie_generations": r.PcieGeneration,
    "prices": r.PriceRange,
    "price_points": r.PricePoint,
    "facility": r.Figure,
    "reliability_figures": r.Figure,
    "reliability_datasets": r.ReliabilityDataset,
    "reliability_formulas": r.Formula,
    "collectives": r.CollectiveMeasurement,
    "network_formulas": r.Formula,
    "parts": r.Part,
    "scale_platforms": r.ScalePlatform,
}
# Documented cluster sizes per platform: kept beside the catalog data (its own file and header), read into the
# `scale_platforms` section, so an overlay extends or changes it like any other section.
EVIDENCE_FILE = Path(__file__).parent / "evidence" / "scale.yaml"
META_KEYS = ("schema_version", "date", "title", "note")
_SPAN_SECTIONS = ("prices", "price_points", "facility", "reliability_figures")
# Fields the loader manages itself; an overlay entry may give `sources` (its evidence) but not these.
_MANAGED = ("id", "field_sources")


@dataclass
class RawEntry:
    data: dict[str, Any]
    file: str  # file that created the entry
    field_files: dict[str, str] = field(default_factory=dict)  # top-level field -> file that last set it
    last_file: str = ""  # file that last touched the entry (for whole-record errors)


def _normalise(value: Any) -> Any:
    """YAML dates -> ISO strings, recursively (so `date: 2025-06-01` works unquoted)."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def _read_yaml(path: Path) -> dict[str, Any]:
    name = str(path)
    if not path.is_file():
        raise SpecError(name, msg("cat_file_not_found"), value=str(path), allowed=msg("cat_allowed_yaml_file"))
    # the job files' reader: UTF-8 only, duplicate keys refused with their line, nesting bounded, C parser
    from trainsizer.spec.load import parse_text, read_text

    data = parse_text(read_text(path), name, as_json=False)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(name, msg("cat_top_not_mapping"), value=given(data),
                        allowed=list(SECTIONS))
    return _normalise(data)


def _check_sections(name: str, data: dict[str, Any]) -> None:
    for key, body in data.items():
        if key in META_KEYS:
            continue
        if key not in SECTIONS:
            raise SpecError(name, msg("cat_unknown_section"), value=key, allowed=[*SECTIONS, *META_KEYS],
                            suggestion=did_you_mean(str(key), SECTIONS))
        if not isinstance(body, dict):
            raise SpecError(f"{name}: {key}", msg("cat_section_not_mapping"),
                            value=given(body), allowed=msg("cat_allowed_mapping"))
        for entry_id, rec in body.items():
            if not isinstance(entry_id, str):
                raise SpecError(f"{name}: {key}", msg("cat_id_not_text"), value=entry_id,
                                allowed=msg("cat_allowed_id"))
            if not isinstance(rec, dict):
                raise SpecError(f"{name}: {key}.{entry_id}", msg("cat_entry_not_mapping"),
                                value=rec, allowed=msg("cat_allowed_mapping"))
            for managed in _MANAGED:
                if managed in rec:
                    raise SpecError(f"{name}: {key}.{entry_id}.{managed}", msg("cat_managed_field"),
                                    value=rec[managed], allowed=msg("cat_allowed_leave_out"))


def read_builtin(data_dir: Path = DATA_DIR) -> dict[str, dict[str, RawEntry]]:
    """The built-in files as raw entries (parsed once per process; callers get a private copy)."""
    return copy.deepcopy(_read_builtin_cached(Path(data_dir)))


@functools.lru_cache(maxsize=4)
def _read_builtin_cached(data_dir: Path) -> dict[str, dict[str, RawEntry]]:
    raw: dict[str, dict[str, RawEntry]] = {s: {} for s in SECTIONS}
    for path in sorted(data_dir.glob("*.yaml")):
        data = _read_yaml(path)
        name = path.name
        _check_sections(name, data)
        for section, body in data.items():
            if section in META_KEYS:
                continue
            for entry_id, rec in body.items():
                if entry_id in raw[section]:
                    raise SpecError(f"{name}: {section}.{entry_id}", msg("cat_duplicate_id"),
                                    value=entry_id, allowed=msg("cat_allowed_unique", folder=str(data_dir)))
                raw[section][entry_id] = RawEntry(dict(rec), name, {k: name for k in rec})
    _read_scale_evidence(raw)
    return raw


def _read_scale_evidence(raw: dict[str, dict[str, RawEntry]]) -> None:
    """evidence/scale.yaml's platforms as `scale_platforms` entries: a platform's sources are those of its
    evidence, its date the file's."""
    data = _read_yaml(EVIDENCE_FILE)
    name = "evidence/scale.yaml"
    for pid, rec in data["platforms"].items():
        rec = dict(rec)
        docs = [rec.get("demonstrated"), rec.get("designed"), *(rec.get("also") or ()), *(rec.get("software") or ())]
        rec["sources"] = sorted({s for e in docs if e for s in e.get("sources", ())})
        rec.setdefault("date", str(data["date"]))
        raw["scale_platforms"][pid] = RawEntry(rec, name, {k: name for k in rec})


def overlay_source_id(path: Path) -> str:
    return "overlay_" + (re.sub(r"[^a-z0-9]+", "_", path.stem.lower()).strip("_") or "file")


def _deep_merge(base: dict[str, Any], new: dict[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """Merge `new` into a copy of `base`; return it and the dotted paths of the leaves `new` set."""
    out = dict(base)
    changed: list[str] = []
    for key, value in new.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "alt_values":
            out[key], sub = _deep_merge(out[key], value, f"{path}.")
            changed.extend(sub)
        else:
            out[key] = value
            changed.append(path)
    return out, changed


def apply_overlay(raw: dict[str, dict[str, RawEntry]], path: Path) -> None:
    """Add / override entries from one overlay file (in place)."""
    path = Path(path)
    data = _read_yaml(path)
    name = str(path)
    _check_sections(name, data)
    src_id = overlay_source_id(path)
    default_date = data.get("date")
    if default_date is None:
        default_date = _dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
    default_date = str(default_date)
    if not re.match(r.DATE_PATTERN, default_date):
        raise SpecError(f"{name}: date", msg("cat_bad_date"), value=default_date, allowed=msg("cat_allowed_date"))
    if src_id not in raw["sources"]:
        title = data.get("title") or str(msg("cat_overlay_title", file=path.name))
        raw["sources"][src_id] = RawEntry(
            {"title": str(title), "url": path.resolve().as_uri(), "date": default_date,
             "retrieved": _dt.date.today().isoformat(), "note": f"overlay file {path}"},
            name,
        )
    for section, body in data.items():
        if section in META_KEYS:
            continue
        for entry_id, rec in body.items():
            rec = dict(rec)
            if section == "sources":
                existing = raw[section].get(entry_id)
                merged = {**existing.data, **rec} if existing else rec
                raw[section][entry_id] = RawEntry(merged, name, {k: name for k in merged})
                continue
            user_sources = rec.pop("sources", None)
            if user_sources is not None and not isinstance(user_sources, list):
                raise SpecError(f"{name}: {section}.{entry_id}.sources", msg("cat_sources_not_list"),
                                value=user_sources, allowed="[source_id, ...]")
            user_sources = [str(s) for s in (user_sources or [])]
            existing = raw[section].get(entry_id)
            if existing is None:
                rec.setdefault("date", default_date)
                rec.setdefault("confidence", "medium")
                _documentation_defaults(section, entry_id, rec)
                rec["sources"] = [*user_sources, src_id]
                raw[section][entry_id] = RawEntry(rec, name, {k: name for k in rec})
                continue
            date = rec.pop("date", default_date)
            if section == "scale_platforms" and isinstance(rec.get("members"), list):
                # accelerators join a platform: its catalog members stay
                rec["members"] = list(dict.fromkeys([*existing.data.get("members", ()), *rec["members"]]))
            if section in _SPAN_SECTIONS and ("low" in rec or "high" in rec) and "typical" not in rec:
                rec["typical"] = None  # the old central value belongs to the old range and source
            if section == "accelerators" and "memory_driver" not in rec and \
                    any(k in rec for k in ("memory_gb", "memory_usable_gb", "memory_label_unit")):
                rec["memory_driver"] = None  # the driver reading belongs to the old memory: the new label is used
            base = existing.data
            if section == "accelerators" and isinstance(rec.get("memory_driver"), dict):
                base = {**base, "memory_driver": None}  # a new reading replaces the old one whole
            if section == "accelerators" and isinstance(rec.get("l2_cache"), dict):
                base = {**base, "l2_cache": None}  # a new L2 entry replaces the old one whole, with its own sources
            if section == "accelerators" and isinstance(rec.get("sm_occupancy"), dict):
                base = {**base, "sm_occupancy": None}  # likewise a new occupancy entry, with its own sources
            merged, changed = _deep_merge(base, rec)
            field_sources = dict(merged.get("field_sources", {}))
            for leaf in changed:
                field_sources[leaf] = [src_id, *user_sources]
            merged["field_sources"] = field_sources
            merged["sources"] = list(dict.fromkeys([*merged.get("sources", []), src_id, *user_sources]))
            merged["date"] = date
            field_files = dict(existing.field_files)
            for key in [*rec, "date", "sources"]:
                field_files[key] = name
            raw[section][entry_id] = RawEntry(merged, existing.file, field_files, name)


# Fields of a new accelerator that no estimate reads (name, architecture, form factor, launch year, memory type,
# how memory_gib was derived, vendor, ECC, China export status, PCIe generation when pcie_gb_s is given; NVLS
# on a card without NVLink): an overlay may leave them out. Every figure an estimate reads (memory, bandwidths,
# TFLOPS, scale-up, PCIe link, TDP) must still be given. Unknown stays unknown (None) where the record allows it:
# no ECC figure is reported by `trainsizer build` as a risk to check, no export status excludes nothing.
NOT_GIVEN = "not given"  # the value of a descriptive field an overlay left out (catalog show translates it)
AS_GIVEN = "as given in the overlay"


def _doc_defaults(entry_id: str, rec: dict[str, Any]) -> dict[str, Any]:
    year = str(rec.get("date", ""))[:4]
    out = {"name": entry_id, "arch": NOT_GIVEN, "form_factor": NOT_GIVEN, "memory_type": NOT_GIVEN,
           "launch_year": int(year) if year.isdigit() else _dt.date.today().year,
           "memory_gib_basis": AS_GIVEN, "vendor": NOT_GIVEN, "ecc": None,
           "china_export_restricted": None}
    if rec.get("scaleup_tech") not in (None, "nvlink"):
        out["nvls"] = False  # NVLink SHARP exists only in NVLink switches
    return out


def _documentation_defaults(section: str, entry_id: str, rec: dict[str, Any]) -> None:
    if section != "accelerators":
        return
    filled = []
    for key, value in _doc_defaults(entry_id, rec).items():
        if key not in rec:
            rec[key] = value
            filled.append(key)
    if filled:
        rec["unsure"] = [*rec.get("unsure", []), str(msg("cat_defaulted", fields=", ".join(filled)))]


# --------------------------------------------------------------------------------------------- validation
def _allowed(err: dict[str, Any], model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    ctx = err.get("ctx") or {}
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        target = _submodel(model, loc[:-1])
        return ", ".join(f for f in target.model_fields if f not in _MANAGED) if target else msg("cat_known_fields")
    if "expected" in ctx:
        return str(ctx["expected"])
    bounds = [f"{op} {ctx[k]}" for k, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")) if k in ctx]
    if bounds:
        return msg("cat_allowed_number_bounds", bounds=" & ".join(bounds))
    if "pattern" in ctx:
        if ctx["pattern"] == r.DATE_PATTERN:
            return msg("cat_allowed_date")
        if ctx["pattern"] == r.ID_PATTERN:
            return msg("cat_allowed_id_pattern")
        return msg("cat_allowed_pattern", pattern=ctx["pattern"])
    simple = next((key for prefixes, key in _ALLOWED_BY_TYPE if kind.startswith(prefixes)), None)
    if simple:
        return msg(simple)
    error = ctx.get("error")
    reason = error.args[0] if isinstance(error, ValueError) and error.args else error
    if kind == "value_error" and isinstance(reason, Msg) and "allowed" in reason.params:
        return reason.params["allowed"]  # a record validator's own message names what is allowed
    if kind == "value_error" and "allowed: " in err.get("msg", ""):
        return err["msg"].split("allowed: ", 1)[1]
    if kind == "value_error":
        return msg("cat_allowed_low_typical_high") if "low" in err.get("msg", "") else msg("cat_allowed_consistent")
    return msg("cat_allowed_see_docs")


# pydantic error types (by prefix) -> what is allowed, as a catalogue message
_ALLOWED_BY_TYPE = (
    (("float", "int", "decimal"), "cat_allowed_number"), (("bool",), "spec_bool_values"),
    (("string",), "shape_text"), (("tuple_type", "list_type"), "cat_allowed_list"),
    (("dict_type", "model_type", "model_attributes_type"), "cat_allowed_mapping"),
    (("missing",), "cat_allowed_required"),
)


def _models_in(ann: Any) -> list[type[BaseModel]]:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    found: list[type[BaseModel]] = []
    for arg in getattr(ann, "__args__", ()):
        found.extend(_models_in(arg))
    return found


def _submodel(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that holds the field at `loc` (dict keys and list indices in `loc` are skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            continue  # a dict key or list index inside a container field
        models = _models_in(info.annotation)
        current = models[0] if models else None
    return current


def validate_entry(section: str, entry_id: str, entry: RawEntry) -> BaseModel:
    model = SECTIONS[section]
    try:
        return model.model_validate({**entry.data, "id": entry_id})
    except ValidationError as exc:
        missing = [".".join(map(str, e["loc"])) for e in exc.errors() if e.get("type") == "missing"]
        if len(missing) > 1 and len(missing) == len(exc.errors()):  # every missing field at once
            shown = ["pcie_gb_s | pcie_gen" if m == "pcie_gb_s" and section == "accelerators" else m for m in missing]
            raise SpecError(f"{entry.last_file or entry.file}: {section}.{entry_id}",
                            msg("cat_missing_fields", n=len(missing), fields=", ".join(shown)),
                            allowed=msg("cat_allowed_see_example")) from None
        err = exc.errors()[0]
        loc = tuple(err.get("loc", ()))
        field_path = "." + ".".join(str(p) for p in loc) if loc else ""  # empty: the whole record
        file = entry.field_files.get(str(loc[0]), entry.file) if loc else (entry.last_file or entry.file)
        value = err.get("input") if err.get("type") != "missing" else None
        if isinstance(value, dict) and not loc:
            value = {k: value[k] for k in ("low", "typical", "high") if k in value} or None
        from trainsizer.spec.load import pydantic_problem

        problem = msg("cat_unknown_field") if err.get("type") == "extra_forbidden" else pydantic_problem(err)
        raise SpecError(
            f"{file}: {section}.{entry_id}{field_path}",
            problem,
            value=value,
            allowed=_allowed(err, model, loc),
            suggestion=did_you_mean(str(loc[-1]), model.model_fields) if err.get("type") == "extra_forbidden"
            else None,
        ) from None


def load_raw(overlays: Sequence[Path] = (), data_dir: Path = DATA_DIR) -> dict[str, dict[str, RawEntry]]:
    raw = read_builtin(data_dir)
    for path in overlays:
        apply_overlay(raw, Path(path))
    return raw
