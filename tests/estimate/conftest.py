"""The benchmarks' folder on sys.path before any module here is imported: the held-out tests import their batch
(perf_heldout63, finetune_heldout, harness) at the top, as benchmarks/ itself does, not each behind its own
sys.path line (tests/estimate/heldout_rows.py: BENCH)."""

from __future__ import annotations

import sys

from .heldout_rows import BENCH

if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
