#!/usr/bin/env bash
# Capture a node's tool outputs, read-only, as parser fixtures: one file per command with the exact argv,
# exit status and stderr, plus an index. Nothing here changes the node (no -r, no -pm, no -e, no set*).
#
#   scripts/capture-node.sh OUTDIR        # then copy files worth keeping to tests/fixtures/real/ with a
#                                         # SOURCES.md row (file | source | commit | command | hardware | caveats)
#
# A command whose tool is missing is recorded with rc 127 and skipped; every command has a time limit.
set -u
out=${1:?usage: capture-node.sh OUTDIR}
mkdir -p "$out"
index="$out/INDEX.tsv"
printf 'file\trc\tseconds\targv\n' >"$index"

cap() { # cap NAME ARGV...  (argv run as given: no shell, no expansion of captured values)
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  if ! command -v "$1" >/dev/null 2>&1; then
    rc=127
    : >"$out/$name.txt"
    echo "$1: not installed" >"$out/$name.stderr"
  else
    timeout 120 "$@" >"$out/$name.txt" 2>"$out/$name.stderr"
    rc=$?
  fi
  t1=$(date +%s.%N)
  [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
  printf '%s\t%s\t%.2f\t%s\n' "$name" "$rc" "$(echo "$t1 - $t0" | bc 2>/dev/null || echo 0)" "$*" >>"$index"
}

# GPU (nvidia-smi is read-only with these verbs)
cap nvidia-smi nvidia-smi
cap nvidia-smi-L nvidia-smi -L
cap nvidia-smi-q nvidia-smi -q
cap nvidia-smi-q-x nvidia-smi -q -x
cap nvidia-smi-q-d-performance nvidia-smi -q -d PERFORMANCE
cap nvidia-smi-q-d-temperature nvidia-smi -q -d TEMPERATURE
cap nvidia-smi-q-d-row-remapper nvidia-smi -q -d ROW_REMAPPER
cap nvidia-smi-q-d-ecc nvidia-smi -q -d ECC
cap nvidia-smi-q-d-clock nvidia-smi -q -d CLOCK
cap nvidia-smi-q-d-power nvidia-smi -q -d POWER
cap nvidia-smi-topo-m nvidia-smi topo -m
cap nvidia-smi-nvlink-s nvidia-smi nvlink -s
cap nvidia-smi-nvlink-status nvidia-smi nvlink --status
cap nvidia-smi-nvlink-e nvidia-smi nvlink -e
cap nvidia-smi-query-gpu-ecc nvidia-smi \
  --query-gpu=index,serial,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total \
  --format=csv,noheader,nounits
cap nvidia-smi-query-gpu nvidia-smi \
  --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,serial,uuid,persistence_mode,ecc.mode.current,mig.mode.current,power.limit,power.max_limit,clocks.max.sm,clocks.max.mem,memory.total,temperature.gpu,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current \
  --format=csv
cap nvidia-smi-query-remapped-rows nvidia-smi \
  --query-remapped-rows=gpu_bus_id,gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure \
  --format=csv
cap proc-driver-nvidia-version cat /proc/driver/nvidia/version
cap dcgmi-discovery-l dcgmi discovery -l
cap nvcc-version nvcc --version
# PCIe, CPU, memory, kernel
cap lspci-vvv-nvidia lspci -vvv -d 10de:
cap lspci-tv lspci -tv
cap lscpu lscpu
cap lscpu-json lscpu -J
cap proc-cmdline cat /proc/cmdline
cap proc-meminfo cat /proc/meminfo
cap cpupower-frequency-info cpupower frequency-info
cap cpupower-idle-info cpupower idle-info
cap numactl-H numactl -H
cap uname-a uname -a
cap os-release cat /etc/os-release
# storage and network
# the storage validators' own forms (validators/test_storage.py)
cap lsblk-json lsblk --json --paths --bytes -o NAME,TYPE,FSTYPE,MOUNTPOINT,SIZE
cap findmnt-json findmnt --json --list --bytes -o TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL
cap findmnt-json-tree findmnt -J
cap nvme-list nvme list
cap ip-j-link ip -j link
cap ibstat ibstat
cap ibv_devinfo ibv_devinfo
cap ofed_info-s ofed_info -s
cap gdscheck-p /usr/local/cuda/gds/tools/gdscheck -p
cap lldpcli-json0 lldpcli -f json0 show neighbors
# packages (Debian/Ubuntu or RPM family; one of them is missing, rc 127)
cap dpkg-l-nvidia dpkg -l '*nvidia*' '*cuda*'
cap rpm-qa rpm -qa
exit 0
