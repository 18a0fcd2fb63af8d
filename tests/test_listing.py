"""messages.Listing: names listed in a sentence, separated as each language does, kept through JSON and pickling."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from trainsizer.messages import LIST_SEPARATORS, Listing, msg, storable, stored

NAMES = st.lists(st.text(alphabet="abcdefgh0123456789-", min_size=1, max_size=8), max_size=6)


@given(NAMES)
def test_a_listing_joins_with_each_languages_separator(names: list[str]) -> None:
    listing = Listing(names)
    assert str(listing) == ", ".join(names)
    for lang, sep in LIST_SEPARATORS.items():
        assert listing.tr(lang) == sep.join(names)


@given(NAMES)
def test_a_listing_survives_json_and_pickling(names: list[str]) -> None:
    listing = Listing([*names, msg("error_more_choices", n=40)])
    for back in (stored(storable(listing)), pickle.loads(pickle.dumps(listing))):
        assert isinstance(back, Listing)
        assert back.tr("zh") == listing.tr("zh") and back.tr("en") == listing.tr("en")


def test_items_that_are_messages_are_translated() -> None:
    listing = Listing(["a100", msg("error_more_choices", n=40)])
    assert listing.tr("zh") == "a100、" + msg("error_more_choices", n=40).tr("zh")
