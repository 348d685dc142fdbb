#!/usr/bin/env bash
# Install the Debian packages the local lab needs on the host (docs/lab.md).
# Idempotent and fast when everything is present (checks dpkg-query first; no apt-get call then).
# Needs root to install; without root it says what is missing and exits 1.
set -euo pipefail

PACKAGES=(
  debootstrap        # builds the node image
  systemd-container  # systemd-nspawn
  slurm-wlm          # slurmctld + client commands on the host
  munge              # munged on the host
  zstd               # image tarball
  dpkg-dev           # dpkg-scanpackages for the lab apt repository
  apt-cacher-ng      # the lab's Debian caching proxy (nodes install distribution packages through it)
  graphviz           # topology.svg
  iproute2           # ip netns / veth / bridge
  util-linux         # unshare, nsenter, setsid
  openssh-client     # ssh, ssh-keygen
  iputils-ping
  procps
  curl
  openssl            # the lab BMCs' CA and TLS certificates (Redfish over https)
  chromium           # headless check that burn-in HTML reports load without console errors
  prometheus         # promtool: `promtool test rules` of monitoring/alerts (tests/unit/monitoring)
  redis-server       # the lab's JuiceFS metadata and data (the shared filesystem every lab node mounts)
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "system deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "system deps missing: ${missing[*]}" >&2
  echo "run as root: sudo $0   (or: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi

echo "system deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The lab runs its own munged/slurmctld/apt-cacher-ng (and Prometheus, Redis); distro services (where an init would start them) stay off.
if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
  systemctl disable --now munge.service slurmctld.service slurmd.service apt-cacher-ng.service prometheus.service redis-server.service >/dev/null 2>&1 || true
fi
echo "system deps: done"
