"""Model architectures: shipped presets, Hugging Face `config.json` files and inline specs -> `ModelArch`.

    from trainsizer.models import load_model, list_presets, ModelArch
    load_model("llama-3.1-8b")               # a shipped preset (case-insensitive)
    load_model("path/to/config.json")        # or the folder holding it; local files only
    load_model({"layers": 32, "hidden": 4096, "heads": 32, "ffn": 11008, "vocab": 32000})
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainsizer.errors import SpecError, unknown_name
from trainsizer.messages import msg
from trainsizer.models.arch import LayerParams, ModelArch
from trainsizer.models.hf_config import arch_from_hf_config, supported_families
from trainsizer.models.inline import arch_from_inline
from trainsizer.models.shipped import PresetInfo, list_presets, load_preset, preset_for_repo, preset_names

__all__ = [
    "LayerParams",
    "ModelArch",
    "PresetInfo",
    "arch_from_hf_config",
    "list_presets",
    "load_model",
    "load_preset",
    "preset_names",
    "supported_families",
]


# A Hugging Face repo id ('org/name'; huggingface_hub validate_repo_id: letters, digits, '-', '_', '.'), not a .json
HF_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(?<!\.json)")
# Longer than any preset name or sensible path (Linux caps a path component at 255 bytes).
MAX_NAME_CHARS = 1024


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        return False


def load_model(spec: str | Path | Mapping[str, Any], *, where: str = "model") -> ModelArch:
    """A `ModelArch` from a preset name, a `config.json` path (file or folder) or a mapping.

    A mapping with `model_type` is read as a Hugging Face `config.json`; any other mapping is an inline
    architecture (see `trainsizer.models.inline`). `where` prefixes error messages (the job-file field).
    """
    if isinstance(spec, Mapping):
        if "model_type" in spec:
            return arch_from_hf_config(spec, source=where)
        return arch_from_inline(spec, where=where)
    if isinstance(spec, Path):
        return arch_from_hf_config(spec)
    if not isinstance(spec, str):
        raise SpecError(where, msg("model_spec_shape"), value=spec)
    text = spec.strip()
    if text.lower() in preset_names():
        return load_preset(text)
    if len(text) > MAX_NAME_CHARS:
        raise SpecError(where, msg("model_name_too_long", chars=len(text), limit=MAX_NAME_CHARS),
                        value=text[:40] + "...")
    path = Path(text).expanduser()
    if not _exists(path) and HF_REPO_ID.fullmatch(text):  # 'meta-llama/Llama-3.1-8B': a repo, not a file here
        preset = preset_for_repo(text)
        problem = msg("model_hf_repo_preset", preset=preset) if preset else msg("model_hf_repo_offline", repo=text)
        raise SpecError(where, problem, value=text, suggestion=preset)
    if _exists(path) or text.endswith(".json") or "/" in text or "\\" in text:
        return arch_from_hf_config(path)
    raise unknown_name(where, "model preset (or path to a config.json)", text, preset_names())
