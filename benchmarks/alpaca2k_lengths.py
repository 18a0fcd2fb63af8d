"""Sample lengths of LitGPT's Alpaca2k data (mhenrichsen/alpaca_2k_test), read off LitGPT's own histogram of it, and
the lognormal the perf_heldout37 config-hub rows state (docs/known-gaps.md 127).

LitGPT's config hub table (config_hub/finetune/README.md at 84a73fd0 and 00af8b0d) trains on Alpaca2k, not on the
52K Alpaca. LitGPT published that set's length histogram with its data module: tutorials/images/prepare_dataset/
alpaca-2k.jpg, added in 71ba9932 (#1027, 2024-03-06; prepare_dataset.md "The Alpaca-2k dataset distribution"),
legend min 50, median 168.0, max 763, against alpaca.jpg's min 42, median 110, max 1,304 for the 52K set (29de2828).
The tokenizer is not stated; alpaca.jpg's maximum is Llama 2's longest Alpaca sample (resource-tables.md at 0cc02afa:
"Llama 2: 1304 tokens"), and the 2k histogram is taken in the same Llama 2 tokens.

The histogram (benchmarks/data/litgpt_alpaca2k_lengths.csv) was digitised: the plot's axes are 0-1,000 tokens and
0-30 samples; each pixel column (0.992 px a token) gives the height of its tallest training or test bar. The legend's
three vertical lines fall at 50.4, 168.3 and 763.1 tokens on that scale; the bar-colour threshold (blue over red by 50
levels) is the one where the read counts add to the 1,900 trained samples (Alpaca2k's val_split_fraction 0.05) and
the median to the legend's 168 (read: 1,897, 167.5; a threshold of 60 or 40 reads 1,768 / 159.0 or 2,074 / 173.5).

The estimate draws lengths from a lognormal (estimate/sample_lengths.py), so the rows state the lognormal whose padded
micro-batch means at the 512 cutoff, E[max of b lengths] for b = 1, 2, 4, 8 (the rows' micro-batches), match the
histogram's (least squares on their logs, a 1-token x 0.01 grid). The histogram itself is bimodal (a peak near 85 and
a flat shoulder to ~600): a lognormal of its own mean and log-sd (216, 0.65) gives 2-5% fewer padded positions.

Run: python benchmarks/alpaca2k_lengths.py   (or --from-image alpaca-2k.jpg to re-read the CSV from the picture)
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from trainsizer.estimate.sample_lengths import padded_tokens

DATA = Path(__file__).resolve().parent / "data" / "litgpt_alpaca2k_lengths.csv"
CUTOFF = 512  # the config hub yamls' train.max_seq_length
MICRO_BATCHES = (1, 2, 4, 8)  # the A10G / A100 rows' micro-batch sizes
LEGEND = {"min": 50, "median": 168.0, "max": 763, "trained": 1900}  # alpaca-2k.jpg's legend; 2,000 x (1 - 0.05)
# x and y ranges of the plot and the colour threshold (see the docstring)
X_TOKENS, Y_SAMPLES, BLUE_OVER_RED = 1000.0, 30.0, 50


def histogram() -> tuple[np.ndarray, np.ndarray]:
    """(length in tokens, samples) per digitised column, ascending."""
    rows = list(csv.DictReader(DATA.open(encoding="utf-8")))
    x = np.array([float(r["length_tokens"]) for r in rows])
    n = np.array([float(r["samples"]) for r in rows])
    if np.any(np.diff(x) <= 0) or np.any(n <= 0):
        raise ValueError(f"{DATA.name}: lengths must ascend and counts be positive")
    return x, n


def quantile(x: np.ndarray, n: np.ndarray, q: float) -> float:
    return float(np.interp(q, np.cumsum(n) / n.sum(), x))


def padded_means(x: np.ndarray, n: np.ndarray, cutoff: float = CUTOFF) -> list[float]:
    """E[max of b lengths] at the cutoff for each of MICRO_BATCHES, sampling the histogram with replacement."""
    xc, w = np.minimum(x, cutoff), n / n.sum()
    order = np.argsort(xc, kind="stable")
    xc, c = xc[order], np.cumsum(w[order])
    below = np.concatenate([[0.0], c[:-1]])
    return [float(((c ** b - below ** b) * xc).sum()) for b in MICRO_BATCHES]


def lognormal_fit(x: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """(mean before the cutoff, sigma) of the lognormal whose padded means match the histogram's."""
    target = np.log(padded_means(x, n))
    best = (np.inf, 0.0, 0.0)
    for mean in np.arange(150.0, 300.0, 1.0):
        for sigma in np.round(np.arange(0.40, 1.00, 0.01), 2):
            got = np.log([float(padded_tokens(mean, sigma, CUTOFF, b)) for b in MICRO_BATCHES])
            err = float(((got - target) ** 2).sum())
            if err < best[0]:
                best = (err, float(mean), float(sigma))
    return best[1], best[2]


