"""The plan as JSON: a versioned pydantic schema (`Plan`), shipped as JSON Schema in docs/plan.schema.json.

Stability: fields are only added (minor version) while `schema_version` starts with "1."; a field's meaning
never changes within a major version. 1.1 added the `*_msg` fields: the catalogue message of each sentence,
so a report renders one plan in either language (`plan.texts.localise`); 1.2 added `leaves_memory_floor`; 1.3
`strategy.recompute_method` / `recompute_num_layers` (the search's partial recompute) and `pareto[].cost_basis`; 1.4
`next_count` (a pinned count's next count that fits without offload); 1.5 `tier.per_node` / `scaleup_domains` /
`scaleup_domain_gpus` (an NVL72 job's racks beside its trays); 1.6 the build-out's `network.nvlink.domain_size_gpus` /
`job_gpus_per_domain` (what an NVL72 job uses of each rack's domain); 1.7 `network.nvlink.job_gpus_by_domain` (its GPUs in
each rack it buys); 1.8 `options[].accuracy` (the option's held-out accuracy band, as `estimate --json` accuracy);
1.9 `strategy.pp_first_stage_layers` / `pp_last_stage_layers` (the search's uneven pipeline splits); 1.10
`search.stack_options` / `layouts_dropped_by_stack_options` (the job's stack options carried into the search).
Blocks marked "as `estimate --json`" carry the same keys as that
command's output (memory, time, cost, energy), so one reader handles both.

Extension points: `PlanOption.build` and `Plan.build` hold the build-out blocks (bill of materials, node,
network, storage, facility, software, risks, acceptance, phases) keyed by block name; they are None until
those blocks are computed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainsizer.plan.texts import MessageRef, WithTexts

SCHEMA_VERSION = "1.10"

MSG = ("the catalogue message the text beside it was written from: render it to read the plan in another "
       "language (plan/texts.py)")
MSGS = "the catalogue message of each text beside it (None: a text without one, shown as written)"

Objective = Literal["time", "cost", "cost_under_deadline", "time_within_budget"]
TierId = Literal["single-gpu", "single-node", "few-nodes", "large-cluster"]
Resource = Literal["memory", "compute", "network", "deadline", "budget", "constraints"]


class _Out(WithTexts):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    """A block whose documented keys are listed; more keys (from the estimators) may follow."""

    model_config = ConfigDict(extra="allow")


class NetworkOut(_Out):
    id: str = Field(description="catalog network id, or 'custom'")
    kind: str = Field(description="ib | roce | efa | ethernet")
    nics_per_node: int
    gbps_per_nic: float = Field(description="line rate per NIC, 10^9 bit/s")
    node_gb_s: float = Field(description="expected payload per node and direction, 10^9 B/s")


class HardwareOut(_Out):
    accelerator: str = Field(description="catalog accelerator id")
    accelerator_name: str
    server: str | None = Field(description="catalog server id; None: no catalog server (a generic box)")
    count: int = Field(description="GPUs in the job")
    per_node: int = Field(description="GPUs per node used by the job")
    nodes: int
    network: NetworkOut | None = Field(description="scale-out network; None for a single node")
    memory_gib_per_gpu: float


class StrategyOut(_Out):
    tp: int
    pp: int
    vpp: int
    dp: int
    cp: int
    ep: int
    etp: int | None = Field(None, description="the routed experts' tensor-parallel degree (Megatron-Core "
                            "expert_tensor_parallel_size); None: a dense model")
    zero: int = Field(description="ZeRO stage 0-3 (FSDP full shard = 3)")
    shard_group: int = Field(description="GPUs that shard the states: the ZeRO group under zero 1 / 2 / 3, FSDP's "
                             "hybrid shard group; 0: shard over all of DP")
    micro_batch: int
    recompute: str = Field(description="none | selective | full")
    recompute_method: str | None = Field(None, description="with recompute full: Megatron's recompute_method (block: "
                                         "the first recompute_num_layers layers of each model chunk re-run, the "
                                         "others keep their activations); None: every layer re-run")
    recompute_num_layers: int | None = Field(None, description="layers per model chunk under recompute_method")
    offload: str = Field(description="none | optimizer | optimizer+params")
    sequence_parallel: bool
    distributed_optimizer: bool
    framework: str = Field(description="framework named in the job, or 'auto' (chosen per strategy)")
    pp_first_stage_layers: int | None = Field(None, description="the first pipeline rank's decoder layers where the "
                                              "layout states them (Megatron-Core num_layers_in_first_pipeline_stage: "
                                              "layers that do not divide by pp x vpp); None: an even split")
    pp_last_stage_layers: int | None = Field(None, description="the last pipeline rank's decoder layers (Megatron-Core "
                                             "num_layers_in_last_pipeline_stage); None: an even split")


class MemoryOut(_Open):
    """As `estimate --json` memory."""

    per_gpu_gib: float
    capacity_gib: float
    fits: bool
    headroom_gib: float


class TimeOut(_Open):
    """As `estimate --json` time."""

    step_s: float
    tokens_per_s: float
    mfu: float
    train_days: float
    gpu_hours: float


class CostOut(_Open):
    """As `estimate --json` cost: `rent` and/or `buy` blocks with low / mid / high and their currency."""

    currency: str


class Meets(_Out):
    deadline: bool | None = Field(description="None: the job has no deadline")
    budget: bool | None = Field(description="None: no budget, or no price in the budget's currency")


class Score(_Out):
    metric: Literal["cost", "train_days"]
    value: float | None = Field(description="None: no price for this option in the plan's currency")
    currency: str | None = None
    uncertainty_fraction: float = Field(description="differences from the best-ranked option below this fraction "
                                          "are ties: the wider of the two options' job classes' held-out spread "
                                          "about its median (estimate/data/accuracy_bands.yaml spread_pct), at "
                                          "least search.yaml tie_fraction")
    cost: float | None = Field(None, description="what the job costs in the plan's currency: rent = GPU-hours x "
                               "price; buy = the accelerators' purchase price + the job's electricity")
    cost_basis: Literal["rent", "buy"] | None = Field(
        None, description="which one `cost` is; every output labels it 'rent' or 'buy, full price' "
        "(render.cost_basis); a purchase's amortised share is cost.buy.mid, labelled 'buy, amortised over N years'")


class ScaleOut(_Out):
    """How well the option's size is documented (catalog/evidence/scale.yaml, catalog.scale)."""

    level: Literal["demonstrated", "designed", "beyond"]
    documented_gpus: int = Field(description="the documented size the level is judged against")
    doublings: int = Field(0, description="beyond only: doublings past the documented size")
    platform: str | None = None
    evidence: str | None = Field(None, description="what documents that size (run, benchmark or reference design)")
    sources: list[str] = []
    date: str | None = None
    software: list[str] = Field([], description="what the platform's training stack documents about scale")


