"""clusterforge hardware simulator: what runs INSIDE a lab node to stand in for GPUs, ConnectX NICs and
kernel state a container cannot own.

Stdlib only (the node image has python3 3.11 and no clusterforge package): the lab copies this package into
the image at /usr/lib/clusterforge-sim/ (see :mod:`.image`) and every simulated tool is the multi-call entry
``/usr/lib/clusterforge-sim/clusterforge-sim TOOL ARGS`` (or a symlink named as the tool). Host-side code
(``image``, ``repo``, ``faults.apply``, ``cli``) imports this package directly. See docs/simulator.md.
"""

SIM_VERSION = "1.0"