def from_image(path: str) -> list[tuple[float, float]]:
    """Re-read the histogram from alpaca-2k.jpg (pillow, which matplotlib installs): the axes are the long dark
    lines; per pixel column inside them, the top of the tallest blue (training) or orange (test) bar; the legend box
    (the right third above 360 px) is skipped. Columns under 0.3 samples are dropped."""
    from PIL import Image

    im = np.asarray(Image.open(path).convert("RGB")).astype(int)
    dark = im.sum(axis=2) < 150
    ys = [y for y in range(im.shape[0]) if dark[y].sum() > 800]
    xs = [x for x in range(im.shape[1]) if dark[:, x].sum() > 600]
    top, bottom, left, right = ys[0] + 0.5, ys[-1] - 0.5, xs[0] + 0.5, xs[-1] - 0.5
    bar = ((im[..., 2] > im[..., 0] + BLUE_OVER_RED) & (im[..., 2] > 120)) | (
        (im[..., 0] > 190) & (im[..., 2] < 110) & (im[..., 1] > 70))
    out = []
    for col in range(int(left) + 3, int(right) - 1):
        y0 = int(top) + 1 if col < left + 0.68 * (right - left) else 360
        hit = np.flatnonzero(bar[y0:int(bottom), col])
        samples = (bottom - (hit.min() + y0)) / (bottom - top) * Y_SAMPLES if hit.size else 0.0
        if samples >= 0.3:
            out.append(((col + 0.5 - left) / (right - left) * X_TOKENS, samples))
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--from-image":
        with DATA.open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["length_tokens", "samples"])
            w.writerows([f"{x:.1f}", f"{n:.2f}"] for x, n in from_image(sys.argv[2]))
        print(f"wrote {DATA}")
    x, n = histogram()
    print(f"Alpaca2k (LitGPT alpaca-2k.jpg, 71ba9932; Llama 2 tokens assumed), {len(x)} columns:")
    print(f"  samples read {n.sum():.0f} (trained {LEGEND['trained']}), median {quantile(x, n, 0.5):.1f} "
          f"(legend {LEGEND['median']}), lowest {x[0]:.0f} (legend {LEGEND['min']}), highest {x[-1]:.0f} "
          f"(legend {LEGEND['max']}: a single sample)")
    print(f"  mean {float((x * n).sum() / n.sum()):.1f}, share over {CUTOFF}: {n[x > CUTOFF].sum() / n.sum():.3f}")
    fit_mean, fit_sigma = lognormal_fit(x, n)
    print(f"  lognormal the rows state: mean {fit_mean:.0f} (before the cutoff), sigma {fit_sigma:.2f}")
    print("  E[max of b] at the cutoff   b: " + " ".join(f"{b:>6d}" for b in MICRO_BATCHES))
    print("  histogram                     " + " ".join(f"{v:6.1f}" for v in padded_means(x, n)))
    fitted = [float(padded_tokens(fit_mean, fit_sigma, CUTOFF, b)) for b in MICRO_BATCHES]
    print("  lognormal                     " + " ".join(f"{v:6.1f}" for v in fitted))
    before = [float(padded_tokens(125.0, 0.51, CUTOFF, b)) for b in MICRO_BATCHES]
    print("  the 52K Alpaca's (125, 0.51)  " + " ".join(f"{v:6.1f}" for v in before))


if __name__ == "__main__":
    main()