class PlanOption(_Out):
    id: str = Field(description="stable key: '<accelerator> x<count>[ <network>]'")
    rank: int = Field(description="1 = recommended")
    hardware: HardwareOut
    strategy: StrategyOut
    memory: MemoryOut
    time: TimeOut
    cost: CostOut
    energy: dict[str, Any] = Field(description="as `estimate --json` energy")
    meets: Meets
    score: Score
    tie: bool = Field(description="within the model's uncertainty of the recommended option")
    leaves_memory_floor: bool | None = Field(None, description="its layout leaves search.yaml memory_headroom_min of "
                                             "GPU memory free (false: the plan's memory risk would flag it); 1.2")
    why: str = Field(description="how this option compares with the recommended one (or, for it, why it wins)")
    why_msg: MessageRef | None = Field(None, description=MSG)
    strategies_evaluated: int
    strategies_feasible: int
    notes: list[str] = []
    notes_msg: list[MessageRef | None] | None = Field(None, description=MSGS)
    scale: ScaleOut | None = None
    accuracy: dict[str, Any] | None = Field(None, description="as `estimate --json` accuracy: the option's job class "
                                            "and the error band of held-out published runs of that class; 1.8")
    build: dict[str, Any] | None = Field(None, description="build-out blocks for this option, by block name")


class ParetoPoint(_Out):
    id: str = Field(description="PlanOption.id")
    train_days: float
    cost: float
    currency: str
    cost_basis: str | None = Field(None, description="rent | buy: every point of the front is priced on one basis, "
                                   "the best-ranked option's (search.rank.front_basis)")


class Tier(_Out):
    id: TierId
    gpus: int
    nodes: int
    per_node: int | None = Field(None, description="GPUs per node (a host, an NVL72 compute tray)")
    scaleup_domains: int | None = Field(None, description="scale-up domains the GPUs take (2 NVL72 racks for 128 "
                                        "GB200); None: the domain is one node, so nodes says it")
    scaleup_domain_gpus: int | None = Field(None, description="GPUs one scale-up domain holds (72 on GB200 NVL72)")
    decided_by: Resource = Field(description="what sets the size of the recommended option")
    why: str
    why_msg: MessageRef | None = Field(None, description=MSG)


