"""systemd units and maintainer scripts shipped by the image install and the simulated packages."""

from __future__ import annotations

from . import paths

BOOT_UNIT = f"""[Unit]
Description=clusterforge hardware simulator: kernel views (sysfs/procfs) and hardware state at boot
Documentation=file:///usr/share/doc/clusterforge-sim/README
DefaultDependencies=no
After=local-fs.target systemd-tmpfiles-setup.service
Before=sysinit.target ssh.service network-pre.target systemd-networkd.service networking.service \
systemd-udevd.service tuned.service irqbalance.service slurmd.service
Wants=network-pre.target
ConditionPathExists={paths.STATE}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={paths.ENTRY} boot

[Install]
WantedBy=sysinit.target
"""

KERNEL_UNIT = f"""[Unit]
Description=clusterforge hardware simulator: configfs, GID tables, fault enforcement
After=clusterforge-sim-boot.service
Requires=clusterforge-sim-boot.service
ConditionPathExists={paths.STATE}

[Service]
ExecStart={paths.ENTRY} kerneld
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
"""

# keeps sshd down while the sshd-stopped fault is active (installed as a vendor drop-in)
SSH_DROPIN = f"""[Service]
ExecStartPre={paths.ENTRY} fault check sshd-stopped
"""

PERSISTENCED_UNIT = """[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target

[Service]
Type=forking
PIDFile=/var/run/nvidia-persistenced/nvidia-persistenced.pid
Restart=always
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --verbose
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced

[Install]
WantedBy=multi-user.target
"""

FABRICMANAGER_UNIT = """[Unit]
Description=NVIDIA fabric manager service
After=network-online.target

[Service]
User=root
PrivateTmp=false
Type=forking
TimeoutStartSec=240
ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
LimitCORE=infinity

[Install]
WantedBy=multi-user.target
"""

DCGM_UNIT = """[Unit]
Description=NVIDIA DCGM service
Conflicts=dcgm.service

[Service]
User=root
PrivateTmp=false
Environment="DCGM_HOME_DIR=/var/log/nvidia-dcgm"
ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm
Restart=on-abort

[Install]
WantedBy=multi-user.target
"""

FABRICMANAGER_CFG = """# NVIDIA Fabric Manager configuration (clusterforge lab simulator)
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/fabricmanager.log
LOG_APPEND_TO_LOG=1
LOG_FILE_MAX_SIZE=1024
LOG_USE_SYSLOG=0
DAEMONIZE=1
BIND_INTERFACE_IP=127.0.0.1
STARTING_TCP_PORT=16000
FABRIC_MODE=0
FABRIC_MODE_RESTART=0
STATE_FILE_NAME=/var/tmp/fabricmanager.state
FM_CMD_BIND_INTERFACE=127.0.0.1
FM_CMD_PORT_NUMBER=6666
FM_STAY_RESIDENT_ON_FAILURES=0
ACCESS_LINK_FAILURE_MODE=0
TRUNK_LINK_FAILURE_MODE=0
NVSWITCH_FAILURE_MODE=0
ABORT_CUDA_JOBS_ON_FM_EXIT=1
TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch
"""

DRIVER_POSTINST = """#!/bin/sh
set -e
if [ "$1" = configure ]; then
    kver=$(uname -r)
    d=/lib/modules/$kver/updates/dkms
    mkdir -p "$d"
    for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
        echo "clusterforge simulated kernel module $m @VERSION@" > "$d/$m.ko"
    done
    echo "Building initial module for $kver"
    echo "Done."
    echo "nvidia.ko: Running module version sanity check. - Installation - Installing to $d/"
    getent passwd nvidia-persistenced >/dev/null 2>&1 || \\
        useradd --system --home-dir / --no-create-home --shell /usr/sbin/nologin nvidia-persistenced || true
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
        systemctl enable nvidia-persistenced.service >/dev/null 2>&1 || true
        systemctl start nvidia-persistenced.service || true
    else
        systemctl enable nvidia-persistenced.service >/dev/null 2>&1 || true
    fi
fi
exit 0
"""

DRIVER_PRERM = """#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl stop nvidia-persistenced.service >/dev/null 2>&1 || true
fi
if [ "$1" = remove ] || [ "$1" = purge ]; then
    systemctl disable nvidia-persistenced.service >/dev/null 2>&1 || true
    rm -f /lib/modules/$(uname -r)/updates/dkms/nvidia*.ko
fi
exit 0
"""

SERVICE_POSTINST = """#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
"""

SERVICE_PRERM = """#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl stop @UNIT@ >/dev/null 2>&1 || true
fi
if [ "$1" = remove ] || [ "$1" = purge ]; then
    systemctl disable @UNIT@ >/dev/null 2>&1 || true
fi
exit 0
"""
