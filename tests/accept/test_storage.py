"""Storage and checkpoint checks for real on a temp dir (Python I/O, and fio when installed)."""

from __future__ import annotations

import pytest

from trainsizer.accept import checkpoint, coldcache, fio, storage
from trainsizer.accept.criteria import Limit


def by_name(results):
    return {r.name: r for r in results}


def test_python_path_measures_write_and_cold_read(cpu_ctx, monkeypatch):
    monkeypatch.setattr(fio, "available", lambda: False)
    cpu_ctx.criteria.storage_read_gb_s_min = Limit(value=1e-6, source="plan: tiny")
    r = by_name(storage.run(cpu_ctx))
    w, rd = r["storage.write"], r["storage.read"]
    assert w.status == "skipped" and w.measured > 0 and "no threshold" in w.why  # measured, never passed
    assert rd.status == "pass" and rd.measured > 0 and rd.details["method"] == "python"
    assert rd.details["cold_cache"] in coldcache.METHOD_NOTES
    assert list(cpu_ctx.options.storage_path.iterdir()) == []  # cleaned up


def test_read_threshold_fails_when_slow(cpu_ctx, monkeypatch):
    monkeypatch.setattr(fio, "available", lambda: False)
    cpu_ctx.criteria.storage_read_gb_s_min = Limit(value=1e9, source="plan: impossible")
    assert by_name(storage.run(cpu_ctx))["storage.read"].status == "fail"


@pytest.mark.skipif(not fio.available(), reason="fio not installed (apt-get install fio)")
def test_fio_path_for_real(cpu_ctx):
    r = by_name(storage.run(cpu_ctx))
    assert r["storage.write"].details["method"] == "fio"
    assert r["storage.write"].measured > 0 and r["storage.read"].measured > 0


def test_missing_storage_path_is_an_error(cpu_ctx, tmp_path):
    cpu_ctx.options.storage_path = tmp_path / "nope"
    assert {r.status for r in storage.run(cpu_ctx)} == {"error"}
    assert {r.status for r in checkpoint.run(cpu_ctx)} == {"error"}


def test_checkpoint_save_restore_integrity(cpu_ctx):
    cpu_ctx.criteria.checkpoint_save_s_max = Limit(value=600, source="plan: 5 % of a 3 h interval")
    cpu_ctx.criteria.checkpoint_restore_s_max = Limit(value=1e-9, source="plan: impossible")
    r = by_name(checkpoint.run(cpu_ctx))
    assert r["checkpoint.save"].status == "pass" and r["checkpoint.save"].unit == "s"
    assert r["checkpoint.restore"].status == "fail"
    assert r["checkpoint.integrity"].status == "pass"
    assert r["checkpoint.save"].details["shards"] == 4 and r["checkpoint.save"].details["size_bytes"] == 8 * 2**20


def test_checkpoint_corruption_is_caught(cpu_ctx):
    def flip_a_byte(paths):
        with open(paths[1], "r+b") as fh:
            fh.seek(1000)
            b = fh.read(1)
            fh.seek(1000)
            fh.write(bytes([b[0] ^ 0xFF]))

    r = by_name(checkpoint.run(cpu_ctx, tamper=flip_a_byte))
    assert r["checkpoint.integrity"].status == "fail" and "__1_0.distcp" in r["checkpoint.integrity"].why


@pytest.mark.parametrize("method", ["o_direct", "fadvise"])
def test_cold_read_methods_give_the_same_digest(tmp_path, method):
    p = tmp_path / "f.bin"
    _, digest = storage.write_random(p, 3 * coldcache.BLOCK + 4096)
    seconds, digests, used = coldcache.cold_read([p], method)
    assert digests[p] == digest and seconds > 0
    assert used in ("o_direct", "fadvise")  # tmpfs refuses O_DIRECT: falls back and says so


def test_dataset_files_are_read_cold(cpu_ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(fio, "available", lambda: False)
    data = tmp_path / "dataset"
    (data / "shards").mkdir(parents=True)
    for i in range(3):
        storage.write_random(data / "shards" / f"part-{i:05d}.bin", 2 * 2**20, seed=i)
    cpu_ctx.options.dataset_path = data
    cpu_ctx.criteria.storage_read_gb_s_min = Limit(value=1e-6, source="plan: 2 x loader input rate")
    r = by_name(storage.run(cpu_ctx))["storage.dataset_read"]
    assert r.status == "pass" and r.details["files"] == 3 and r.details["bytes"] == 6 * 2**20
    cpu_ctx.options.dataset_path = tmp_path / "missing"
    assert by_name(storage.run(cpu_ctx))["storage.dataset_read"].status == "error"


def test_a_failing_write_is_an_error_and_the_dataset_read_still_counts(cpu_ctx, tmp_path, monkeypatch):
    """ENOSPC while writing used to turn the whole storage group into one error, losing the dataset read."""
    def full(path, size_bytes, seed=0):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fio, "available", lambda: False)
    monkeypatch.setattr(storage, "write_random", full)
    data = tmp_path / "dataset.bin"
    data.write_bytes(b"x" * 2**20)
    cpu_ctx.options.dataset_path = data
    r = by_name(storage.run(cpu_ctx))
    assert r["storage.write"].status == "error" and "No space left" in r["storage.write"].why
    assert r["storage.read"].status == "error"
    assert r["storage.dataset_read"].measured > 0


def test_a_checkpoint_larger_than_the_free_space_is_not_written(cpu_ctx, monkeypatch):
    # a plan's 494 GB checkpoint on a volume with 71 GB free: an error naming both, and nothing written
    free = 71 * 10**9
    monkeypatch.setattr(checkpoint.shutil, "disk_usage", lambda p: type("U", (), {"free": free})())
    cpu_ctx.criteria.checkpoint_size_gb = 494.0
    r = by_name(checkpoint.run(cpu_ctx))
    assert {x.status for x in r.values()} == {"error"}
    assert "494.0 GB" in r["checkpoint.save"].why and "71.0 GB" in r["checkpoint.save"].why
    assert list(cpu_ctx.options.storage_path.iterdir()) == []
