"""Reaching the nodes: command text built from values (`commands`), the inventory as every run reads it
(`inventory`: generated + site layer, connection variables, hosts a limit selects), the SSH configuration of a
run (`ssh`), and the tools a node must have (`tools`). A base layer: imports no stage."""
