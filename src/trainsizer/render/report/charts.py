"""The report's charts: one description per chart, drawn by plotly (interactive HTML) and by matplotlib
(static SVG/PNG for Markdown and PDF, no browser needed).

A chart is a `Chart` of named series; both backends draw the same series, so the HTML, Markdown and PDF
reports show the same numbers.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from functools import lru_cache

from trainsizer.render.numbers import fmt_num

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
# Past 10 series the colours repeat (a plan's scaling chart draws every accelerator searched, 40+): each block
# of 10 series gets the next marker (lines) or hatch (bars), so 80 series stay apart. (plotly name, matplotlib)
MARKERS = (("circle", "o"), ("square", "s"), ("diamond", "D"), ("triangle-up", "^"), ("triangle-down", "v"),
           ("x", "X"), ("cross", "P"), ("star", "*"))
HATCHES = (("", ""), ("/", "//"), ("\\", "\\\\"), ("x", "xx"), ("-", "--"), ("|", "||"), ("+", "++"), (".", ".."))
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "WenQuanYi Zen Hei", "Source Han Sans SC")


@dataclass(frozen=True)
class Series:
    name: str
    x: tuple
    y: tuple
    mode: str = "bar"            # bar | line | markers | lines+markers
    axis: str = "y"              # y | y2 (second y axis)
    text: tuple = ()             # hover labels, one per point
    color: str = ""              # default: the palette colour of the series' style
    dash: bool = False
    style: int = -1              # colour + marker / hatch (series_style); default: the series' position


def series_style(series: Series, position: int) -> tuple[str, int]:
    """(colour, index into MARKERS / HATCHES) of a series: colours cycle every 10, the marker every 10 more."""
    k = series.style if series.style >= 0 else position
    return series.color or PALETTE[k % len(PALETTE)], (k // len(PALETTE)) % len(MARKERS)


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    stacked: bool = False
    horizontal: bool = False
    y2_label: str = ""
    log_x: bool = False
    notes: tuple[str, ...] = field(default=())
    y_lang: str = ""  # the y axis's ticks in this language's numbers (fmt_num: 70万 / 700,000); "": the library's


# Ticks a y axis written by fmt_num gets (plotly takes the values and their texts; matplotlib formats its own)
_Y_TICKS = 6


def nice_ticks(low: float, high: float, count: int = _Y_TICKS) -> list[float]:
    """About `count` round values (1, 2 or 5 times a power of ten apart) covering low..high."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step)
    return [k * step for k in range(first, math.ceil(high / step) + 1)]


def _y_values(chart: Chart) -> list[float]:
    return [float(y) for s in chart.series if s.axis == "y" for y in s.y
            if isinstance(y, int | float) and math.isfinite(y)]


def to_plotly_div(chart: Chart) -> str:
    """An HTML <div> with the interactive chart; plotly.js itself is inlined once per page (plotly_js())."""
    return plotly_figure(chart).to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{chart.id}",
                                        config={"displaylogo": False, "responsive": True})


def plotly_figure(chart: Chart):
    """The chart as a plotly Figure."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, s in enumerate(chart.series):
        color, shape = series_style(s, i)
        kw = dict(name=s.name, hovertext=list(s.text) or None)
        if s.axis == "y2":
            kw["yaxis"] = "y2"
        elif chart.y_lang:  # the hover writes the y value as the axis does
            kw["customdata"] = [fmt_num(y, chart.y_lang) for y in s.y]
            kw["hovertemplate"] = ("%{hovertext}<br>" if s.text else "") + "%{x:.3~g} · %{customdata}<extra>%{fullData.name}</extra>"
        if s.mode == "bar":
            x, y = (s.y, s.x) if chart.horizontal else (s.x, s.y)
            fig.add_trace(go.Bar(x=list(x), y=list(y), orientation="h" if chart.horizontal else "v",
                                 marker=dict(color=color, pattern_shape=HATCHES[shape][0]), **kw))
        else:
            fig.add_trace(go.Scatter(x=list(s.x), y=list(s.y), mode=s.mode,
                                     marker=dict(size=10, color=color, symbol=MARKERS[shape][0]),
                                     line=dict(color=color, dash="dash" if s.dash else "solid"), **kw))
    x_title, y_title = (chart.y_label, chart.x_label) if chart.horizontal else (chart.x_label, chart.y_label)
    layout = dict(title=chart.title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white",
                  height=460, margin=dict(l=60, r=60, t=90, b=40), legend=_plotly_legend(len(chart.series)))
    if len(chart.series) > _LEGEND_INSIDE:  # the legend's rows below the plot, and the page height for them
        layout["height"] += _LEGEND_ROW_PX * -(-len(chart.series) // _LEGEND_PER_ROW)
    layout["xaxis"] = dict(automargin=True)
    if chart.stacked:
        layout["barmode"] = "stack"
    if chart.y2_label:
        layout["yaxis2"] = dict(title=chart.y2_label, overlaying="y", side="right", tickformat=".0%", automargin=True)
    if chart.log_x:
        layout["xaxis_type"] = "log"
    ys = _y_values(chart)
    if chart.y_lang and ys:  # plotly's own ticks are SI ("700k"), which a Chinese page's tables write 70万
        ticks = nice_ticks(min(ys), max(ys))
        layout["yaxis"] = dict(tickmode="array", tickvals=ticks, ticktext=[fmt_num(v, chart.y_lang) for v in ticks])
    fig.update_layout(**layout)
    return fig


# A legend of many entries (a plan's scaling chart: two per searched accelerator, 40+) set above the plot grew
# into the chart's title: past _LEGEND_INSIDE entries it goes under the x axis, about _LEGEND_PER_ROW a row.
_LEGEND_PER_ROW = 4
_LEGEND_ROW_PX = 22


def _plotly_legend(entries: int) -> dict:
    if entries > _LEGEND_INSIDE:
        return dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0)
    return dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0)


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js as shipped inside the plotly package (no CDN)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


@lru_cache(maxsize=1)
def _font_family() -> list[str]:
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    if not any(n in names for n in CJK_FONTS):
        # matplotlib caches the system's font list on first use (~/.cache/matplotlib), so a CJK font installed
        # after that (e.g. apt-get install fonts-noto-cjk) is missing from it until the cache is rebuilt
        names |= _add_system_cjk_fonts(font_manager)
    return [n for n in CJK_FONTS if n in names] + ["DejaVu Sans"]


def _add_system_cjk_fonts(font_manager) -> set[str]:
    """Register the system's CJK font files the cached font list lacks; the family names added."""
    added: set[str] = set()
    for path in font_manager.findSystemFonts():
        stem = path.rsplit("/", 1)[-1].lower()
        if not any(key in stem for key in ("cjk", "wqy", "sourcehansans", "notosanssc")):
            continue
        try:
            font_manager.fontManager.addfont(path)
            added.add(font_manager.FontProperties(fname=path).get_name())
        except (OSError, RuntimeError, ValueError):
            continue  # an unreadable font file: the next one may do
    return added


