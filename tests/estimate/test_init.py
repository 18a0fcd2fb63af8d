from __future__ import annotations

import subprocess
import sys

import trainsizer.estimate as est


def test_every_public_name_resolves() -> None:
    for name in est.__all__:
        assert getattr(est, name) is not None, name
    assert callable(est.energy) and est.energy.__module__ == "trainsizer.estimate.energy"
    from trainsizer.estimate.batch import evaluate_batch
    from trainsizer.estimate.validate import check_strategy

    assert est.evaluate_batch is evaluate_batch and est.check_strategy is check_strategy
    assert set(est.__all__) <= set(dir(est))
    assert set(est.__all__) == set(est._LAZY) | {"FRAMEWORKS", "Strategy", "System", "Training", "energy"}


def test_import_is_light() -> None:
    """Importing the package loads neither torch nor the estimators' heavier dependencies."""
    code = ("import sys, trainsizer.estimate; "
            "print(sorted(m for m in ('torch', 'pydantic', 'yaml', 'trainsizer.estimate.memory') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
