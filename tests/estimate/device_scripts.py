"""The device scripts' CPU smoke runs (benchmarks/device/*.py --tiny), one way for their tests: each prints one JSON
object a line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DEVICE_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "device"


def tiny_lines(script: Path) -> list[dict[str, Any]]:
    """The JSON lines `script --tiny` prints, in order (a non-zero exit fails the test)."""
    out = subprocess.run([sys.executable, str(script), "--tiny"], capture_output=True, text=True, check=True,
                         timeout=300).stdout.strip().splitlines()
    return [json.loads(line) for line in out]


def import_tiny(script: Path):
    """The device script `script` imported as a module with --tiny in sys.argv (its tiny widths, on the CPU)."""
    import importlib

    sys.argv.append("--tiny")
    sys.path.insert(0, str(script.parent))
    try:
        return importlib.import_module(script.stem)
    finally:
        sys.argv.remove("--tiny")
