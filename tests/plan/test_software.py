import yaml

from trainsizer.plan.buildout.network import network_block
from trainsizer.plan.buildout.slurm_files import expand_hostlist, parse_conf
from trainsizer.plan.buildout.software import software_block


def _sw(b, cores=40, ram=500.0):
    return software_block(b, network_block(b), cores, ram)


def _nodes_in(entries, key="NodeName"):
    return [n for e in entries if key in e for n in expand_hostlist(e.get("Nodes", e[key]))]


def test_slurm_files_parse_and_match_the_plan(build, catalog):
    b = build(hardware={"count": 512}, global_batch={"sequences": 512})
    sw = _sw(b)
    conf = parse_conf(sw.files["slurm.conf"])
    node = next(e for e in conf if "NodeName" in e)
    assert len(expand_hostlist(node["NodeName"])) == 64
    assert node["Gres"] == "gpu:h100:8"
    server = catalog.server("dgx-h100")
    assert int(node["CoresPerSocket"]) * int(node["SocketsPerBoard"]) == server.cpu_cores
    assert int(node["RealMemory"]) <= server.ram_gib * 1024  # must not exceed what slurmd detects
    part = next(e for e in conf if "PartitionName" in e)
    assert part["Nodes"] == node["NodeName"]
    assert {"GresTypes": "gpu"} in conf and {"SelectType": "select/cons_tres"} in conf
    gres = parse_conf(sw.files["gres.conf"])
    assert gres[0] == {"AutoDetect": "nvml"} and gres[1]["Count"] == "8"
    topo = parse_conf(sw.files["topology.conf"])
    leaves = [e for e in topo if "Nodes" in e]
    members = [n for e in leaves for n in expand_hostlist(e["Nodes"])]
    assert sorted(members) == sorted(expand_hostlist(node["NodeName"]))  # every node on exactly one leaf
    assert len(leaves) == 2  # two 32-node scalable units
    assert any("Switches" in e for e in topo)


def test_kubernetes_manifest_for_cloud_fabric(build):
    sw = _sw(build(hardware={"network": "efa-v3"}))
    assert "Kubernetes" in sw.scheduler.value and "slurm.conf" not in sw.files
    doc = yaml.safe_load(sw.files["pytorchjob.yaml"])
    assert doc["apiVersion"] == "kubeflow.org/v1" and doc["kind"] == "PyTorchJob"
    specs = doc["spec"]["pytorchReplicaSpecs"]
    assert sum(s["replicas"] for s in specs.values()) == 2
    limits = specs["Master"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8}


def test_amd_and_ascend_stacks(build):
    amd = _sw(build(hardware={"accelerator": "mi300x"}))
    assert amd.collectives == "RCCL" and "ROCm" in amd.toolkit
    assert parse_conf(amd.files["gres.conf"])[0] == {"AutoDetect": "rsmi"}
    npu = _sw(build(hardware={"accelerator": "ascend-910b", "network": "roce-200"}))
    assert npu.collectives == "HCCL" and "CANN" in npu.toolkit
    assert "davinci" in npu.files["gres.conf"] and "Gres=npu:" in npu.files["slurm.conf"]


def test_a_megatron_layout_names_each_vendors_stack(build):
    """TP 8 on MI300X runs ROCm's Megatron-LM (AMD Primus, Transformer Engine for ROCm), not NVIDIA's Megatron-Core
    with Transformer Engine; the row carries its own source and says what the estimate timed (en / zh)."""
    from trainsizer.messages import Msg, render

    amd = _sw(build(hardware={"accelerator": "mi300x"}, strategy={"fsdp": "none", "tp": 8})).framework
    nv = _sw(build(strategy={"fsdp": "none", "tp": 8})).framework
    assert "ROCm" in str(amd.value) and "Primus" in str(amd.value) and amd.source == "rocm_primus_megatron"
    assert "Megatron-Core" in str(nv.value) and "ROCm" not in str(nv.value) and nv.source == "software_stack_ref"
    if isinstance(amd.value, Msg):
        assert "ROCm" in render(amd.value.key, "zh", amd.value.params)


