"""Network components: management, storage, and the compute fabrics with their switches.

Switches are component resources (one per switch of the plan); port-level cabling stays plan data (stack
output `cabling`), not thousands of resources. RoCE switches may get their rendered QoS config pushed over SSH
(`command.remote.Command`, credentials only as Pulumi secrets); InfiniBand fabrics carry the SM's QoS files.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi_command import remote

from clusterforge.plan.digest import sha256_of
from clusterforge.pulumi.settings import SwitchPush
from clusterforge.switchcfg import (
    host_qos,
    ib_qos,
    nvue_yaml,
    render_ib_qos,
    render_nvue,
    render_sonic,
    roce_qos,
)
from clusterforge.switchcfg.ports import SwitchPorts, fabric_switch_ports

TOKEN = "clusterforge:index:{}"
SONIC_PUSH = (
    "cat > /tmp/clusterforge-qos.json && sudo config load -y /tmp/clusterforge-qos.json"
    " && sudo config save -y"
)
NVUE_PUSH = (
    "cat > /tmp/clusterforge-qos.yaml && nv config patch /tmp/clusterforge-qos.yaml && nv config apply -y"
)


class ManagementNetwork(pulumi.ComponentResource):
    """The management Ethernet (SSH, Ansible, BMC reachability): CIDR, MTU, speed, addresses in use."""

    def __init__(
        self, name: str, plan_doc: dict[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TOKEN.format("ManagementNetwork"), name, None, opts)
        net = plan_doc["networks"]["management"]
        self.cidr = pulumi.Output.from_input(str(net["cidr"]))
        self.mtu = pulumi.Output.from_input(int(net["mtu"]))
        self.speed_gbps = pulumi.Output.from_input(int(net["speed_gbps"]))
        self.addresses = pulumi.Output.from_input({n["name"]: n["mgmt_ip"] for n in plan_doc["nodes"]})
        self.register_outputs(
            {
                "cidr": self.cidr,
                "mtu": self.mtu,
                "speed_gbps": self.speed_gbps,
                "vlan": net.get("vlan"),
                "addresses": self.addresses,
            }
        )


class StorageNetwork(pulumi.ComponentResource):
    """The storage Ethernet: CIDR, MTU, NICs per node and the addresses handed out."""

    def __init__(
        self, name: str, plan_doc: dict[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TOKEN.format("StorageNetwork"), name, None, opts)
        net = plan_doc["networks"]["storage"] or {}
        self.cidr = pulumi.Output.from_input(str(net.get("cidr", "")))
        self.mtu = pulumi.Output.from_input(int(net.get("mtu", 0)))
        self.addresses = pulumi.Output.from_input({n["name"]: n["storage_ips"] for n in plan_doc["nodes"]})
        self.register_outputs(
            {
                "cidr": self.cidr,
                "mtu": self.mtu,
                "speed_gbps": net.get("speed_gbps"),
                "nics_per_node": net.get("nics_per_node"),
                "vlan": net.get("vlan"),
                "addresses": self.addresses,
            }
        )


class FabricSwitch(pulumi.ComponentResource):
    """One switch of a compute fabric: its place in the tree and, for RoCE, the digest of its QoS config."""

    def __init__(
        self,
        name: str,
        plan_doc: dict[str, Any],
        fields: dict[str, Any],
        sp: SwitchPorts,
        push: SwitchPush | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN.format("FabricSwitch"), name, None, opts)
        self.role = pulumi.Output.from_input(str(fields["role"]))
        self.fabric = pulumi.Output.from_input(sp.fabric)
        outputs: dict[str, Any] = {
            "name": name,
            "fabric": sp.fabric,
            "fabric_type": sp.fabric_type,
            "model": sp.model,
            "role": fields["role"],
            "su": fields["su"],
            "rail": fields["rail"],
            "pod": fields["pod"],
            "group": fields["group"],
            "radix": fields["radix"],
            "ports_used": fields["ports_used"],
            "cabled_ports": len(sp.ports),
        }
        self.config_digest: pulumi.Output[str] | None = None
        if sp.fabric_type == "roce":
            sonic, nvue = render_sonic(plan_doc, name), render_nvue(plan_doc, name)
            digest = sha256_of({"sonic": sonic, "nvue": nvue})
            self.config_digest = pulumi.Output.from_input(digest)
            outputs["config_digest"] = digest
            if push and name in push.addresses:
                self.push = self._push(name, push, sonic, nvue)
                outputs["pushed_to"] = push.addresses[name]
        self.register_outputs(outputs)

    def _push(
        self, name: str, push: SwitchPush, sonic: dict[str, Any], nvue: dict[str, Any]
    ) -> remote.Command:
        text = json.dumps(sonic, indent=1, sort_keys=True) if push.nos == "sonic" else nvue_yaml(nvue)
        return remote.Command(
            f"{name}-qos",
            connection=remote.ConnectionArgs(
                host=push.addresses[name], user=push.user, password=push.password
            ),
            create=SONIC_PUSH if push.nos == "sonic" else NVUE_PUSH,
            stdin=text,
            triggers=[sha256_of(text)],
            opts=pulumi.ResourceOptions(parent=self),
        )


class ComputeFabric(pulumi.ComponentResource):
    """A rail-optimized fat tree from the plan: its figures, QoS policy, and one FabricSwitch per switch."""

    def __init__(
        self,
        name: str,
        plan_doc: dict[str, Any],
        push: SwitchPush | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN.format("ComputeFabric"), name, None, opts)
        f = next(x for x in plan_doc["fabrics"] if x["name"] == name)
        self.kind = f["type"]
        self.switches: dict[str, FabricSwitch] = {}
        ports = fabric_switch_ports(f)
        for row in f["switches"]:
            fields = dict(zip(f["switch_fields"], row, strict=True))
            self.switches[row[0]] = FabricSwitch(
                row[0], plan_doc, fields, ports[row[0]], push, pulumi.ResourceOptions(parent=self)
            )
        qos: dict[str, Any]
        if f["type"] == "roce":
            qos = {"policy": roce_qos(plan_doc, name).as_dict(), "host": host_qos(plan_doc)}
        else:
            qos = {"policy": ib_qos(plan_doc, name), "subnet_manager": render_ib_qos(plan_doc, name)}
        self.qos = pulumi.Output.from_input(qos)
        self.switch_count = pulumi.Output.from_input(f["switches_count"])
        self.register_outputs(
            {
                "type": f["type"],
                "switch_model": f["switch_model"],
                "tiers": f["tiers"],
                "scalable_units": f["scalable_units"],
                "switches_count": self.switch_count,
                "bisection_gbps": f["bisection_gbps"],
                "cables": len(f["links"]),
                "switches": sorted(self.switches),
                "qos": self.qos,
            }
        )
