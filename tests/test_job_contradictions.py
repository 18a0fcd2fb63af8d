"""Jobs that say two things at once get an error naming both, not an answer built on one of them."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.default_strategy import with_default_strategy
from trainsizer.errors import SpecError
from trainsizer.scenario import resolve_job

BASE = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1.0e8}, "seq_len": 4096,
        "global_batch": {"sequences": 32}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_an_accelerator_both_included_and_excluded_is_refused(catalog):
    """The plan used to search nothing and list all 37 cards as refused; an alias counts as its id."""
    job = {**BASE, "constraints": {"include": ["h100-sxm-80gb", "a100-sxm-80gb"], "exclude": ["h100"]}}
    with pytest.raises(SpecError) as err:
        resolve_job({**job, "constraints": {"include": ["h100-sxm-80gb"], "exclude": ["h100-sxm-80gb"]}}, catalog)
    assert "constraints" in str(err.value) and "h100-sxm-80gb is both in constraints.include and in " \
        "constraints.exclude" in str(err.value)
    assert "同时出现在" in err.value.render("zh")
    resolve_job({**BASE, "constraints": {"include": ["a100-sxm-80gb"], "exclude": ["h100-sxm-80gb"]}}, catalog)


def test_hardware_where_no_searched_layout_is_valid_says_so_not_memory(catalog):
    """72 GB200 for a batch of 32: the search's power-of-two layouts leave dp 9, 18, 36 or 72, none dividing 32;
    the error said 'no strategy fits ... the least memory any needs is 0.2 GiB of 186 GiB'."""
    job = {**BASE, "hardware": {"accelerator": "gb200", "count": 72, "network": "ib-xdr800"}}
    with pytest.raises(SpecError) as err:
        with_default_strategy(resolve_job(job, catalog))
    text = str(err.value)
    assert "no layout the strategy search tries is valid for this job on 72 GPUs" in text
    assert "32 sequences" in text and "GiB" not in text
    # the layout the message points to (its own strategy) does run
    own = with_default_strategy(resolve_job({**job, "strategy": {"tp": 1, "pp": 9, "dp": 8}}, catalog))
    assert own.strategy is not None