def test_framework_follows_strategy(build):
    assert "FSDP" in _sw(build()).framework.value
    assert "Megatron" in _sw(build(strategy={"fsdp": "none", "tp": 8})).framework.value
    assert "PEFT" in _sw(build(method="lora", strategy={"fsdp": "none"})).framework.value


def test_architecture_outside_the_matrix_says_so(build):
    from types import SimpleNamespace

    from trainsizer.plan.buildout.software import stack_for

    key, stack = stack_for(SimpleNamespace(arch="Feynman", vendor="nvidia", name="NVIDIA Feynman"))
    assert key == "unknown" and "reference compatibility matrix" in stack["driver_min"]
    assert stack["collectives"] == "NCCL"


def test_nvl72_slurm_node_line_is_the_tray_not_the_job_minimum(build, catalog):
    """slurm.conf declares what slurmd reports on a GB200 compute tray (2 Grace: 144 cores, the tray's share of
    the rack's LPDDR5X), not the 21 cores the job needs, so jobs may use the whole tray."""
    b = build(hardware={"accelerator": "gb200", "count": 128, "per_node": 4, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": 128})
    node = next(e for e in parse_conf(_sw(b, cores=21, ram=249.0).files["slurm.conf"]) if "NodeName" in e)
    rack = catalog.server("gb200-nvl72")
    assert int(node["CoresPerSocket"]) * int(node["SocketsPerBoard"]) == rack.cpu_cores * 4 // 72 == 144
    assert int(node["RealMemory"]) <= rack.ram_gib * 4 / 72 * 1024 and int(node["RealMemory"]) > 249 * 1024


def test_newer_pytorch_of_a_stack_is_the_matrix_newest_release(build):
    """Hopper and Blackwell plans name PyTorch 2.12 (cu130; NCCL 2.29.7), the newest release in the reference
    matrix (software.yaml), not 2.11."""
    sw = _sw(build())
    assert "2.12 (cu130" in sw.pytorch and "2.11" not in sw.pytorch
    sw = _sw(build(hardware={"accelerator": "b200"}))
    assert "2.12 (cu130" in sw.pytorch


def test_sharp_only_where_it_pays(build):
    """NCCL_COLLNET_ENABLE on a SHARP fabric only when the gradient all-reduce spans >= 4 NVLink domains: 2 nodes
    gain nothing (a ring already sends S per NIC), 64 rail-optimised nodes do; RoCE never."""
    from trainsizer.plan.buildout.network import network_block

    def env(b):
        return software_block(b, network_block(b), 64, 512.0).env

    assert "NCCL_COLLNET_ENABLE" not in env(build())
    big = build(hardware={"count": 512}, global_batch={"sequences": 512})
    assert env(big)["NCCL_COLLNET_ENABLE"] == "1"
    assert "NCCL_COLLNET_ENABLE" not in env(build(hardware={"count": 512, "network": "roce-400"},
                                                  global_batch={"sequences": 512}))


def test_rented_cluster_gets_the_providers_scheduler_not_an_on_premises_one(build):
    """A rented cluster's scheduler is the provider's (managed Slurm or Kubernetes): the block says so, what to ask
    for (in en and zh), cites the providers' docs, and writes both layouts to hand over; nothing says 'on
    premises'. NVL72 adds topology/block and IMEX."""
    sw = _sw(build(goal={"procurement": "rent"}))
    assert sw.scheduler.source == "cloud_managed_schedulers" and "Slurm >=" not in sw.scheduler.value
    assert "premises" not in sw.scheduler.rule and "23.11" in sw.scheduler.rule
    assert {"pytorchjob.yaml", "slurm.conf", "gres.conf"} <= set(sw.files)
    from trainsizer.plan.texts import say

    assert "服务商" in say(sw.scheduler.rule_msg.model_dump(), "zh")
    nvl = _sw(build(goal={"procurement": "rent"}, constraints={"cooling": "liquid"}, global_batch={"sequences": 128},
                    hardware={"accelerator": "gb200", "count": 128, "per_node": 4}))
    assert "IMEX" in nvl.scheduler.rule and "topology.conf" in nvl.files
    bought = _sw(build())
    assert bought.scheduler.value.startswith("Slurm >=") and "pytorchjob.yaml" not in bought.files


def test_one_rented_instance_needs_no_scheduler(build):
    sw = _sw(build(goal={"procurement": "rent"}, hardware={"count": 8, "network": None}))
    assert sw.scheduler.source == "cloud_managed_schedulers" and not sw.files
    assert "torchrun" in sw.scheduler.rule


def test_every_stack_text_with_words_reads_in_chinese():
    """A stack's version with words or brackets ('580.65.06 (R580 LTSB, CUDA 13.x)') has its catalogue message
    (stack_<family>_<field>), so a Chinese page writes it with full-width brackets; the Hopper row had none
    and read '580.65.06 (R580 LTSB, CUDA 13.x)' among Chinese text."""
    import re

    from trainsizer.messages import Msg, render
    from trainsizer.plan.buildout import rules
    from trainsizer.plan.buildout.software import _said

    # brackets, a clause or a word to translate; a name and its version ('ROCm 7.0.2') needs none
    worded = re.compile(r"[(;:]| or |n/a")
    missing = {}
    for family, stack in rules.value("software", "stacks").items():
        for field in ("driver_min", "cuda", "nccl", "pytorch", "notes"):
            key = f"stack_notes_{family}" if field == "notes" else None
            said = _said(family, field, stack, key)
            if isinstance(said, Msg):
                zh = render(said.key, "zh", said.params)
                assert "(" not in zh and ")" not in zh, (said.key, zh)
            elif worded.search(str(said)):
                missing[f"{family}.{field}"] = said
    assert not missing, f"no catalogue message (plan/data/buildout_text.yaml) matches these texts: {missing}"


def test_the_offload_framework_reason_names_the_mode_in_words(build):
    """The DeepSpeed row's reason read '卸载 optimizer+params' (the job's token) on a Chinese page."""
    from trainsizer.plan.texts import say

    framework = _sw(build(strategy={"fsdp": "none", "zero": 3, "offload": "optimizer+params"})).framework
    assert framework.rule == "optimizer and parameters offloaded to host memory"
    assert say(framework.rule_msg.model_dump(), "zh") == "卸载优化器状态与参数到主机内存"


def _one_box(blocks, **hardware):
    return blocks(model="llama-3.1-8b", method="lora", goal={"procurement": "buy"},
                  hardware={"network": None, **hardware},
                  strategy={"tp": 1, "pp": 1, "fsdp": "none", "micro_batch": 1, "recompute": "full"},
                  global_batch={"sequences": 8})


def test_a_workstation_needs_no_scheduler_and_gets_no_slurm_files(blocks):
    """One bought 4 x L40S box is a workstation: torchrun starts the job, no Slurm (was 'Slurm >= 23.11' with
    slurm.conf, while its roll-out said one node needs no scheduler)."""
    out = _one_box(blocks, accelerator="l40s", count=4, per_node=4)
    sw = out.software
    assert out.facility.site == "workstation"
    assert "torchrun" in sw.scheduler.value and "Slurm" not in sw.scheduler.value
    assert not {"slurm.conf", "gres.conf", "pytorchjob.yaml"} & set(sw.files)


def test_one_rack_server_needs_no_scheduler_but_may_queue_with_slurm(blocks):
    """One bought DGX H100: torchrun starts the job; the one-node Slurm files stay as the optional queue of a box
    several people share, and the reason says so."""
    sw = blocks(hardware={"count": 8, "network": None}).software
    assert "torchrun" in sw.scheduler.value and "Slurm" in sw.scheduler.rule
    assert {"slurm.conf", "gres.conf"} <= set(sw.files)


def test_a_cluster_still_gets_slurm(blocks):
    sw = blocks().software
    assert sw.scheduler.value.startswith("Slurm >= ") and "slurm.conf" in sw.files


def test_an_amd_plan_says_when_its_time_assumes_pytorch_sdpa_on_rocm(build):
    """An FSDP pre-training job resolves to torchtitan, whose attention is PyTorch SDPA: on ROCm AOTriton at the rate
    of AMD's TorchTitan profile, well below Primus-Turbo / Transformer Engine; the plan says so on AMD parts only,
    and not where the job states the vendor kernels."""
    from trainsizer.plan.texts import say

    amd = build(method="pretrain", hardware={"accelerator": "mi300x"})
    rule = _sw(amd).framework
    assert "AOTriton" in rule.rule and "attention_kernel native" in rule.rule
    assert "AOTriton" in say(rule.rule_msg.model_dump(), "zh")
    native = build(method="pretrain", hardware={"accelerator": "mi300x"}, strategy={"attention_kernel": "native"})
    assert "AOTriton" not in _sw(native).framework.rule
    assert "AOTriton" not in _sw(build(method="pretrain")).framework.rule
    assert "AOTriton" not in _sw(build(hardware={"accelerator": "mi300x"}, strategy={"fsdp": "none", "tp": 8})).framework.rule
    # CDNA 4 has its own measured AOTriton rate (HipKittens' torch baseline on MI355X): the note states its figures
    cdna4 = _sw(build(method="pretrain", hardware={"accelerator": "mi355x"})).framework.rule
    assert "AOTriton" in cdna4 and "25% of the 16-bit peak" in cdna4 and "7.0x" in cdna4
    assert "15% of the 16-bit peak" in rule.rule and "5.2x" in rule.rule


def test_an_amd_plan_that_states_flexattention_does_not_claim_sdpa(build):
    """A torchtitan gpt_oss run of the flex era states attention_kernel flex: its AMD plan was not timed as SDPA. Today's
    torchtitan runs gpt_oss's varlen attention (since e4035785d, 2026-06-18: aten's flash ops, AOTriton on ROCm), timed
    at the style's SDPA figures, and the plan says so."""
    flex = build(method="pretrain", model="gpt-oss-20b", hardware={"accelerator": "mi300x"},
                 strategy={"attention_kernel": "flex"})
    assert flex.evaluation["framework"]["perf_style"] == "torchtitan"
    assert "AOTriton" not in _sw(flex).framework.rule
    assert "AOTriton" in _sw(build(method="pretrain", model="gpt-oss-20b", hardware={"accelerator": "mi300x"})).framework.rule


def test_a_stack_the_job_names_is_the_one_the_plan_names(build):
    """A torchtitan EP layout read 'Megatron-Core (NeMo / Megatron-LM) with Transformer Engine' (its ep > 1), a
    torchtune LoRA 'Hugging Face Transformers + PEFT': the job named its stack, and the estimate timed that one."""
    from trainsizer.plan.texts import say

    titan = _sw(build(method="pretrain", model="gpt-oss-20b", strategy={"framework": "torchtitan", "zero": 3,
                                                                          "ep": 8})).framework
    assert str(titan.value).startswith("torchtitan") and titan.source == "torchtitan_repo"
    assert "strategy.framework torchtitan" in str(titan.rule)
    assert "按作业所设" in say(titan.value_msg.model_dump(), "zh")
    tune = _sw(build(method="lora", strategy={"framework": "torchtune", "fsdp": "none"})).framework
    assert str(tune.value).startswith("torchtune") and tune.source == "torchtune_repo"
    assert "Megatron" in str(_sw(build(strategy={"fsdp": "none", "tp": 8})).framework.value)
