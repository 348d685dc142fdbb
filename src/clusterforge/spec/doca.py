"""DOCA-Host releases → the DOCA-OFED version (``ofed_info -s``) and MFT version each installs.

The one table is ``catalog/software/doca.yaml``. A ``software.rdma`` pin of stack ``doca-ofed`` is a DOCA-Host
release listed there (``2.10.0``) or a DOCA-OFED version itself (``25.01``, ``25.01-0.6.0``: the year.month
numbering ``ofed_info`` prints); :func:`expected_ofed` gives the OFED version to certify against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

#: a DOCA-OFED (or MLNX_OFED) version: YY.MM, optionally -x.y.z (DOCA-Host releases are 2.x, 3.x ...)
OFED_VERSION = re.compile(r"^(?:2[0-9]|[3-9][0-9])\.(?:0[1-9]|1[0-2])(?:-[0-9]+(?:\.[0-9]+)*)?$")


@dataclass(frozen=True)
class DocaRelease:
    doca: str
    ofed: str
    mft: str


@cache
def releases() -> dict[str, DocaRelease]:
    """Every DOCA-Host release in the table, by release."""
    text = (resources.files("clusterforge.spec") / "catalog" / "software" / "doca.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    return {str(k): DocaRelease(str(k), str(v["ofed"]), str(v["mft"])) for k, v in data.items()}


def expected_ofed(pin: str) -> str | None:
    """The DOCA-OFED version a ``doca-ofed`` pin means: the release's from the table, the pin itself when it
    is a DOCA-OFED version, else None (an unknown DOCA-Host release)."""
    rel = releases().get(pin)
    if rel is not None:
        return rel.ofed
    return pin if OFED_VERSION.match(pin) else None
