"""The third-party Ansible collections the roles use (ansible.posix, community.general), without Galaxy.

The `ansible` community package on PyPI bundles every collection (~470 MB installed). We download that
one wheel (pinned version and SHA-256) and extract only the collections we use into
`<dest>/ansible_collections/`. Idempotent: a stamp file records version, hash and collection list.
`clusterforge collections install` and `make collections` both run this.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from clusterforge.errors import ClusterforgeError

VERSION = "12.3.0"
#: sha256 of ansible-12.3.0-py3-none-any.whl as published on PyPI
SHA256 = "cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414"
COLLECTIONS = ("ansible/posix", "community/general")
#: the versions of those collections inside that wheel (its ansible_collections/*/MANIFEST.json; checked on
#: install). requirements.yml at the repository root (AWX, ansible-builder) is `requirements_doc()`.
BUNDLED = {"ansible.posix": "2.1.0", "community.general": "11.4.2"}


def requirements_doc() -> dict[str, list[dict[str, str]]]:
    """requirements.yml (ansible-galaxy, AWX, ansible-builder): these collections at these versions."""
    return {"collections": [{"name": n, "version": v} for n, v in BUNDLED.items()]}


def manifest_versions(root: Path) -> dict[str, str]:
    """{namespace.name: version} of the collections under `root` (an `ansible_collections` folder)."""
    out = {}
    for c in COLLECTIONS:
        info = json.loads((root / c / "MANIFEST.json").read_text())["collection_info"]
        out[f"{info['namespace']}.{info['name']}"] = str(info["version"])
    return out


def stamp_text(version: str, sha256: str) -> str:
    return f"ansible=={version} sha256={sha256} collections={' '.join(COLLECTIONS)}"


def installed(dest: Path, version: str = VERSION, sha256: str = SHA256) -> bool:
    root = dest / "ansible_collections"
    stamp = root / ".clusterforge-stamp"
    return (
        stamp.is_file()
        and stamp.read_text().strip() == stamp_text(version, sha256)
        and all((root / c / "MANIFEST.json").is_file() for c in COLLECTIONS)
    )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(wheel_dir: Path, version: str, sha256: str) -> Path:
    wheel = wheel_dir / f"ansible-{version}-py3-none-any.whl"
    if not (wheel.is_file() and _sha256(wheel) == sha256):
        wheel.unlink(missing_ok=True)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"ansible=={version}"]
        subprocess.run([*argv, "-d", str(wheel_dir)], check=True)
    if _sha256(wheel) != sha256:
        raise ClusterforgeError(f"{wheel} does not match the pinned sha256 {sha256}: not extracted")
    return wheel


def extract(wheel: Path, out: Path, wanted: tuple[str, ...] = COLLECTIONS) -> int:
    """Extract `ansible_collections/<c>/` for each wanted collection; refuses paths outside `out`."""
    prefixes = tuple(f"ansible_collections/{c}/" for c in wanted)
    out = out.resolve()
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(prefixes):
                continue
            target = (out / info.filename).resolve()
            if out not in target.parents:
                raise ClusterforgeError(f"{wheel}: refusing to extract outside {out}: {info.filename!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            count += 1
    missing = [c for c in wanted if not (out / "ansible_collections" / c / "MANIFEST.json").is_file()]
    if missing:
        raise ClusterforgeError(f"{wheel}: collections {', '.join(missing)} not found")
    return count


def install(dest: Path, wheel_dir: Path | None = None, version: str = VERSION, sha256: str = SHA256) -> str:
    """Make `dest/ansible_collections/` hold the pinned collections; returns what was done."""
    if installed(dest, version, sha256):
        return f"collections up to date ({stamp_text(version, sha256)})"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    wheel = fetch_wheel(wheel_dir or cache / "clusterforge" / "wheels", version, sha256)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest / "ansible_collections"
    with tempfile.TemporaryDirectory(dir=dest, prefix=".extract.") as tmp:
        count = extract(wheel, Path(tmp))
        found = manifest_versions(Path(tmp) / "ansible_collections")
        if version == VERSION and found != BUNDLED:
            raise ClusterforgeError(f"ansible=={version} bundles {found}, not {BUNDLED}: update BUNDLED")
        for c in COLLECTIONS:
            target = root / c
            target.parent.mkdir(parents=True, exist_ok=True)
            old = target.with_name(target.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            if target.exists():
                target.rename(old)
            (Path(tmp) / "ansible_collections" / c).rename(target)
            shutil.rmtree(old, ignore_errors=True)
    (root / ".clusterforge-stamp").write_text(stamp_text(version, sha256) + "\n")
    return f"installed {count} files into {root}: {' '.join(COLLECTIONS)} (from ansible=={version})"
