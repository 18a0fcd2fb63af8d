"""Sample lengths of unpacked fine-tuning data, and the padded rows they run as.

Without packing, the fine-tuning collators pad each micro-batch to its longest sample, not to the cutoff:
transformers DataCollatorWithPadding / DataCollatorForSeq2Seq (padding=True, "longest"; LLaMA-Factory and
TRL use them), torchtune padded_collate_sft, NeMo GPTSFTDataset (pad_to_max_length false). Samples longer
than the cutoff (`seq_len`) are truncated to it. So a micro-batch of b samples runs b rows of max(L_1..L_b)
positions, of which sum(L_i) are real tokens.

Sample lengths are lognormal with mean `mean_tokens` (the data's average, before truncation) and `sigma`, the
standard deviation of ln(length) (sigma 0: every sample `mean_tokens` long), a shape, not a fitted constant:
the user states it. Expectations are taken on N equiprobable quantiles of that distribution (quadrature), so
E[max of b] is exact for sampling with replacement from those N lengths:
P(max = x_k) = (k / N)^b - ((k - 1) / N)^b for the sorted lengths x_1 <= ... <= x_N.
"""

from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist

import numpy as np

QUANTILES = 4096  # quadrature points (the tails past 1 / 8192 are folded into the extreme points)
PACKING_PACKS = 1000  # packs next_fit_fill simulates: the fill's sampling error is about 0.1% of a row


@lru_cache(maxsize=1)
def _unit_normal_quantiles() -> np.ndarray:
    nd = NormalDist()
    return np.array([nd.inv_cdf((k + 0.5) / QUANTILES) for k in range(QUANTILES)])


@lru_cache(maxsize=256)
def _lengths(mean_tokens: float, sigma: float, cutoff: float) -> np.ndarray:
    """Sorted sample lengths (N equiprobable quantiles), truncated at the cutoff."""
    z = _unit_normal_quantiles()
    raw = mean_tokens * np.exp(sigma * z - 0.5 * sigma * sigma)  # lognormal with mean `mean_tokens`
    return np.minimum(raw, float(cutoff))


def real_tokens(mean_tokens: float, sigma: float, cutoff: float) -> float:
    """Expected tokens of one sample after truncation at the cutoff: E[min(L, cutoff)]."""
    return float(np.mean(_lengths(mean_tokens, sigma, cutoff)))


def squared_tokens(mean_tokens: float, sigma: float, cutoff: float) -> float:
    """E[min(L, cutoff)^2]: what attention over each sample's own length costs, per sample."""
    x = _lengths(mean_tokens, sigma, cutoff)
    return float(np.mean(x * x))


def _max_weights(b: np.ndarray) -> np.ndarray:
    """P(the maximum of b draws is the k-th smallest of N equiprobable points), shape b.shape + (N,)."""
    k = np.arange(1, QUANTILES + 1, dtype=float) / QUANTILES
    bb = np.maximum(np.asarray(b, float), 1.0)[..., None]
    return k ** bb - (k - 1.0 / QUANTILES) ** bb


def _expected_max(values: np.ndarray, micro_batch) -> np.ndarray:
    """E[f(max of b draws)] for the sorted equiprobable `values` = f(x_k), per micro-batch size (a search's
    array of strategies holds few distinct sizes: computed once each)."""
    b = np.asarray(micro_batch, float)
    sizes, where = np.unique(b, return_inverse=True)
    return (_max_weights(sizes) @ values)[where].reshape(b.shape)


def padded_tokens(mean_tokens: float, sigma: float, cutoff: float, micro_batch) -> np.ndarray:
    """Expected positions per row of a micro-batch of `micro_batch` samples padded to its longest one:
    E[max(L_1..L_b)] (arrays of micro-batch sizes broadcast)."""
    return _expected_max(_lengths(mean_tokens, sigma, cutoff), micro_batch)


def padded_squared(mean_tokens: float, sigma: float, cutoff: float, micro_batch) -> np.ndarray:
    """E[max(L_1..L_b)^2]: attention over the padded rows (every row as long as the longest sample)."""
    x = _lengths(mean_tokens, sigma, cutoff)
    return _expected_max(x * x, micro_batch)