class Relaxation(_Out):
    change: str = Field(description="what to relax")
    change_msg: MessageRef | None = Field(None, description=MSG)
    result: str = Field(description="what it buys")
    result_msg: MessageRef | None = Field(None, description=MSG)


class Binding(_Out):
    constraint: Resource
    detail: str = Field(description="which constraint binds and by how much")
    detail_msg: MessageRef | None = Field(None, description=MSG)
    needed: float | None = None
    allowed: float | None = None
    unit: str | None = None
    relaxations: list[Relaxation] = []


class SearchOut(_Out):
    evaluated: int = Field(description="strategies judged (rules + memory), summed over hardware options")
    feasible: int = Field(description="strategies that obey every rule and fit; each gets a step time")
    memory_evaluations: int = Field(description="distinct rules + memory evaluations: options of the same "
                                                "shape (GPU count, GPUs per node, scale-up domain) share them")
    seconds: float
    hardware_options: int = Field(description="accelerator x server x network x count options searched")
    hardware_options_pruned: int = Field(description="options skipped by the memory lower bound")
    hardware_options_not_scaling: int = Field(0, description="larger GPU counts skipped once two steps up the "
                                                             "count ladder shortened the step by less than the "
                                                             "tie fraction")
    hardware_options_feasible: int
    excluded_accelerators: dict[str, str] = Field(description="accelerator id -> why it was not searched")
    excluded_accelerators_msg: dict[str, MessageRef | None] | None = Field(None, description=MSGS)
    dominated_networks: list[str] = []
    stack_options: dict[str, Any] = Field({}, description="the stack options the job's strategy states (compile_loss, "
                                          "attention_kernel, moe_torch_grouped_mm, ...: spec.STACK_OPTION_FIELDS), "
                                          "carried into every layout searched; its layout fields are not")
    layouts_dropped_by_stack_options: int = Field(0, description="strategies left out because a stated stack option "
                                                  "does not hold on them (the estimate's rules)")


class OptionSummary(_Out):
    """One line per feasible hardware option (its best strategy), in rank order."""

    id: str
    accelerator: str
    count: int
    nodes: int
    network: str | None
    layout: str = Field(description="the best strategy's layout for people (layout_text.py), e.g. 'TP8 PP4 DP16 "
                        "mb1, distributed optimizer, selective recompute'; the options list it field by field under `strategy`")
    train_days: float
    cost: float | None
    cost_basis: Literal["rent", "buy"] | None = None
    currency: str | None
    meets: Meets
    scale: Literal["demonstrated", "designed", "beyond"] | None = None
    leaves_memory_floor: bool | None = Field(None, description="as PlanOption.leaves_memory_floor; 1.2")


class GoalOut(_Out):
    objective: Objective
    deadline_days: float | None = None
    budget: float | None = None
    currency: str
    procurement: Literal["rent", "buy", "either"]


class Plan(_Out):
    """What to buy or rent for a training job, and why."""

    schema_version: str = SCHEMA_VERSION
    job: dict[str, Any] = Field(description="the resolved job, as `trainsizer check --json`")
    goal: GoalOut
    search: SearchOut
    tier: Tier | None = Field(description="None when nothing satisfies the job")
    recommended: PlanOption | None = Field(description="options[0] when the job can be satisfied, else None")
    options: list[PlanOption] = Field(description="the top options in full (best strategy per hardware option), "
                                      "best first; the Pareto points and ties are always included")
    hardware_options: list[OptionSummary] = Field(description="every feasible hardware option, best first")
    ties: list[str] = Field(description="ids of options tied with the recommended one")
    pareto: list[ParetoPoint] = Field(description="time-to-train vs cost front, fastest first")
    binding: Binding | None = Field(description="when nothing satisfies the job: what binds, by how much")
    next_count: OptionSummary | None = Field(None, description="when the job pins the GPU count and every layout "
                                             "at it offloads to the CPU: the next larger count of the same hardware "
                                             "that fits on the GPUs alone, searched and priced as every option but "
                                             "not ranked (plan/next_count.py); 1.4. Since 1.5 also, when the pinned "
                                             "count fits: a whole server fewer or more that is faster for no more "
                                             "money or cheaper for no more time, beyond the tie band")
    notes: list[str] = []
    notes_msg: list[MessageRef | None] | None = Field(None, description=MSGS)
    build: dict[str, Any] | None = Field(None, description="build-out blocks of the recommended option")


def json_schema() -> dict[str, Any]:
    """The plan's JSON Schema (what docs/plan.schema.json holds)."""
    schema = Plan.model_json_schema()
    schema["title"] = "trainsizer plan"
    return schema