def cjk_font_available() -> bool:
    return len(_font_family()) > 1


def _draw(chart: Chart):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["font.family"] = _font_family()
    plt.rcParams["svg.fonttype"] = "path"   # text as outlines: the SVG needs no font where it is viewed
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=110)
    ax2 = ax.twinx() if chart.y2_label else None
    bars = [s for s in chart.series if s.mode == "bar"]
    base: dict = {}
    width = 0.8 / (1 if chart.stacked or not bars else len(bars))
    for i, s in enumerate(chart.series):
        color, shape = series_style(s, i)
        target = ax2 if s.axis == "y2" and ax2 is not None else ax
        if s.mode == "bar":
            pos = list(range(len(s.x)))
            if not chart.stacked:
                pos = [p + (bars.index(s) - (len(bars) - 1) / 2) * width for p in pos]
            bottom = [base.get(x, 0.0) for x in s.x] if chart.stacked else None
            draw = target.barh if chart.horizontal else target.bar
            kw = {"left": bottom} if chart.horizontal else {"bottom": bottom}
            draw(pos, list(s.y), width if not chart.horizontal else 0.6, label=s.name, color=color,
                 hatch=HATCHES[shape][1] or None, **kw)
            if chart.stacked:
                for x, y in zip(s.x, s.y, strict=True):
                    base[x] = base.get(x, 0.0) + (y or 0.0)
            ticks = (target.set_yticks if chart.horizontal else target.set_xticks)
            ticks(range(len(s.x)), [str(x) for x in s.x], **({} if chart.horizontal else {"rotation": 20}))
        else:
            marker = MARKERS[shape][1] if s.mode != "lines" else None
            line = "None" if s.mode == "markers" else ("--" if s.dash else "-")
            xs = list(range(len(s.x))) if s.x and isinstance(s.x[0], str) else list(s.x)
            target.plot(xs, list(s.y), label=s.name, color=color, marker=marker, linestyle=line)
    x_title, y_title = (chart.y_label, chart.x_label) if chart.horizontal else (chart.x_label, chart.y_label)
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    if chart.y_lang:
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: fmt_num(v, chart.y_lang)))
    if ax2 is not None:
        ax2.set_ylabel(chart.y2_label)
        ax2.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    if chart.log_x:
        ax.set_xscale("log")
        counts = sorted({x for s in chart.series for x in s.x})
        if len(counts) <= 12 and all(float(x).is_integer() for x in counts):  # a few GPU counts: label each one
            ax.set_xticks(counts, [f"{x:,g}" for x in counts])
            ax.minorticks_off()
        else:  # a measure (days): round 1-2-5 steps, not every point's value ("0.0523819" over "0.106814")
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_title(chart.title)
    ax.grid(alpha=0.3)
    _legend(fig, ax, ax2)
    fig.tight_layout()
    return fig, plt


# Entries a legend holds inside the plot; past that (a plan's scaling chart draws every searched accelerator, 40+
# lines) it covered the lines and overflowed the figure, and matplotlib warned "Tight layout not applied" on
# every `plan --report`: it then goes beside the plot in columns of at most _LEGEND_ROWS and the figure widens.
_LEGEND_INSIDE = 10
_LEGEND_ROWS = 28


def _legend(fig, ax, ax2) -> None:
    handles, labels = ax.get_legend_handles_labels()
    h2: list = []
    if ax2 is not None:
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    if not handles:
        return
    if len(handles) <= _LEGEND_INSIDE and not h2:  # 'best' sees the left axis only: a right one's lines it covers
        ax.legend(handles, labels, fontsize=8, loc="best")
        return
    cols = -(-len(handles) // _LEGEND_ROWS)
    rows = -(-len(handles) // cols)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width + 2.5 * cols, max(height, 0.14 * rows + 1.2))
    ax.legend(handles, labels, fontsize=7, ncol=cols, loc="upper left", borderaxespad=0,
              bbox_to_anchor=(1.1 if ax2 is not None else 1.02, 1.0))


def to_static(chart: Chart, fmt: str = "svg") -> bytes:
    """The chart as a static SVG or PNG drawn by matplotlib."""
    fig, plt = _draw(chart)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    return buf.getvalue()
