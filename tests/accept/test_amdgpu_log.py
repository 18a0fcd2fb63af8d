"""amdgpu's RAS and reset lines of the kernel log (accept/amdgpu_log.py)."""

from __future__ import annotations

from trainsizer.accept.amdgpu_log import parse_amdgpu_events

from .conftest import fixture_text


def test_ras_and_reset_lines_of_every_format():
    events = parse_amdgpu_events(fixture_text("kernel/dmesg-amdgpu.txt"))
    assert [(e.pci, e.kind, e.count, e.block) for e in events] == [
        ("0001:01:00.0", "correctable", 3, "gfx"),
        ("0002:01:00.0", "uncorrectable", 2, "umc"),
        ("0002:01:00.0", "reset", 1, ""),
        ("0003:01:00.0", "deferred", 1, "sdma"),
        ("0002:01:00.0", "reset_failed", 1, ""),
    ]
    assert events[1].message.startswith("amdgpu 0002:01:00.0") and "umc block" in events[1].message


def test_the_all_clear_and_the_total_line_are_not_events():
    text = ("amdgpu 0000:c3:00.0: amdgpu: no uncorrectable hardware errors detected in umc block\n"
            "amdgpu 0000:c3:00.0: amdgpu: socket: 0, die: 0, 5 uncorrectable hardware errors detected in total in umc block\n"
            "amdgpu 0000:c3:00.0: amdgpu: GPU reset succeeded, trying to resume\n")
    assert parse_amdgpu_events(text) == []


def test_an_nvidia_log_has_no_amdgpu_event():
    assert parse_amdgpu_events(fixture_text("kernel/dmesg-xid.txt")) == []
