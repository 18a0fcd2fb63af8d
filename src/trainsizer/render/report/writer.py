"""Writing a plan's reports into a folder: report.html, report.md (+ charts/*.png), architecture.svg,
bom.xlsx and, on request, report.pdf. Existing files are never overwritten unless `force`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.plan.schema import SCHEMA_VERSION
from trainsizer.render.report.diagram import render_svg
from trainsizer.render.report.facts import as_dict
from trainsizer.render.report.html import render_html
from trainsizer.render.report.markdown import render_markdown
from trainsizer.render.report.xlsx import render_xlsx
from trainsizer.spec.parse_problems import parse_problem

FORMATS = ("html", "md", "xlsx", "svg", "pdf")
DEFAULT_FORMATS = ("html", "md", "xlsx", "svg")


def _files(plan: dict, lang: str, formats: Iterable[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for fmt in formats:
        if fmt == "html":
            files["report.html"] = render_html(plan, lang).encode("utf-8")
        elif fmt == "md":
            text, extra = render_markdown(plan, lang)
            files["report.md"] = text.encode("utf-8")
            files.update(extra)
        elif fmt == "xlsx":
            files["bom.xlsx"] = render_xlsx(plan, lang)
        elif fmt == "svg":
            files["architecture.svg"] = render_svg(plan, lang).encode("utf-8")
        elif fmt == "pdf":
            from trainsizer.render.report.pdf import render_pdf

            files["report.pdf"] = render_pdf(plan, lang)
        else:
            raise SpecError("--format", msg("report_unknown_format"), value=fmt, allowed=FORMATS)
    return files


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write_report(plan: Any, out_dir: Path | str, lang: str = "en", formats: Iterable[str] = DEFAULT_FORMATS,
                 force: bool = False) -> list[Path]:
    """Render and write the reports; returns the paths written (all rendered before any is written)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SpecError(str(out), msg("report_folder_is_file"), allowed=msg("report_allowed_folder"))
    formats = tuple(dict.fromkeys(formats))
    for fmt in formats:
        if fmt not in FORMATS:
            raise SpecError("--format", msg("report_unknown_format"), value=fmt, allowed=FORMATS)
    targets = {"html": ["report.html"], "md": ["report.md", "charts"], "xlsx": ["bom.xlsx"],
               "svg": ["architecture.svg"], "pdf": ["report.pdf"]}
    existing = [out / n for f in formats for n in targets[f] if (out / n).exists()]
    if existing and not force:
        raise SpecError(str(existing[0]), msg("report_exists"), allowed=msg("report_allowed_overwrite"))
    shown = as_dict(plan, lang)
    shown["notes_msg"] = as_dict(plan).get("notes_msg")  # which notes are warnings (view._plan_notes)
    files = _files(shown, lang, formats)
    written = []
    try:
        for rel, data in files.items():
            _atomic_write(out / rel, data)
            written.append(out / rel)
    except OSError as err:  # a folder that cannot be made or written (read-only, /proc, no space)
        raise SpecError(str(out), msg("cli_cannot_write_there", reason=str(err.strerror or err))) from None
    return written


def load_plan_json(path: Path | str) -> dict[str, Any]:
    """A plan file as a dict, with errors that say what is wrong and where."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(str(path), msg("report_plan_not_found"), allowed=msg("report_allowed_plan"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SpecError(str(path), msg("report_not_utf8")) from None
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}:{err.lineno}", msg("file_bad_json", detail=parse_problem(err.msg))) from None
    if not isinstance(data, dict) or not isinstance(data.get("options"), list):
        raise SpecError(f"{path}: options", msg("report_not_a_plan"))
    version = str(data.get("schema_version", "1.0"))
    if version.split(".")[0] != "1":   # 1.x only adds fields; another major version may change their meaning
        raise SpecError(f"{path}: schema_version", msg("report_plan_schema"), value=version,
                        allowed=msg("report_allowed_schema", version=SCHEMA_VERSION))
    return data
