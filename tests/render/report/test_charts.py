"""Static chart images (render/report/charts.py)."""

from __future__ import annotations

import warnings

from trainsizer.render.report.charts import Chart, Series, _draw, to_static


def _scaling(lines: int) -> Chart:
    counts = (1, 2, 4, 8, 16, 32, 64, 128)
    series = tuple(Series(f"gpu-{i}: days to train", counts, tuple(10.0 / (c * (1 + i)) for c in counts),
                          mode="lines+markers") for i in range(lines))
    mfu = tuple(Series(f"gpu-{i}: MFU", counts, tuple(0.4 for _ in counts), mode="lines+markers", axis="y2",
                       dash=True) for i in range(lines // 4))
    return Chart("scaling", "Time to train and MFU vs GPU count", "GPUs", "days", (*series, *mfu), y2_label="MFU")


def test_a_legend_of_many_lines_goes_beside_the_plot_without_a_layout_warning():
    """A plan's scaling chart draws every searched accelerator (40+ lines): the legend used to cover the plot
    and overflow the image, and matplotlib warned on every `plan --report`."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig, plt = _draw(_scaling(40))
        assert to_static(_scaling(40), "png").startswith(b"\x89PNG")
    ax = fig.axes[0]
    legend_box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend_box.x0 > ax.get_window_extent().x1   # beside the plot, not over it
    assert fig.get_size_inches()[0] > 8
    plt.close(fig)


def test_a_short_legend_stays_inside_and_the_size_is_kept():
    fig, plt = _draw(_scaling(3))
    ax = fig.axes[0]
    legend_box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend_box.x1 <= ax.get_window_extent().x1 + 1
    assert tuple(fig.get_size_inches()) == (8, 4.2)
    plt.close(fig)
