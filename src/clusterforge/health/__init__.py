"""Passive health between jobs: `nodecheck` is the node-side check (standard library only, copied to the
node by the monitoring role); `cache` is what the controller leaves on the node for it."""
