"""A job in a URL: compact JSON, zlib-compressed, base64url. Links to a plan carry the job itself, so they
survive a server restart and reproduce the plan anywhere; decoding is bounded against zip bombs."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections.abc import Mapping
from typing import Any

from trainsizer.errors import SpecError
from trainsizer.messages import msg

MAX_TOKEN_CHARS = 16_384  # URLs past ~16 KiB are refused by common HTTP servers anyway


def canonical(job: Mapping[str, Any]) -> str:
    return json.dumps(job, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def job_key(job: Mapping[str, Any]) -> str:
    """A stable id of a job's content (cache key, file names)."""
    return hashlib.sha256(canonical(job).encode()).hexdigest()[:16]


def encode_job(job: Mapping[str, Any]) -> str:
    packed = zlib.compress(canonical(job).encode(), level=9)
    return base64.urlsafe_b64encode(packed).decode().rstrip("=")


def decode_job(token: str, max_bytes: int) -> dict[str, Any]:
    """The job a link carries; a broken or oversized link is a SpecError naming the `job` parameter."""
    if len(token) > MAX_TOKEN_CHARS:
        raise SpecError("job", msg("web_link_too_long", chars=len(token), limit=MAX_TOKEN_CHARS))
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, max_bytes + 1)
        if len(raw) > max_bytes or inflater.unconsumed_tail:
            raise SpecError("job", msg("web_link_job_too_large", limit=max_bytes))
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, zlib.error, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise SpecError("job", msg("web_link_undecodable")) from None
    if not isinstance(data, dict):
        raise SpecError("job", msg("web_link_no_job"))
    return data