@lru_cache(maxsize=64)
def next_fit_fill(mean_tokens: float, sigma: float, cap: float, longest: float = 0.0) -> float:
    """Share of a packed row's `cap` positions that hold sample tokens when samples are packed in order and a
    pack is closed, and padded to `cap`, as soon as the next sample does not fit: next fit, as torchtune's
    PackedDataset._pack packs (split_across_pack False, the SFT default; the sample that overflows starts the
    next pack). Samples are the N equiprobable lengths (truncated at `cap`, or at `longest` when that is
    shorter: data.max_tokens) in a fixed pseudo-random order,
    enough of them for PACKING_PACKS packs, so the figure is the same on every run; the last, open pack is
    left out. First-fit-decreasing packers (NeMo, LLaMA-Factory) and concatenated text fill their rows."""
    x = _lengths(mean_tokens, sigma, min(cap, longest) if longest > 0 else cap)
    items = int(min(PACKING_PACKS * cap / max(float(np.mean(x)), 1e-9) + 1, 64 * QUANTILES))
    rng = np.random.default_rng(0)
    order = np.concatenate([rng.permutation(QUANTILES) for _ in range(-(-items // QUANTILES))])[:items]
    ends = np.cumsum(x[order])
    start, base, packs = 0, 0.0, 0
    while True:
        end = int(np.searchsorted(ends, base + cap, side="right"))  # samples [start, end) fit this pack
        if end >= len(ends):
            break
        end = max(end, start + 1)
        packs, base, start = packs + 1, float(ends[end - 1]), end
    return 1.0 if packs == 0 else base / (packs * cap)


# transformers' LengthGroupedSampler: megabatches of at most this many per-device batches (trainer_pt_utils
# get_length_grouped_indices: mega_batch_mult = min(len(lengths) // (batch_size * 4), 50))
GROUPED_MEGABATCH_MULT = 50


def grouped_megabatch(samples: float, per_device_batch) -> np.ndarray:
    """Samples in one of LengthGroupedSampler's megabatches: min(samples // (4 B), 50), at least 1, times B, the
    per-device samples a step (train_batch_size x gradient_accumulation_steps, trainer.py _get_train_sampler)."""
    b = np.maximum(np.asarray(per_device_batch, float), 1.0)
    mult = np.clip(np.floor(float(samples) / (4.0 * b)), 1.0, GROUPED_MEGABATCH_MULT)
    return mult * b


def grouped_padded(mean_tokens: float, sigma: float, cutoff: float, micro_batch, megabatch) -> tuple[np.ndarray,
                                                                                                       np.ndarray]:
    """(E[row], E[row^2]) of micro-batches cut from length-sorted megabatches (transformers' LengthGroupedSampler,
    group_by_length: a random megabatch of M samples sorted longest first, then cut into micro-batches of b): the
    j-th micro-batch is padded to the megabatch's (j b + 1)-th longest sample, taken as the mean of its stratum of the
    length distribution (the k-th longest of M: the quantiles between 1 - k / M and 1 - (k - 1) / M), so b = 1 gives
    the samples' own mean; the mean over the M / b micro-batches. Arrays of micro-batch and megabatch sizes broadcast;
    computed once per distinct pair."""
    x = _lengths(mean_tokens, sigma, cutoff)
    grid = np.arange(QUANTILES + 1, dtype=float)
    sums = np.concatenate(([0.0], np.cumsum(x))), np.concatenate(([0.0], np.cumsum(x * x)))
    b, m = np.broadcast_arrays(np.asarray(micro_batch, float), np.asarray(megabatch, float))
    pairs, where = np.unique(np.stack([b.ravel(), m.ravel()], axis=1), axis=0, return_inverse=True)
    out = np.empty((2, len(pairs)))
    for i, (bb, mm) in enumerate(pairs):
        k = np.arange(max(int(mm // max(bb, 1.0)), 1)) * max(bb, 1.0) + 1.0  # each micro-batch's longest, from the top
        hi, lo = QUANTILES * (1.0 - (k - 1.0) / mm), QUANTILES * np.maximum(1.0 - k / mm, 0.0)
        for j, c in enumerate(sums):
            out[j, i] = np.mean((np.interp(hi, grid, c) - np.interp(lo, grid, c)) / np.maximum(hi - lo, 1e-12))
    where = where.reshape(b.shape)
    return out[0][where], out[1][where]


def padded_records(mean_tokens: float, sigma: float, cutoff: float, micro_batch, draws) -> tuple[np.ndarray,
                                                                                               np.ndarray]:
    """(E[sum of the record rows], E[longest row]) over `draws` micro-batches in random order, each padded to its
    longest sample: a row is a record when it is longer than every row before it. With G(v) = P(a row < v) =
    (share of samples < v)^b and p(v) = P(a row = v) on the distinct quadrature lengths v, a row at position i is a
    record of value v with probability p(v) G(v)^(i - 1), so E[sum] = sum_v v p(v) (1 - G(v)^n) / (1 - G(v)) (the
    expected sum of the record values of i.i.d. draws; Nevzorov, Records: Mathematical Theory, 2001, ch. 2);
    E[longest] = sum_v v (P(row <= v)^n - G(v)^n). Arrays of micro-batch sizes and draws broadcast; computed once
    per distinct pair."""
    x = _lengths(mean_tokens, sigma, cutoff)
    values, first = np.unique(x, return_index=True)  # distinct lengths; the first quadrature point of each
    below = first / QUANTILES  # share of samples shorter than each distinct length
    upto = np.append(first[1:], QUANTILES) / QUANTILES
    b, n = np.broadcast_arrays(np.maximum(np.asarray(micro_batch, float), 1.0), np.maximum(np.asarray(draws, float), 1.0))
    pairs, where = np.unique(np.stack([b.ravel(), n.ravel()], axis=1), axis=0, return_inverse=True)
    out = np.empty((2, len(pairs)))
    with np.errstate(divide="ignore"):
        log_below, log_upto = np.log(below), np.log(upto)
    for i, (bb, nn) in enumerate(pairs):
        lg, lu = bb * log_below, bb * log_upto  # log P(row < v), log P(row <= v)
        p = np.exp(lu) - np.exp(lg)
        out[0, i] = float(np.sum(values * p * np.expm1(nn * lg) / np.expm1(np.where(lg < 0.0, lg, -1e-300))))
        out[1, i] = float(np.sum(values * (np.exp(nn * lu) - np.exp(nn * lg))))
    where = where.reshape(b.shape)
    return out[0][where], out[1][where]
