"""The RDMA wire check with a stand-in `ib_write_bw` (a script that replays a recorded output)."""

from __future__ import annotations

import os
import stat

from trainsizer.accept import perftest
from trainsizer.accept.context import Context, Options
from trainsizer.accept.criteria import from_platform

from .conftest import FIXTURES


def test_loopback_pair_per_device_on_a_free_port(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    fake = tmp_path / "bin" / "ib_write_bw"
    fake.parent.mkdir()
    fake.write_text(f"""#!/bin/bash
echo "$@" >> {log}
if [ "${{@: -1}}" = "127.0.0.1" ]; then cat {FIXTURES / "perftest" / "ib_write_bw_ndr.txt"}; else exec sleep 30; fi
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0").mkdir(parents=True)
    ctx = Context(criteria=from_platform("h100-sxm-80gb"), telemetry=None, telemetry_why="test",
                  options=Options(sysfs_root=tmp_path), node="n0")
    (r,) = perftest.run(ctx)
    assert r.name == "rdma.write_bw.mlx5_0" and r.measured == 390.77 and r.unit == "Gb/s"
    assert r.status == "pass" and r.threshold == 380.0  # 0.95 x 400 Gb/s line rate
    server, client = (line.split() for line in log.read_text().splitlines())
    assert client == [*server, "127.0.0.1"] and server[server.index("-d") + 1] == "mlx5_0"
    port = int(server[server.index("-p") + 1])
    assert port != 18515 and 1024 < port < 65536
