"""Fabric certification against the plan: expected links from the cabling sheet, observed links from
recorded discovery (LLDP per node, ibnetdiscover/iblinkinfo for a whole InfiniBand subnet), their
comparison, counter rates, exports for vendor tools (docs/fabric.md)."""
