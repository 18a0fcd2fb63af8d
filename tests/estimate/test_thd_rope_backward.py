"""benchmarks/thd_rope_backward.py (skipped without torch): Megatron-Core's unfused THD RoPE loop counted op by op as
PyTorch runs it on CPU, against the kernels the estimate charges a packed sub-sequence (perf_constants.yaml kernels
rope_thd_host_per_sequence forward, rope_thd_backward_per_sequence backward; docs/known-gaps.md 286 (b), 315 (a))."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils._python_dispatch")

import thd_rope_backward as trb  # noqa: E402 (after the torch check: the benchmark needs it)
from trainsizer.estimate.compute import KERNELS  # noqa: E402

pytestmark = pytest.mark.torch


def test_the_charged_counts_are_the_loops_own():
    fwd, bwd = trb.per_sequence()
    assert fwd == KERNELS["rope_thd_host_per_sequence"]
    assert bwd == KERNELS["rope_thd_backward_per_sequence"]


def test_the_backward_copies_the_whole_gradient_once_a_sub_sequence():
    """CopySlices: each sub-sequence's copy_ into the output slice copies the whole gradient into a new buffer and
    clones its slice; the split's backward concatenates the pieces once a call."""
    samples = 5
    _, bwd, names = trb.counted(samples)
    assert names["new_empty_strided"] == samples and names["clone"] == samples
    assert names["slice_backward"] == samples and names["neg"] == samples
    assert bwd == 12 * samples - 1


def test_the_loop_rotates_like_one_pass_per_sample():
    """The counted loop is the rotation itself: each sub-sequence starts at position 0 (the THD path without packed
    frequencies), so two equal samples come out equal."""
    t, cu, freqs = trb._inputs(2)
    with torch.no_grad():
        t[trb.SAMPLE_LEN:] = t[: trb.SAMPLE_LEN]
    out = trb.thd_rope(t, cu, freqs)
    assert torch.equal(out[: trb.SAMPLE_LEN], out[trb.SAMPLE_LEN:])


def test_multi_latent_attentions_interleave_adds_one_forward_and_five_backward_kernels():
    """MLA's calls (mla_rotary_interleaved True) gather the even then the odd channels with a cat: +1 forward, +5
    backward (two zero-filled slice backwards and their sum) a sample; counted (known-gaps 315 (b)), charged since
    325 (a)."""
    fwd, bwd = trb.per_sequence()
    mla_fwd, mla_bwd = trb.per_sequence(mla=True)
    assert (mla_fwd - fwd, mla_bwd - bwd) == (1, 5)


def test_the_charged_mla_interleave_is_the_loops_own():
    """What 325 (a) charges an MLA call beyond the plain loop: the benchmark's count, forward and backward."""
    fwd, bwd = trb.per_sequence()
    mla_fwd, mla_bwd = trb.per_sequence(mla=True)
    assert mla_fwd - fwd == KERNELS["rope_thd_mla_interleave_per_sequence"]
    assert mla_bwd - bwd == KERNELS["rope_thd_mla_interleave_backward_per_sequence"]
