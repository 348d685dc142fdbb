"""slurm.conf rendering from a plan (pure)."""

from __future__ import annotations

from pathlib import Path

from clusterforge.lab import labplan
from clusterforge.lab.slurm import render_slurm_conf
from clusterforge.lab.synthetic import make_plan


def _conf(**kw: int) -> str:
    plan = labplan.parse(make_plan())
    return render_slurm_conf(plan, Path("/var/lib/clusterforge/lab/lab"), "vm", cpus=2, **kw)


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
    assert "Gres=" not in lines[0] and "GresTypes" not in _conf()


def test_partitions_per_pool_first_default() -> None:
    parts = [line for line in _conf().splitlines() if line.startswith("PartitionName=")]
    assert parts == [
        "PartitionName=roce Nodes=roce-01,roce-02 Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=ib Nodes=ib-01,ib-02 Default=NO MaxTime=INFINITE State=UP",
    ]


def test_optional_gres() -> None:
    conf = _conf(gres_gpus=8)
    assert "GresTypes=gpu\n" in conf and "Gres=gpu:8" in conf


def test_health_check_program_from_the_plan() -> None:
    from tests.conftest import example_plan

    plan = labplan.parse(example_plan("lab").doc)
    conf = render_slurm_conf(plan, Path("/var/lib/clusterforge/lab/lab"), "vm", cpus=2)
    assert "HealthCheckProgram=/usr/local/sbin/clusterforge-healthcheck\n" in conf
    assert "HealthCheckInterval=300\nHealthCheckNodeState=ANY,CYCLE\n" in conf
    assert "HealthCheckProgram" not in _conf()  # a synthetic plan without desired states: none
