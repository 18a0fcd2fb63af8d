import json
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
KEYS = {"bom", "node", "network", "storage", "facility", "software", "risks", "acceptance", "phases",
        "rules_of_thumb"}


@pytest.mark.parametrize("example", [e for e in EXAMPLES if "search" not in e.name], ids=lambda p: p.stem)
def test_every_example_builds(example, run_cli):
    code, out, err = run_cli("build", str(example), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert KEYS <= set(data)
    assert data["bom"]["totals"]["typical"] > 0
    assert data["acceptance"]["gpu_count"]["value"] == data["job"]["hardware"]["gpus_per_node"]
    # every question of the guides has an answer: NVLink, network and switches, CPU/RAM/NVMe, storage,
    # scheduler, power and cooling, budget and buy vs rent, pitfalls, roll-out, acceptance
    net, node, fac = data["network"], data["node"], data["facility"]
    assert net["nvlink"]["gpus_per_domain"] >= 1
    if data["job"]["hardware"]["nodes"] > 1:
        # switches to buy, or a cloud / rented fabric that is the provider's
        provider = net["compute"]["kind"] == "provider" or net["compute"]["provided"]
        assert provider == (data["bom"]["acquisition"] == "rent" or net["compute"]["kind"] == "provider")
        assert (net["compute"]["switch"] and net["switches"]) or provider
    assert node["cpu_cores"]["value"] > 0 and node["ram_gib"]["value"] > 0 and node["nvme_tb"]["value"] > 0
    assert data["storage"]["tier"] and data["storage"]["capacity_tb"]["value"] > 0
    assert data["software"]["scheduler"]["value"] and data["software"]["driver"]
    assert fac["node_kw_max"] > 0 and fac["cooling"]["value"]
    # racks of one's own only for a bought site bigger than a workstation
    assert (fac["racks"] >= 1) == (fac["site"] in ("node", "cluster"))
    assert (data["bom"]["acquisition"] == "rent") == (fac["site"] == "rented")
    assert data["bom"]["buy_vs_rent"]["verdict"]
    assert isinstance(data["risks"], list)
    expected = {"rent": 5, "buy": 5 if fac["site"] == "workstation" else 7}
    assert len(data["phases"]["rollout"]) == expected[data["phases"]["acquisition"]]


def test_every_risk_and_phase_has_both_languages():
    import re

    import yaml

    from trainsizer.plan.buildout import rules

    root = Path(__file__).resolve().parents[2] / "src" / "trainsizer"
    table = yaml.safe_load((root / "render" / "data" / "i18n.yaml").read_text(encoding="utf-8"))
    risk_ids = re.findall(r'Risk\(id="(\w+)"', (root / "plan" / "buildout" / "risks.py").read_text())
    assert len(risk_ids) >= 10
    keys = [f"b_risk_{r}" for r in risk_ids]  # the mitigation is the risk's own message (buildout_text.yaml)
    raw = rules.raw("phases")
    keys += [f"b_phase_{p['id']}" for p in raw["phases"] + raw["rent_phases"] + raw["workstation_phases"]]
    for key in keys:
        assert table[key]["en"] and table[key]["zh"], key


def test_tables_in_both_languages(run_cli):
    ex = str(EXAMPLES[0].parent / "sft-70b-16gpu.yaml")
    code, en, _ = run_cli("--lang", "en", "build", ex)
    assert code == 0 and "Bill of materials" in en and "Network fabrics" in en
    code, zh, _ = run_cli("--lang", "zh", "build", ex)
    assert code == 0 and "物料清单" in zh and "网络架构" in zh


def test_out_dir_writes_plan_and_scheduler_files(tmp_path, run_cli):
    ex = str(EXAMPLES[0].parent / "sft-70b-16gpu.yaml")
    code, out, _ = run_cli("build", ex, "--out-dir", str(tmp_path))
    assert code == 0
    # rented (goal.procurement rent): the provider's managed Slurm or Kubernetes, so both layouts to hand over
    assert {p.name for p in tmp_path.iterdir()} == {"plan.json", "slurm.conf", "gres.conf", "topology.conf",
                                                     "pytorchjob.yaml"}


def test_job_without_hardware_is_a_clear_error(run_cli):
    ex = str(EXAMPLES[0].parent / "sft-70b-search.yaml")
    code, _, err = run_cli("build", ex)
    assert code == 2 and "hardware" in err


def test_unknown_server_is_a_clear_error(run_cli):
    ex = str(EXAMPLES[0].parent / "sft-70b-16gpu.yaml")
    code, _, err = run_cli("build", ex, "--server", "dgx-b200")
    assert code == 2 and "b200" in err
