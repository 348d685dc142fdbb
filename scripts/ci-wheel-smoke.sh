#!/usr/bin/env bash
# The installed tool, not the checkout: build the wheel, install it into a fresh venv outside the
# repository and run it from an empty folder.
#   bash scripts/ci-wheel-smoke.sh            # plan every example spec (no root, no lab)
#   sudo LAB=1 bash scripts/ci-wheel-smoke.sh  # also: lab up, provision --certify the lab, lab down
#                                              # (root, systemd-nspawn: scripts/install-system-deps.sh)
# PYTHON picks the interpreter (default python3, >= 3.11). Exit status: the first failing step's.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
lab=${LAB:-0}
work=$(mktemp -d "${TMPDIR:-/tmp}/clusterforge-wheel.XXXXXX")
cf="$work/venv/bin/clusterforge"
spec="$repo/inventory/clusters/lab.yaml"

cleanup() {
  if [[ $lab == 1 && -x $cf ]]; then "$cf" lab down "$spec" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "build the wheel"
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$repo"
wheel=$(ls "$work"/dist/clusterforge-*.whl)

step "fresh venv, install $(basename "$wheel")$([[ $lab == 1 ]] && echo ' [lab]')"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
if [[ $lab == 1 ]]; then
  "$work/venv/bin/pip" install --quiet "clusterforge[lab] @ file://$wheel"
else
  "$work/venv/bin/pip" install --quiet "$wheel"
fi

# an empty folder outside the checkout: nothing can be found through the repository
empty="$work/empty"
mkdir "$empty"
cd "$empty"
export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="${XDG_CACHE_HOME:-$work/cache}"
unset CLUSTERFORGE_SPEC

step "clusterforge --version"
"$cf" --version

for s in "$repo"/inventory/clusters/*.yaml; do
  name=$(basename "$s" .yaml)
  step "clusterforge plan $name"
  "$cf" plan "$s" --no-svg --format json --output "plan-$name.json"
  "$work/venv/bin/python" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["nodes"] > 0, d' \
    "plan-$name.json"
  test -s "inventory/generated/$name/plan.json"
done

if [[ $lab != 1 ]]; then
  step "done (plan only; LAB=1 for the lab certification)"
  exit 0
fi

[[ $(id -u) == 0 ]] || { echo "LAB=1 needs root (the lab: netns, bridges, systemd-nspawn)" >&2; exit 2; }
step "collections install"
"$cf" collections install
step "lab up"
"$cf" lab up "$spec"
step "provision --certify (quick tier, admission)"
"$cf" provision "$spec" --certify
step "done: the installed wheel provisioned and certified the lab from an empty folder"
