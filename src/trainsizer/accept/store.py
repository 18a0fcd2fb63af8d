"""History of acceptance runs in SQLite: compare a node with its own past and with the fleet.

Default path: $TRAINSIZER_ACCEPT_DB, else ~/.local/share/trainsizer/accept-history.sqlite.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from pathlib import Path

from trainsizer.accept.results import CheckResult, RunResult
from trainsizer.errors import SpecError
from trainsizer.messages import msg

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, platform TEXT, verdict TEXT, result_path TEXT
);
CREATE TABLE IF NOT EXISTS checks (
  run_id TEXT NOT NULL REFERENCES runs(run_id), started_at TEXT NOT NULL, node TEXT, name TEXT NOT NULL,
  status TEXT NOT NULL, measured REAL, unit TEXT
);
CREATE INDEX IF NOT EXISTS checks_name_node ON checks(name, node, started_at);
"""


def default_path() -> Path:
    env = os.environ.get("TRAINSIZER_ACCEPT_DB")
    return Path(env) if env else Path.home() / ".local/share/trainsizer/accept-history.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path, timeout=30)
        con.executescript(SCHEMA)
    except (OSError, sqlite3.Error) as err:
        raise SpecError("--history", msg("acc_cannot_open_history", reason=str(err)), value=str(path)) from None
    return con


def _origin(c: CheckResult) -> str | None:
    """The run a merged check came from (fleet.merge notes it), None for a check of this run."""
    origin = c.details.get("run_id")
    return origin if isinstance(origin, str) else None


def record(con: sqlite3.Connection, result: RunResult, result_path: Path | None = None) -> None:
    """Record a run (idempotent per run id). Checks of a merged run whose own run is already recorded are
    not recorded again, so that a node's figure counts once in its past and in the fleet."""
    with con:
        recorded = {rid for (rid,) in con.execute("SELECT run_id FROM runs WHERE run_id != ?", (result.run_id,))}
        con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                    (result.run_id, result.started_at, result.platform, result.verdict,
                     str(result_path) if result_path else None))
        con.execute("DELETE FROM checks WHERE run_id = ?", (result.run_id,))
        con.executemany(
            "INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(result.run_id, result.started_at, c.node, c.name, c.status,
              float(c.measured) if isinstance(c.measured, int | float) else None, c.unit)
             for c in result.checks if _origin(c) not in recorded],
        )


def compare(con: sqlite3.Connection, result: RunResult) -> list[dict]:
    """Per numeric check: this run's figure, the node's past median, the fleet's latest-per-node median."""
    rows = []
    for c in result.checks:
        if not isinstance(c.measured, int | float) or c.node in (None, "fleet"):
            continue
        past = [v for (v,) in con.execute(
            "SELECT measured FROM checks WHERE name = ? AND node = ? AND run_id NOT IN (?, ?) "
            "AND measured IS NOT NULL", (c.name, c.node, result.run_id, _origin(c) or result.run_id))]
        fleet = [v for (v,) in con.execute(
            """SELECT measured FROM checks c WHERE name = ? AND node != ? AND measured IS NOT NULL
               AND started_at = (SELECT MAX(started_at) FROM checks d
                                 WHERE d.name = c.name AND d.node = c.node AND d.measured IS NOT NULL)""",
            (c.name, c.node))]
        rows.append({
            "name": c.name, "node": c.node, "measured": c.measured, "unit": c.unit,
            "node_past_median": statistics.median(past) if past else None, "node_past_runs": len(past),
            "fleet_median": statistics.median(fleet) if fleet else None, "fleet_nodes": len(fleet),
        })
    return rows
