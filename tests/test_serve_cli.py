"""`trainsizer serve` without the web extra: one paragraph naming what to install, in the reader's language."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.parametrize("lang, words", [("en", "web extra"), ("zh", "附加依赖")])
def test_serve_without_the_web_extra_says_what_to_install(run_cli, monkeypatch, lang, words):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn raises ImportError, as when not installed
    code, out, err = run_cli("--lang", lang, "serve")
    assert code == 2
    assert "Traceback" not in err and "pip install 'trainsizer[web]'" in err and words in err
    assert "uvicorn" in err
