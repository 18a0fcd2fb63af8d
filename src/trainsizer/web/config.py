"""What a running server allows: sizes, time and concurrency limits (the `trainsizer serve` options)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# A Hugging Face config.json is a few KiB (Llama-3.1-405B's is 1 KiB; the largest with id2label tables are
# tens of KiB); a job as JSON is well under 10 KiB. The limits leave room and still stop floods.
DEFAULT_MAX_JSON_BYTES = 256 * 1024
DEFAULT_MAX_UPLOAD_BYTES = 1024 * 1024


def _default_workers() -> int:
    # One plan is CPU-bound: more workers than cores only queues them inside the OS instead of here.
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class ServeConfig:
    """Limits of one server. `overlays` are catalog files named on the server's own command line."""

    workers: int = field(default_factory=_default_workers)
    task_timeout_s: float = 30.0  # one plan / estimate / fit / download, in a worker process
    queue_timeout_s: float = 120.0  # how long a request waits for a free worker before 'busy'
    max_waiting: int = 200  # requests allowed to wait for a worker at once; more are refused at once
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    cache_entries: int = 64  # finished plans kept for the result page and its downloads
    overlays: tuple[Path, ...] = ()
    warm_up: bool = True  # each worker plans the form's default job once before it takes requests
    start_timeout_s: float = 300.0  # a worker not ready (loaded and warmed up) by then is a failed start

    def __post_init__(self) -> None:
        for name in ("workers", "task_timeout_s", "queue_timeout_s", "max_waiting", "max_json_bytes",
                     "max_upload_bytes", "cache_entries", "start_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
