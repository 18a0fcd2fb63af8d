"""Static chart images (render/report/charts.py)."""

from __future__ import annotations

import warnings

import pytest

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


def test_many_series_stay_distinguishable_in_both_backends():
    """Past 10 series the palette repeats: colour + marker (lines) or colour + hatch (bars) stays unique up to 80
    series, in the interactive chart and the static one alike; a scaling chart's MFU line keeps its
    accelerator's colour and marker."""
    from trainsizer.render.report.charts import plotly_figure
    from trainsizer.render.report.plan_charts import scaling_chart

    chart = _scaling(40)
    fig, plt = _draw(chart)
    lines = fig.axes[0].get_lines()
    static = {(str(ln.get_color()), ln.get_marker()) for ln in lines}
    assert len(lines) == 40 and len(static) == 40
    plt.close(fig)
    traces = plotly_figure(chart).data
    assert len({(t.marker.color, t.marker.symbol) for t in traces[:40]}) == 40
    bars = plotly_figure(Chart("b", "bars", "x", "y", tuple(Series(f"s{i}", ("a",), (1.0,)) for i in range(20))))
    assert len({(t.marker.color, t.marker.pattern.shape) for t in bars.data}) == 20
    bars = Chart("b", "bars", "x", "y", tuple(Series(f"s{i}", ("a",), (1.0,)) for i in range(20)), stacked=True)
    fig, plt = _draw(bars)
    patches = [p for c in fig.axes[0].containers for p in c.patches]
    assert len({(tuple(p.get_facecolor()), p.get_hatch()) for p in patches}) == 20
    plt.close(fig)
    plan = {"scaling": [{"accelerator": f"acc-{i}", "count": c, "train_days": 10.0 / c, "mfu": 0.4}
                        for i in range(12) for c in (8, 16)]}
    series = scaling_chart(plan, "en").series
    assert series[-2].style == series[-1].style == 11 and series[-1].dash


def test_a_long_legend_goes_under_the_plot_not_over_the_title():
    """40 series (the scaling chart of a whole-catalog plan) put their legend below the x axis and make the
    chart taller; a few keep it above the plot, under the title."""
    from trainsizer.render.report.charts import Chart, Series, plotly_figure

    def chart(n):
        return Chart("c", "title", "x", "y", tuple(Series(f"s{i}", (1, 2), (i, i + 1)) for i in range(n)))

    many, few = plotly_figure(chart(40)).layout, plotly_figure(chart(3)).layout
    assert many.legend.y < 0 and many.legend.yanchor == "top" and many.height > few.height
    assert few.legend.y >= 1.0 and few.height == 460


def test_a_cjk_font_missing_from_matplotlibs_cached_list_is_found_on_the_system():
    """A CJK font installed after matplotlib cached its font list is registered from its file, and only CJK files are."""
    from trainsizer.render.report.charts import _add_system_cjk_fonts

    added: list[str] = []

    class FakeManager:
        def addfont(self, path):
            added.append(path)

    class FakeProps:
        def __init__(self, fname):
            self.fname = fname

        def get_name(self):
            return "Noto Sans CJK JP" if "CJK" in self.fname else "DejaVu Sans"

    class FakeFontManager:
        fontManager = FakeManager()
        FontProperties = FakeProps

        @staticmethod
        def findSystemFonts():
            return ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"]

    assert _add_system_cjk_fonts(FakeFontManager) == {"Noto Sans CJK JP"}
    assert added == ["/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"]


def _money(lang: str) -> Chart:
    """A time / cost chart in CNY: 2.3万 .. 71万 (the pareto chart's money axis, plan_charts.pareto_chart)."""
    return Chart("pareto", "t", "days", "CNY", (Series("options", (3.0, 9.0, 20.0), (23_000.0, 180_000.0, 710_000.0),
                                                       mode="markers", text=("a", "b", "c")),), log_x=True, y_lang=lang)


@pytest.mark.parametrize(("lang", "unit", "not_unit"), [("zh", "万", "k"), ("en", ",000", "万")])
def test_a_money_axis_writes_its_ticks_as_the_tables_write_numbers(lang, unit, not_unit):
    """plotly's own ticks are SI ("700k"): a Chinese page whose tables write 70万 got "700k" on its chart axis."""
    from trainsizer.render.numbers import fmt_num
    from trainsizer.render.report.charts import plotly_figure

    axis = plotly_figure(_money(lang)).layout.yaxis
    assert axis.tickmode == "array" and list(axis.ticktext) == [fmt_num(v, lang) for v in axis.tickvals]
    assert min(axis.tickvals) <= 23_000 and max(axis.tickvals) >= 710_000
    assert any(unit in x for x in axis.ticktext) and not any(not_unit in x for x in axis.ticktext)
    fig, plt = _draw(_money(lang))
    assert fig.axes[0].yaxis.get_major_formatter()(700_000, 0) == fmt_num(700_000, lang)
    plt.close(fig)


def test_nice_ticks_are_round_steps_that_cover_the_range():
    from trainsizer.render.report.charts import nice_ticks

    assert nice_ticks(23_000, 710_000) == [0, 200_000, 400_000, 600_000, 800_000]
    assert nice_ticks(1.2, 1.9) == pytest.approx([1.0, 1.2, 1.4, 1.6, 1.8, 2.0])
    assert nice_ticks(5.0, 5.0) == [5.0]


def test_a_log_axis_of_days_is_not_labelled_at_every_point():
    """The static (PDF) time / cost chart of a plan whose options run 0.052 to 3 days labelled each point's value,
    '0.0523819' beside '0.1068143' and '0.40.5832903' overprinted; its x axis is a measure, not a few GPU counts."""
    days = (0.0523819, 0.1068143, 0.131674, 0.26187, 0.40, 0.4583, 0.893, 0.99, 3.0)
    chart = Chart("pareto", "t", "days", "CNY", (Series("options", days, tuple(1e4 * (1 + i) for i in range(9)),
                                                        mode="markers"),), log_x=True, y_lang="zh")
    fig, plt = _draw(chart)
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    shown = [(tick.get_loc(), tick.label1.get_text()) for tick in ax.xaxis.get_major_ticks()
             if lo <= tick.get_loc() <= hi and tick.label1.get_text()]
    plt.close(fig)
    assert shown and all(len(text) <= 4 for _, text in shown), shown    # 0.05, 0.1, 0.2, 0.5, 1, 2: round values
    assert not any(loc in days[:4] for loc, _ in shown)
    # a few GPU counts keep one label each
    from dataclasses import replace

    fig, plt = _draw(replace(_scaling(1), log_x=True))
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "4", "8", "16", "32", "64", "128"]
    plt.close(fig)


def test_a_short_legend_over_a_second_axis_goes_beside_the_plot():
    """A plan's scaling chart for two accelerators (days and MFU, the MFU lines on a right-hand axis): the legend,
    placed 'best' for the left axis alone, sat over the MFU lines (a Qwen3-30B LoRA PDF)."""
    chart = _scaling(4)   # 4 days lines + 1 MFU line on the right axis
    assert any(s.axis == "y2" for s in chart.series)
    fig, plt = _draw(chart)
    ax = fig.axes[0]
    legend_box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend_box.x0 > ax.get_window_extent().x1
    plt.close(fig)
    from trainsizer.render.report.charts import plotly_figure

    assert plotly_figure(chart).layout.yaxis2.automargin is True   # the HTML's right-axis title was clipped
