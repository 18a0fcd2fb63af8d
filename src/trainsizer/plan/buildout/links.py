"""Cables and transceivers for a set of links, chosen by line rate and distance from the fabric rules.

Medium by reach (NVIDIA LinkX, fabric.yaml media_by_gbps): the first of passive DAC, active copper, AOC,
multimode SR, single-mode DR, single-mode FR whose reach covers the run. Counts per link come from the parts'
`links` field: a twin-port OSFP transceiver or a 1:2 splitter cable serves 2 links; each optical link needs one
fibre; a switch-to-switch optical link has a switch transceiver port at both ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import ceil_div

ORDER = ("dac", "acc", "aoc", "copper", "mmf", "smf", "smf_long")


@dataclass(frozen=True)
class PartCount:
    part: str | None  # catalog part id; None when no rule covers this line rate
    quantity: int
    role: Any  # a catalogue message, e.g. "node-leaf cable", "leaf-spine switch transceiver"
    medium: str
    note: Any = ""


def _reach(catalog, spec, switch_both_ends: bool) -> float:
    if isinstance(spec, str):
        return catalog.part(spec).reach_m or 0.0
    ends = [k for k in spec if not (switch_both_ends and k == "nic")]
    return min(catalog.part(spec[k]).reach_m or 0.0 for k in ends)


def choose_medium(catalog, gbps: float, distance_m: float,
                  switch_both_ends: bool = False) -> tuple[str, object] | None:
    """(medium, part id or {switch, nic, fibre}) for one link of `gbps` over `distance_m`; None if no rule."""
    table = rules.value("fabric", "media_by_gbps")
    options = table.get(int(gbps))
    if options is None:
        return None
    for medium in ORDER:
        spec = options.get(medium)
        if spec is not None and _reach(catalog, spec, switch_both_ends) >= distance_m:
            return medium, spec
    return None


def link_parts(catalog, links: int, gbps: float, distance_m: float, span: str,
               switch_both_ends: bool) -> list[PartCount]:
    """Parts for `links` links of one span (e.g. 'node-leaf'); empty for zero links."""
    if links <= 0:
        return []
    where = msg(f"span_{span}")
    choice = choose_medium(catalog, gbps, distance_m, switch_both_ends)
    if choice is None:
        return [PartCount(None, links, msg("link_role_link", span=where), "unknown",
                          msg("link_note_no_rule", gbps=f"{gbps:g}", m=f"{distance_m:g}"))]
    medium, spec = choice
    if isinstance(spec, str):
        part = catalog.part(spec)
        return [PartCount(spec, ceil_div(links, part.links), msg("link_role_cable", span=where), medium,
                          msg("link_note_per_cable", links=links, per=part.links))]
    sw, nic = catalog.part(spec["switch"]), catalog.part(spec["nic"])
    out = [PartCount(spec["switch"], ceil_div(links, sw.links) * (2 if switch_both_ends else 1),
                     msg("link_role_switch_transceiver", span=where), medium,
                     msg("link_note_per_transceiver", links=links, per=sw.links))]
    if not switch_both_ends:
        out.append(PartCount(spec["nic"], ceil_div(links, nic.links), msg("link_role_nic_transceiver", span=where),
                             medium, msg("link_note_per_transceiver", links=links, per=nic.links)))
    out.append(PartCount(spec["fibre"], links, msg("link_role_fibre", span=where), medium, msg("link_note_one_fibre")))
    return out
