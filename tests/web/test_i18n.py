"""The web page's message catalogue is complete in English and Chinese, and every label the templates
use exists."""

from __future__ import annotations

import re
from importlib import resources

from trainsizer.render.i18n import LANGS
from trainsizer.web.i18n import messages, text_languages


def test_every_message_in_every_language():
    for key, entry in messages().items():
        assert set(entry) == set(LANGS), key
        assert all(isinstance(v, str) and v.strip() for v in entry.values()), key


def test_chinese_is_chinese():
    for key, entry in messages().items():
        if key not in ("lang_switch",) and re.search(r"[A-Za-z]{4,}", entry["en"]):
            assert entry["zh"] != entry["en"], key


def test_templates_use_known_keys():
    folder = resources.files("trainsizer.web").joinpath("templates")
    used: set[str] = set()
    for path in folder.iterdir():
        used |= set(re.findall(r"tr\('([^']+)'\)", path.read_text(encoding="utf-8")))
    assert used and used <= set(messages()), used - set(messages())


def test_text_languages_carry_sources():
    for lang, entry in text_languages().items():
        assert entry["bytes_per_token"] > 0 and entry["source"] and entry["confidence"], lang
        assert f"text_language_{lang}" in messages()
