"""What the throughput benchmarks share: reading numbers from the CSV rows, one compared row, and MAPE."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def num(x: str, default: float = 0.0) -> float:
    """A number from a CSV cell; blank or "NA" (not published) gives `default`, anything else must parse."""
    x = (x or "").strip()
    return default if x in ("", "NA") else float(x)


def whole(x: str, default: int = 0) -> int:
    return int(round(num(x, default)))


@dataclass
class Case:
    """One published figure and the estimate of it; `skipped` says why a row is not scored."""

    row_id: str
    source: str
    metric: str
    measured: float
    predicted: float = math.nan
    skipped: str = ""

    @property
    def err(self) -> float:
        return (self.predicted - self.measured) / self.measured


def mape(cases: list[Case]) -> float:
    """Mean absolute percentage error over the scored (not skipped) cases."""
    errs = [abs(c.err) for c in cases if not c.skipped]
    return 100.0 * float(np.mean(errs)) if errs else math.nan
