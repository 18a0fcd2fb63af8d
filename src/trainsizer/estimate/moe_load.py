"""The busiest expert-parallel rank's load under a trained router's own routing (Job.moe_routing natural).

A synchronous MoE layer waits, at its dispatch / combine, on the EP rank whose local experts received the most routed
tokens; dropless routing (no capacity factor) gives that rank more than its balanced share whenever the experts'
popularity is uneven. The estimate charges every expert of a GPU the busiest rank's load over the balanced share
(Training.moe_capacity_factor: the grouped GEMMs, the permutation copies, the all-to-all's receive). Here that load is
derived, not fitted (docs/known-gaps.md 318):

- the experts' popularity on real text: the Gini coefficient of the per-expert token counts that DODOCO measured on
  pretrained MoE checkpoints (Ma, Eitzinger, Koestler, Wellein, "Diagnosing Overhead in Dispatch Operations:
  Cross-architecture Observatory", arXiv 2605.20982v1, 2026-05-20, abstract: MHA 0.105 and Mamba-2 0.150 on wikitext,
  MLA "above 0.24 on every real-text condition", GQA between the bands; real text shows no batch-size trend);
  perf_constants.yaml moe_natural_load.expert_gini, by attention kind;
- a Gini coefficient G of normally spread loads is sigma / (mu sqrt(pi)) (Gini's mean difference of a normal,
  2 sigma / sqrt(pi), over twice the mean), so the experts' coefficient of variation is G sqrt(pi);
- a rank holds L = E / EP experts (Megatron-Core places them contiguously); taken as independent, its load's
  coefficient of variation is cv_e / sqrt(L), with the multinomial spread of its routed slots (a Poisson count: 1 /
  sqrt(slots)) added in quadrature;
- the expected maximum of EP such loads is the mean plus the expected largest of EP standard normals times the
  spread, the latter by Blom's approximation Phi^-1((n - 0.375) / (n + 0.25)) (Blom 1958, "Statistical Estimates and
  Transformed Beta-Variables"; within 0.03 of the exact order statistic for n = 2..32).

At EP 1 no rank waits on another: 1.0. A job that states moe_capacity_factor (a measured load, or a padded token
drop's capacity) is charged what it states.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

BLOM_ALPHA = 0.375  # Blom (1958): plotting position (i - alpha) / (n - 2 alpha + 1) for normal order statistics


def expected_max_normal(n: Any) -> np.ndarray:
    """Expected largest of n independent standard normals (Blom's approximation); 0 at n <= 1."""
    arr = np.atleast_1d(np.asarray(n, float))
    inv = NormalDist().inv_cdf
    out = np.array([inv((k - BLOM_ALPHA) / (k - 2 * BLOM_ALPHA + 1)) if k > 1 else 0.0 for k in arr.ravel()])
    return out.reshape(arr.shape) if np.ndim(n) else out[0]


def expert_gini(attention: str, heads: int, kv_heads: int, ginis: dict[str, float]) -> float:
    """The per-expert Gini for the model's attention kind (perf_constants.yaml moe_natural_load.expert_gini): mla,
    mha (as many KV heads as query heads) or gqa."""
    if attention == "mla":
        return float(ginis["mla"])
    return float(ginis["mha" if kv_heads in (0, heads) else "gqa"])


def natural_rank_load(experts: int, ep: Any, routed_slots: Any, gini: float) -> np.ndarray:
    """The busiest of `ep` ranks' routed tokens over the mean rank's, a layer and micro-batch: `experts` routed experts
    of a layer placed E / EP a rank, `routed_slots` the mean rank's routed token-slots (tokens x top-k / EP a rank's
    share of its EP group's), `gini` the experts' popularity (module docstring)."""
    ep = np.maximum(np.asarray(ep, float), 1.0)
    local = np.maximum(experts / ep, 1.0)
    cv_expert = gini * math.sqrt(math.pi)
    cv_rank = np.sqrt(cv_expert ** 2 / local + 1.0 / np.maximum(np.asarray(routed_slots, float), 1.0))
    return np.where(ep > 1, 1.0 + expected_max_normal(ep) * cv_rank, 1.0)
