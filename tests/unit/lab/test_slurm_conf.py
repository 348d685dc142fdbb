"""slurm.conf rendering from a plan (pure)."""

from __future__ import annotations

from pathlib import Path

from clusterforge.lab import labplan
from clusterforge.lab.slurm import render_slurm_conf, slurm_files
from clusterforge.lab.synthetic import make_plan


def _conf() -> str:
    plan = labplan.parse(make_plan())
    return render_slurm_conf(plan, Path("/var/lib/clusterforge/lab/lab"), "vm", cpus=2)


def test_controller_and_scheduler() -> None:
    conf = _conf()
    assert "SlurmctldHost=vm(10.244.0.1)\n" in conf
    assert "SchedulerType=sched/builtin\n" in conf
    assert "SlurmdParameters=config_overrides\n" in conf
    assert "SlurmctldParameters=enable_configless\n" in conf
    assert "ClusterName=lab\n" in conf
    assert "StateSaveLocation=/var/lib/clusterforge/lab/lab/slurm/ctld\n" in conf


def test_one_node_line_per_plan_node() -> None:
    lines = [line for line in _conf().splitlines() if line.startswith("NodeName=")]
    assert [line.split()[0] for line in lines] == [
        "NodeName=roce-01",
        "NodeName=roce-02",
        "NodeName=ib-01",
        "NodeName=ib-02",
    ]
    assert "NodeAddr=10.244.0.11" in lines[0] and "CPUs=2" in lines[0]
    assert "Features=pool_roce,sku_h100_sxm_8x400g_roce,fabric_roce0" in lines[0]
    assert "Gres=gpu:h100:8 " in lines[0] and "GresTypes=gpu\n" in _conf()


def test_partitions_per_pool_first_default() -> None:
    parts = [line for line in _conf().splitlines() if line.startswith("PartitionName=")]
    assert parts == [
        "PartitionName=roce Nodes=roce-01,roce-02 Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=ib Nodes=ib-01,ib-02 Default=NO MaxTime=INFINITE State=UP",
    ]


def test_gres_and_topology_files_are_the_plans() -> None:
    """The controller hands slurmd the gres.conf and topology.conf the slurm_node role renders: one text."""
    from clusterforge.plan.slurm_files import render_gres_conf, render_topology_conf
    from tests.conftest import example_plan

    doc = example_plan("lab").doc
    plan = labplan.parse(doc)
    files = slurm_files(plan)
    assert files == {"gres.conf": render_gres_conf(doc), "topology.conf": render_topology_conf(doc)}
    assert "File=/dev/nvidia7" in files["gres.conf"] and "SwitchName=" in files["topology.conf"]
    conf = render_slurm_conf(plan, Path("/var/lib/clusterforge/lab/lab"), "vm", cpus=2)
    assert "GresTypes=gpu\nTopologyPlugin=topology/tree\n" in conf
    gres = {n["name"]: f"gpu:h100:{doc['skus'][n['sku']]['gpu']['count']}" for n in doc["nodes"]}
    for line in (x for x in conf.splitlines() if x.startswith("NodeName=")):
        name = line.split()[0].removeprefix("NodeName=")
        assert f" Gres={gres[name]} " in line


def test_no_gpus_no_gres() -> None:
    doc = make_plan()
    for sku in doc["skus"].values():
        sku["gpu"]["count"] = 0
    plan = labplan.parse(doc)
    conf = render_slurm_conf(plan, Path("/s"), "vm", cpus=2)
    assert "GresTypes" not in conf and "Gres=" not in conf and slurm_files(plan)["gres.conf"] == ""


def test_health_check_program_from_the_plan() -> None:
    from tests.conftest import example_plan

    plan = labplan.parse(example_plan("lab").doc)
    conf = render_slurm_conf(plan, Path("/var/lib/clusterforge/lab/lab"), "vm", cpus=2)
    assert "HealthCheckProgram=/usr/local/sbin/clusterforge-healthcheck\n" in conf
    assert "HealthCheckInterval=300\nHealthCheckNodeState=ANY,CYCLE\n" in conf
    assert "HealthCheckProgram" not in _conf()  # a synthetic plan without desired states: none


def test_forget_drops_the_saved_state_only(tmp_path: Path) -> None:
    from clusterforge.lab.slurm import SlurmController

    ctl = SlurmController(tmp_path)
    (ctl.dir / "ctld").mkdir(parents=True)
    (ctl.dir / "ctld" / "node_state").write_text("ib-01 DRAIN gres/gpu count reported lower")
    ctl.conf.write_text("ClusterName=lab\n")
    ctl.forget()
    assert not (ctl.dir / "ctld").exists() and ctl.conf.exists()
