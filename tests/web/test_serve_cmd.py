"""`trainsizer serve` as the README runs it: a real server on loopback that answers, and clear option errors."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx2 as httpx

from .conftest import free_port


def test_serve_answers_on_loopback():
    port = free_port()
    cmd = [sys.executable, "-c", "import sys; from trainsizer.cli import main; sys.exit(main())",
           "--lang", "zh", "serve", "--port", str(port), "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        page = None
        for _ in range(600):
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.1)
        assert page is not None and page.status_code == 200
        assert 'id="job-form"' in page.text
        assert httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=5).json()["paths"]["/api/plan"]
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}" in out


def test_serve_refuses_bad_options(run_cli):
    code, _out, err = run_cli("serve", "--port", "0")
    assert code == 2 and "--port" in err
    code, _out, err = run_cli("serve", "--time-limit", "0")
    assert code == 2 and "--time-limit" in err
