"""Package listings of both families (dpkg-query / dpkg -l / rpm -q), /etc/os-release, and version ordering.

Real captures: dpkg-l-nvidia__ubuntu-465-driver-un-ii-rc-states-truncated-version-nvdocker1506__excerpt1.txt
(https://github.com/NVIDIA/nvidia-docker/issues/1506); ``rpm -qa --qf '%{NAME} %{EPOCH} %{VERSION} %{RELEASE}
%{ARCH}\n'`` on Oracle Linux 8.7 and CentOS 6.10 and its ``%{EPOCHNUM}`` form
(https://github.com/future-architect/vuls/pull/1381), and rpm's "package X is not installed" line on stdout
(https://github.com/rpm-software-management/rpm/pull/1794); ``dpkg-query -W -f=...`` in the validators'
format captured on a Debian 12 machine and on the lent H100 machine's Ubuntu 24.04 image (held ``hi``
packages, a ``un`` row with an empty version, a whole listing); see tests/fixtures/real/SOURCES.md. No
capture of a removed (``rc``) state in that format, nor of an RPM listing with a set epoch or several
kernels, was found: those inputs are CONSTRUCTED below from the tools' documented formats (dpkg-query(1)
``-W -f`` fields and ``${db:Status-Abbrev}``; rpm(8) ``--queryformat`` tags), and say so.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.packages import os_family, parse_dpkg_l, parse_dpkg_query, parse_rpm_query
from clusterforge.hw.pkgversion import compare, deb_compare, matches_pin, rpm_compare, rpmvercmp, upstream

Real = Callable[[str], str]


def test_dpkg_l_real_states(real: Real) -> None:
    """dpkg-l-nvidia__ubuntu-465-driver-un-ii-rc-states-truncated-version-nvdocker1506__excerpt1.txt: ``un``
    rows are not installed, ``rc`` (config files left) is not installed, ``:amd64`` is dropped from names."""
    p = parse_dpkg_l(
        real("dpkg-l-nvidia__ubuntu-465-driver-un-ii-rc-states-truncated-version-nvdocker1506__excerpt1.txt")
    )
    assert p.family == "debian"
    assert dict(p.installed) == {
        "libnvidia-cfg1-465": ("465.19.01-0ubuntu1",),
        "libnvidia-common-465": ("465.19.01-0ubuntu1",),
    }
    assert p.states["libnvidia-compute-418"] == "rc" and "libgldispatch0-nvidia" in p.not_installed
    # dpkg cut this version to its column width; it is kept as printed
    assert p.states["libnvidia-compute-440"] == "rc"


# CONSTRUCTED from dpkg-query(1): -W -f='${Package}\t${Version}\t${db:Status-Abbrev}\n'
DPKG_QUERY = (
    "libnccl2\t2.26.2-1+cuda12.8\thi \n"
    "rdma-core\t44.0-2\tii \n"
    "datacenter-gpu-manager-4-core\t1:4.2.3-1\tii \n"
    "libnccl-dev\t2.25.1-1+cuda12.8\trc \n"
    "libnvidia-compute-570:amd64\t570.148.08-0ubuntu1\tii \n"
    "mlnx-tools\t\tun \n"
)


def test_dpkg_query_constructed() -> None:
    p = parse_dpkg_query(DPKG_QUERY)
    assert p.versions("libnccl2") == ("2.26.2-1+cuda12.8",)  # held (hi) is installed
    assert p.versions("libnccl-dev") == () and p.states["libnccl-dev"] == "rc"
    assert p.versions("libnvidia-compute-570") == ("570.148.08-0ubuntu1",)
    assert p.not_installed == ("mlnx-tools",)
    with pytest.raises(ParseError, match="package<TAB>version<TAB>status"):
        parse_dpkg_query("rdma-core 44.0-2 ii\n")
    with pytest.raises(ParseError, match="upstream version must start with a digit"):
        parse_dpkg_query("rdma-core\tgarbage\tii \n")


def test_dpkg_query_real(real: Callable[[str], str]) -> None:
    p = parse_dpkg_query(
        real("dpkg-query-W-f-package-version-status__debian12.11-bookworm-named-epoch-local__1.txt")
    )
    assert p.family == "debian" and p.not_installed == ()
    assert sorted(p.installed) == ["iproute2", "libc6", "openssh-client", "python3", "systemd-container"]
    assert p.versions("openssh-client") == ("1:9.2p1-2+deb12u6",) and p.states["python3"] == "ii"
    assert upstream("debian", p.versions("openssh-client")[0]) == "9.2p1"
    assert matches_pin("debian", p.versions("python3")[0], "3.11.2")


def test_dpkg_query_real_held_and_unknown_states(real: Callable[[str], str]) -> None:
    """The lent H100 machine's image: held (``hi``) packages are installed at their version; a package dpkg
    knows but never installed prints ``un`` with an empty version and is not installed (not a parse error);
    the absent name went to stderr and is simply not listed."""
    p = parse_dpkg_query(
        real("dpkg-query-W-f-package-version-status__ubuntu24.04-cuda13-image-hold-un-named-device__2.txt")
    )
    assert p.versions("libnccl2") == ("2.28.3-1+cuda13.0",) and p.states["libnccl2"] == "hi"
    assert p.versions("libcudnn9-cuda-13") == ("9.14.0.64-1",) and p.states["libcudnn9-cuda-13"] == "hi"
    assert p.versions("cuda-compat-13-0") == ("580.95.05-0ubuntu1",)
    assert p.not_installed == ("cuda-cub-13-0",) and p.versions("cuda-cub-13-0") == ()
    assert "nvidia-driver-570-open" not in p.states
    assert not matches_pin("debian", p.versions("libnccl2")[0], "2.26.2")  # the lab pins NCCL 2.26.2
    assert matches_pin("debian", p.versions("libnccl2")[0], "2.28.3")


def test_dpkg_query_real_whole_listing(real: Callable[[str], str]) -> None:
    p = parse_dpkg_query(
        real("dpkg-query-W-f-package-version-status__ubuntu24.04-cuda13-image-all-device__3.txt")
    )
    assert len(p.installed) == 439 and p.not_installed == ()
    held = sorted(n for n, st in p.states.items() if st == "hi")
    assert held == ["libcublas-13-0", "libcublas-dev-13-0", "libcudnn9-cuda-13", "libnccl-dev", "libnccl2"]
    assert p.versions("e2fsprogs") == ("1.47.0-2.4~exp1ubuntu4.1",)
    assert upstream("debian", p.versions("e2fsprogs")[0]) == "1.47.0"


@pytest.mark.parametrize(
    ("name", "rows", "row"),
    [
        (
            "rpm-qa-qf-name-epoch-version-release-arch__ol8.7-epoch-none-vuls1381__excerpt1.txt",
            10,
            ("glibc", "(none):2.28-211.0.1.el8"),
        ),
        (
            "rpm-qa-qf-name-epochnum-version-release-arch__ol8.7-vuls1381__excerpt2.txt",
            8,
            ("libgcc", "0:8.5.0-16.0.2.el8_7"),
        ),
        (
            "rpm-qa-qf-name-epoch-version-release-arch__centos6.10-epoch-none-vuls1381__excerpt3.txt",
            10,
            ("libacl", "(none):2.2.49-7.el6_9.1"),
        ),
    ],
)
def test_rpm_query_real(real: Callable[[str], str], name: str, rows: int, row: tuple[str, str]) -> None:
    p = parse_rpm_query(real(name))
    assert p.family == "redhat" and len(p.installed) == rows and p.not_installed == ()
    assert p.versions(row[0]) == (row[1],)
    assert upstream("redhat", row[1]) == row[1].split(":")[1].rsplit("-", 1)[0]


def test_rpm_query_real_absent_package(real: Callable[[str], str]) -> None:
    absent = "rpm-q-qf-not-installed__rosa2021.1-kernel-source-nvidia390-rpm1794__excerpt1.txt"
    p = parse_rpm_query(real(absent))
    assert p.installed == {} and p.not_installed == ("kernel-source-nvidia390",)


def test_rpm_query_epochs_compare_the_same_in_both_forms(real: Callable[[str], str]) -> None:
    old = parse_rpm_query(
        real("rpm-qa-qf-name-epoch-version-release-arch__ol8.7-epoch-none-vuls1381__excerpt1.txt")
    )
    new = parse_rpm_query(real("rpm-qa-qf-name-epochnum-version-release-arch__ol8.7-vuls1381__excerpt2.txt"))
    for name, versions in new.installed.items():
        assert rpm_compare(old.versions(name)[0], versions[0]) == 0, name


# CONSTRUCTED from rpm(8): the same query format with a set epoch, two kernels, a multilib pair and an
# absent named package (no public capture shows these together)
RPM_Q = (
    "rdma-core (none) 51.0 1.el9 x86_64\n"
    "libnccl (none) 2.26.2 1+cuda12.8 x86_64\n"
    "nvidia-driver 3 570.148.08 1.el9 x86_64\n"
    "kernel (none) 5.14.0 427.13.1.el9_4 x86_64\n"
    "kernel (none) 5.14.0 503.11.1.el9_5 x86_64\n"
    "glibc (none) 2.34 100.el9 x86_64\n"
    "glibc (none) 2.34 100.el9 i686\n"
    "package mlnx-ofa_kernel is not installed\n"
)


def test_rpm_query_constructed() -> None:
    p = parse_rpm_query(RPM_Q)
    assert p.family == "redhat" and p.not_installed == ("mlnx-ofa_kernel",)
    assert p.versions("kernel") == ("(none):5.14.0-427.13.1.el9_4", "(none):5.14.0-503.11.1.el9_5")
    assert p.versions("glibc") == ("(none):2.34-100.el9",)
    assert upstream("redhat", p.versions("nvidia-driver")[0]) == "570.148.08"
    assert rpm_compare(p.versions("nvidia-driver")[0], "(none):580.65.06-1.el9") == 1  # epoch 3 wins
    assert matches_pin("redhat", p.versions("libnccl")[0], "2.26.2")
    assert parse_rpm_query("package rdma-core is not installed\n").installed == {}
    with pytest.raises(ParseError, match="name epoch version release arch"):
        parse_rpm_query("rdma-core-51.0-1.el9.x86_64\n")  # rpm -qa's default format is not this one
    with pytest.raises(ParseError, match="name epoch version release arch"):
        parse_rpm_query("rdma-core\t(none):51.0-1.el9\n")  # the old tab form
    with pytest.raises(ParseError, match="neither a number nor"):
        parse_rpm_query("rdma-core x 51.0 1.el9 x86_64\n")
    with pytest.raises(ParseError, match="empty output"):
        parse_rpm_query("\n\n")


def test_os_family() -> None:
    # /etc/os-release keys as documented in os-release(5)
    assert os_family('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n') == "debian"
    assert os_family('ID="rocky"\nID_LIKE="rhel centos fedora"\n') == "redhat"
    assert os_family('ID=somederiv\nID_LIKE="rhel fedora"\n') == "redhat"
    with pytest.raises(ParseError, match="unsupported OS"):
        os_family("ID=alpine\n")


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        # Debian Policy 5.6.12: "~~" < "~~a" < "~" < "" < "a"
        ("1.0~~", "1.0~~a", -1),
        ("1.0~~a", "1.0~", -1),
        ("1.0~", "1.0", -1),
        ("1.0", "1.0a", -1),
        ("1.0~rc1-1", "1.0-1", -1),
        ("1:0.1", "2.0", 1),  # epoch first
        ("2.26.2-1+cuda12.8", "2.26.2-1+cuda12.9", -1),
        ("1.0-1", "1.0-1ubuntu1", -1),
        ("1.0", "1.0-0", 0),  # an absent revision equals "0"
        ("1.10", "1.9", 1),  # digit runs compare as numbers
        ("1.0.0", "1.00.0", 0),
        ("465.19.01-0ubuntu1", "465.19.1-0ubuntu1", 0),
    ],
)
def test_deb_compare(a: str, b: str, want: int) -> None:
    assert deb_compare(a, b) == want and deb_compare(b, a) == -want and compare("debian", a, b) == want


#: rpm's own tests/rpmvercmp.at (rpm-software-management/rpm @0920d333), a selection
RPMVERCMP = [
    ("1.0", "2.0", -1), ("2.0.1", "2.0.1", 0), ("2.0", "2.0.1", -1), ("2.0.1a", "2.0.1", 1),
    ("5.5p1", "5.5p2", -1), ("5.5p1", "5.5p10", -1), ("10xyz", "10.1xyz", -1), ("xyz10", "xyz10.1", -1),
    ("xyz.4", "8", -1), ("xyz.4", "2", -1), ("5.5p2", "5.6p1", -1), ("6.0.rc1", "6.0", 1),
    ("10b2", "10a1", 1), ("1.0a", "1.0aa", -1), ("10.0001", "10.1", 0), ("10.0001", "10.0039", -1),
    ("4.999.9", "5.0", -1), ("20101121", "20101122", -1), ("2.0", "2_0", 0), ("a+", "a_", 0),
    ("+a", "_a", 0), ("_+", "+_", 0), ("+", "_", 0), ("1.0~rc1", "1.0", -1), ("1.0~rc1", "1.0~rc2", -1),
    ("1.0~rc1~git123", "1.0~rc1", -1),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "want"), RPMVERCMP)
def test_rpmvercmp(a: str, b: str, want: int) -> None:
    assert rpmvercmp(a, b) == want and rpmvercmp(b, a) == -want


def test_rpm_evr_and_caret() -> None:
    # caret (rpm >= 4.15 docs): after the base version, before anything longer
    assert rpmvercmp("1.0^git1", "1.0") == 1 and rpmvercmp("1.0^git1", "1.0.1") == -1
    assert rpm_compare("3:570.148.08-1.el9", "(none):580.65.06-1.el9") == 1  # epoch wins
    assert rpm_compare("(none):51.0-1.el9", "0:51.0-2.el9") == -1
    assert rpm_compare("51.0", "51.0-2.el9") == 0  # a missing release is not compared
    assert compare("redhat", "(none):2.26.2-1+cuda12.8", "(none):2.26.10-1+cuda12.8") == -1
    with pytest.raises(ValueError, match="unknown package family"):
        compare("arch", "1", "2")


def test_matches_pin_boundaries() -> None:
    assert matches_pin("debian", "1:4.2.3-1", "4.2.3") and matches_pin("debian", "1:4.2.3-1", "4.2")
    assert not matches_pin("debian", "2.26.20-1", "2.26.2")
    assert matches_pin("redhat", "(none):44.0-2.el9", "44.0")


def test_dpkg_l_held_and_unknown_rows_cuda13_image(real: Real) -> None:
    """dpkg-l-nvidia__cuda13-image-drv580-device__1.txt - ``dpkg -l '*nvidia*' '*cuda*'`` captured by
    scripts/capture-node.sh on a lent H100 machine: ``hi`` (held, installed) counts as installed with its
    version; ``un`` rows with ``<none>`` versions are not installed."""
    p = parse_dpkg_l(real("dpkg-l-nvidia__cuda13-image-drv580-device__1.txt"))
    assert p.family == "debian" and len(p.installed) == 35
    assert p.installed["libcudnn9-cuda-13"] == ("9.14.0.64-1",) and p.states["libcudnn9-cuda-13"] == "hi"
    assert p.installed["cuda-cudart-13-0"] == ("13.0.96-1",)
    assert p.installed["cuda-compat-13-0"] == ("580.95.05-0ubuntu1",)
    assert "cuda-cudart-11-2" in p.not_installed and "cuda-cudart-11-2" not in p.installed
