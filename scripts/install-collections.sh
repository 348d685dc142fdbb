#!/usr/bin/env bash
# Install the Ansible collections the clusterforge roles use, without Ansible Galaxy.
#
# Galaxy is not reachable from the build hosts; PyPI is. The `ansible` community package on PyPI
# bundles every collection (~470 MB installed). We download that one wheel once (pinned version and
# SHA-256) and extract only the collections we use into collections/ansible_collections/ (git-ignored).
# playbooks/ansible.cfg points collections_path there.
#
# Idempotent and fast when done: a stamp file records wheel version + hash + collection list;
# if it matches, nothing is done.
#
# Env overrides: CLUSTERFORGE_ANSIBLE_VERSION, CLUSTERFORGE_ANSIBLE_SHA256, CLUSTERFORGE_WHEEL_DIR,
#                CLUSTERFORGE_COLLECTIONS_DIR, PIP (pip command), PYTHON.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"

version="${CLUSTERFORGE_ANSIBLE_VERSION:-12.3.0}"
# sha256 of ansible-12.3.0-py3-none-any.whl as published on PyPI
sha256="${CLUSTERFORGE_ANSIBLE_SHA256:-cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414}"
wheel_dir="${CLUSTERFORGE_WHEEL_DIR:-${HOME}/.cache/clusterforge/wheels}"
dest_root="${CLUSTERFORGE_COLLECTIONS_DIR:-${root}/collections}"
dest="${dest_root}/ansible_collections"
collections=(ansible/posix community/general)

if [[ -n "${PYTHON:-}" ]]; then
  python="${PYTHON}"
elif [[ -x "${root}/.venv/bin/python" ]]; then
  python="${root}/.venv/bin/python"
else
  python="$(command -v python3)"
fi

stamp="${dest}/.clusterforge-stamp"
want_stamp="ansible==${version} sha256=${sha256} collections=${collections[*]}"

if [[ -f "${stamp}" ]] && [[ "$(cat "${stamp}")" == "${want_stamp}" ]]; then
  ok=1
  for c in "${collections[@]}"; do
    [[ -f "${dest}/${c}/MANIFEST.json" ]] || ok=0
  done
  if [[ "${ok}" == 1 ]]; then
    echo "collections up to date (${want_stamp})"
    exit 0
  fi
fi

wheel="${wheel_dir}/ansible-${version}-py3-none-any.whl"
mkdir -p "${wheel_dir}"
if [[ ! -f "${wheel}" ]] || ! echo "${sha256}  ${wheel}" | sha256sum -c --status -; then
  rm -f "${wheel}"
  echo "downloading ansible==${version} wheel (no dependencies) into ${wheel_dir}"
  if [[ -n "${PIP:-}" ]]; then
    ${PIP} download --quiet --no-deps "ansible==${version}" -d "${wheel_dir}"
  else
    "${python}" -m pip download --quiet --no-deps "ansible==${version}" -d "${wheel_dir}"
  fi
fi
if ! echo "${sha256}  ${wheel}" | sha256sum -c --status -; then
  echo "ERROR: ${wheel} does not match the pinned sha256 ${sha256}" >&2
  exit 1
fi

mkdir -p "${dest_root}"
tmp="$(mktemp -d "${dest_root}/.extract.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

"${python}" - "${wheel}" "${tmp}" "${collections[@]}" <<'PY'
import sys
import zipfile
from pathlib import Path

wheel, out, *wanted = sys.argv[1:]
prefixes = tuple(f"ansible_collections/{c}/" for c in wanted)
out_dir = Path(out).resolve()
count = 0
with zipfile.ZipFile(wheel) as zf:
    for info in zf.infolist():
        if info.is_dir() or not info.filename.startswith(prefixes):
            continue
        target = (out_dir / info.filename).resolve()
        if out_dir not in target.parents:
            raise SystemExit(f"refusing to extract outside {out_dir}: {info.filename}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(zf.read(info))
        count += 1
for c in wanted:
    if not (out_dir / "ansible_collections" / c / "MANIFEST.json").is_file():
        raise SystemExit(f"collection {c} not found in {wheel}")
print(f"extracted {count} files for {', '.join(wanted)}")
PY

mkdir -p "${dest}"
for c in "${collections[@]}"; do
  ns="${c%%/*}"
  mkdir -p "${dest}/${ns}"
  rm -rf "${dest}/${c}.old"
  if [[ -e "${dest}/${c}" ]]; then
    mv "${dest}/${c}" "${dest}/${c}.old"
  fi
  mv "${tmp}/ansible_collections/${c}" "${dest}/${c}"
  rm -rf "${dest}/${c}.old"
done
echo "${want_stamp}" > "${stamp}"
echo "installed into ${dest}: ${collections[*]} (from ansible==${version})"
