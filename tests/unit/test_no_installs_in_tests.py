"""Tests never install software on a node: what certification, burn-in and drift use on a node is put there
by provisioning (the roles), so a test that installed it would hide a role that does not.

Scans every file under tests/ for package installs (`apt-get install`, `apt install`, `dpkg -i`,
`dnf install`, `yum install`, `rpm -i/-U`, `pip install`), as shell text or as an argv list
(`["apt-get", "install", ...]`). Left out: this file, the role tests' fixtures (tests/unit/roles/fixtures:
inventories and fake tools that name packages), and captured tool outputs (*.txt / *.json under a fixtures
folder: data, never run). The few lines that may say it are listed in ALLOWED with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import TESTS

SELF = Path(__file__).resolve()
SKIP_DIRS = [TESTS / "unit" / "roles" / "fixtures"]

_SEP = r"""["',\s]+"""  # words of a shell line, or items of an argv list
_OPTS = rf"(?:-[\w=.-]+{_SEP})*"  # options before the verb (apt-get -y install ...)
INSTALL = re.compile(
    rf"""\b(?:apt-get|apt|dnf|yum|microdnf|zypper){_SEP}{_OPTS}install\b"""
    rf"""|\bdpkg{_SEP}(?:-i|--install)\b"""
    rf"""|\brpm{_SEP}(?:-[iU]\w*|--install|--upgrade)\b"""
    rf"""|\bpip3?{_SEP}{_OPTS}install\b"""
)

# (file relative to tests/, text on the line, why it is not a test installing what a role should)
ALLOWED = [
    (
        "integration/drift/test_drift_lab.py",
        "apt-get install -qq -y",
        "drift injection: moves a package the role installed off its pin; drift must name it and "
        "`drift --fix` (the role) must put the pinned version back",
    ),
    (
        "integration/burnin/test_burnin_browser_harness.py",
        "(apt-get install chromium)",
        "a skip reason telling the operator what the test host lacks",
    ),
    (
        "integration/burnin/cdp.py",
        "(apt-get install chromium)",
        "an error message telling the operator what the test host lacks",
    ),
    (
        "fixtures/real/SOURCES.md",
        "after `apt-get install -y opensm` (Debian package",
        "provenance of a real capture: how the opensm that wrote the fixture got onto the development "
        "machine; no test runs it",
    ),
    ("unit/plan/test_outputs_topology.py", "(apt install graphviz)", "a skip reason about the test host"),
    ("unit/plan/test_outputs_files.py", "(apt install graphviz)", "a skip reason about the test host"),
    (
        "unit/test_wheel.py",
        '"pip", "install", "-q", "--no-deps", "--target", target, wheel]',
        "installs the wheel built from this checkout into a test folder on the controller, never a node",
    ),
]


def _scanned() -> list[Path]:
    out = []
    for f in sorted(TESTS.rglob("*")):
        if not f.is_file() or f.resolve() == SELF or "__pycache__" in f.parts:
            continue
        if any(d in f.parents for d in SKIP_DIRS):
            continue
        if "fixtures" in f.relative_to(TESTS).parts and f.suffix in (".txt", ".json"):
            continue
        out.append(f)
    return out


def installs(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every package install in ``text``; an argv list split over lines counts."""
    hits = []
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        window = " ".join([line, *lines[no : no + 2]])  # ["apt-get",\n "install", ...] spans lines
        m = INSTALL.search(window)
        if m and m.start() < len(line):
            hits.append((no, line.strip()))
    return hits


def test_no_test_installs_anything_on_a_node() -> None:
    found = []
    used = set()
    for f in _scanned():
        rel = f.relative_to(TESTS).as_posix()
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            continue
        for no, line in installs(text):
            allowed = [i for i, (path, snippet, _) in enumerate(ALLOWED) if path == rel and snippet in line]
            if allowed:
                used.update(allowed)
                continue
            found.append(f"tests/{rel}:{no}: {line}")
    assert not found, (
        "tests must not install software on nodes (a role installs it during provisioning; "
        "if the role does not, fix the role):\n" + "\n".join(found)
    )
    stale = [ALLOWED[i][:2] for i in range(len(ALLOWED)) if i not in used]
    assert not stale, f"ALLOWED entries that match nothing any more (remove them): {stale}"


@pytest.mark.parametrize(
    "text",
    [
        'lab.exec(n, ["apt-get", "install", "-y", "-q", "nvbandwidth"])',
        'lab.exec(n, [\n    "apt-get",\n    "install",\n    "nvbandwidth",\n])',
        "sh(lab, node, 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq x')",
        "n.sh('apt -y install nccl-tests')",
        "n.sh('dpkg -i /tmp/nvbandwidth_0.8-1_amd64.deb')",
        "n.sh('dnf -y install nccl-tests')",
        "n.sh('yum install nvbandwidth')",
        "n.sh('rpm -ivh nccl-tests.rpm')",
        "n.sh('python3 -m pip install pyyaml')",
        "n.sh('pip3 install --user x')",
    ],
)
def test_the_scan_catches_every_form(text: str) -> None:
    assert installs(text), text


@pytest.mark.parametrize(
    "text",
    [
        "apt-mark hold nvbandwidth",
        "dpkg-query -W nccl-tests",
        "rpm -q nccl-tests",
        "the benchmarks role installs nccl-tests",
        "dnf versionlock add nccl-tests",
    ],
)
def test_the_scan_leaves_queries_alone(text: str) -> None:
    assert not installs(text), text
