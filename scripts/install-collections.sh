#!/usr/bin/env bash
# Install the Ansible collections the clusterforge roles use (ansible.posix, community.general) without
# Ansible Galaxy, from the pinned `ansible` wheel on PyPI: `clusterforge collections install` does the work
# (src/clusterforge/ansible_deps.py). Idempotent and fast when done.
#
# Env overrides: CLUSTERFORGE_ANSIBLE_VERSION, CLUSTERFORGE_ANSIBLE_SHA256, CLUSTERFORGE_WHEEL_DIR,
#                CLUSTERFORGE_COLLECTIONS_DIR (default: <repo>/collections), PYTHON.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${PYTHON:-}" ]]; then
  python="${PYTHON}"
elif [[ -x "${root}/.venv/bin/python" ]]; then
  python="${root}/.venv/bin/python"
else
  python="$(command -v python3)"
fi
args=(--dest "${CLUSTERFORGE_COLLECTIONS_DIR:-${root}/collections}")
[[ -n "${CLUSTERFORGE_WHEEL_DIR:-}" ]] && args+=(--wheel-dir "${CLUSTERFORGE_WHEEL_DIR}")
[[ -n "${CLUSTERFORGE_ANSIBLE_VERSION:-}" ]] && args+=(--version "${CLUSTERFORGE_ANSIBLE_VERSION}")
[[ -n "${CLUSTERFORGE_ANSIBLE_SHA256:-}" ]] && args+=(--sha256 "${CLUSTERFORGE_ANSIBLE_SHA256}")
exec "${python}" -m clusterforge.cli collections install "${args[@]}"
