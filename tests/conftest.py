from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process: returns (exit_code, stdout, stderr)."""
    from trainsizer.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
