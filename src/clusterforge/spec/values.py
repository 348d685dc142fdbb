"""Value types of the spec for everything that reaches a node, a file or a terminal.

A spec is untrusted input (docs/security.md). Every string that ends up in a command, a configuration file,
a path, an Ansible variable or a generated name has a type here that admits only what the value can be:
interface names by the kernel's rules (stricter: no characters outside `[A-Za-z0-9_.-]`), RDMA device
names, PCI addresses, hosts (with a port where a port belongs), tuned profiles, naming patterns with the
documented field only, and free text without control characters or template braces. Failures carry their
own `expected` and `fix` (error type `spec_value`), which the loader puts in its report.
"""

from __future__ import annotations

import ipaddress
import re
import string
import unicodedata
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, Strict, StrictStr
from pydantic_core import PydanticCustomError

NAMING_WIDTH_MAX = 6  # {index:06d}: enough for 20,000 nodes a pool; a larger width is refused
NAMING_MAX_CHARS = 64
TEXT_MAX_CHARS = 1024


def bad(expected: str, fix: str) -> PydanticCustomError:
    """A validation error whose message is `expected` and whose context carries the `fix`."""
    return PydanticCustomError("spec_value", "{expected}", {"expected": expected, "fix": fix})


def _checked(test: Callable[[str], bool], expected: str, fix: str) -> AfterValidator:
    def check(v: str) -> str:
        if not test(v):
            raise bad(expected, fix)
        return v

    return AfterValidator(check)


def _matches(pattern: str) -> Callable[[str], bool]:
    rx = re.compile(pattern)
    return lambda v: rx.fullmatch(v) is not None


_IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")
IfName = Annotated[
    StrictStr,
    _checked(
        lambda v: _IFNAME.fullmatch(v) is not None and v not in (".", ".."),
        "an interface name: 1 to 15 characters of A-Z a-z 0-9 _ . - (not '.' or '..')",
        "use the name `ip link` shows for the device, e.g. ens1f0np0",
    ),
]
HcaName = Annotated[
    StrictStr,
    _checked(
        _matches(r"[a-z][a-z0-9_]{0,63}"),
        "an RDMA device name: a lowercase letter, then up to 63 of a-z 0-9 _ (e.g. mlx5_0, rocep1s0f1)",
        "use the name `ibv_devices` or `rdma link` shows",
    ),
]
PciAddress = Annotated[
    StrictStr,
    _checked(
        _matches(r"[0-9a-f]{4}:[0-9a-f]{2}:[01][0-9a-f]\.[0-7]"),
        "a PCI address domain:bus:device.function in lowercase hex, e.g. 0000:18:00.0",
        "copy the address from `lspci -D` (lowercase)",
    ),
]
Token = Annotated[
    StrictStr,
    _checked(
        _matches(r"[A-Za-z0-9][A-Za-z0-9_.+:~-]{0,63}"),
        "a word of at most 64 characters: A-Z a-z 0-9 and _ . + : ~ - (not first)",
        "write the value without spaces, quotes or other symbols",
    ),
]
TunedProfile = Annotated[
    StrictStr,
    _checked(
        _matches(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"),
        "one tuned profile name: A-Z a-z 0-9 _ . - (e.g. latency-performance)",
        "name one profile as `tuned-adm list` shows it",
    ),
]
SkuName = Annotated[
    StrictStr,
    _checked(
        _matches(r"[a-z0-9][a-z0-9-]{0,63}"),
        "a SKU name: a-z 0-9 and '-' (not first), at most 64 characters",
        "shorten or rename the SKU",
    ),
]
Key = Annotated[
    StrictStr,
    _checked(
        _matches(r"[A-Za-z0-9_.-]{1,64}"),
        "a key of at most 64 characters: A-Z a-z 0-9 _ . -",
        "rename the key",
    ),
]

CounterName = Annotated[
    StrictStr,
    _checked(
        _matches(r"(?=.{1,64}\Z)(?:[A-Za-z0-9_]|\{prio\})+"),
        "a counter name: A-Z a-z 0-9 _, with {prio} standing for the lossless priority "
        "(e.g. symbol_error, rx_prio{prio}_pause), at most 64 characters",
        "name a counter of the link-counter policy as docs/spec.md lists them",
    ),
]


def _is_text(v: str, limit: int = TEXT_MAX_CHARS) -> bool:
    return len(v) <= limit and "{" not in v and "}" not in v and not any(_unprintable(c) for c in v)


def _unprintable(c: str) -> bool:
    """Control, format (bidi overrides, zero-width), separator-of-line/paragraph and unassigned characters."""
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


Text = Annotated[
    StrictStr,
    _checked(
        _is_text,
        f"text of at most {TEXT_MAX_CHARS} characters without control characters or braces {{ }}",
        "remove control characters and braces (Ansible would read {{ }} as a template)",
    ),
]

_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def is_hostname(v: str) -> bool:
    """RFC 1123 host name: dot-separated labels of A-Z a-z 0-9 '-', at most 253 characters, last label not
    all digits (so that an invalid IPv4 address is not read as a name)."""
    labels = v.split(".")
    return 0 < len(v) <= 253 and all(_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()


def is_ip(v: str) -> bool:
    if "%" in v:  # IPv6 scope ids are interface names: not for a server address
        return False
    try:
        ipaddress.ip_address(v)
    except ValueError:
        return False
    return True


def is_host(v: str) -> bool:
    return is_ip(v) or is_hostname(v)


def is_host_port(v: str) -> bool:
    """`host`, `host:port`, `[ipv6]` or `[ipv6]:port` (host: a name or an IPv4 address)."""
    host, port = v, ""
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return False
        host, rest = v[1:end], v[end + 1 :]
        if rest and not rest.startswith(":"):
            return False
        port = rest[1:] if rest else ""
        if not isinstance(_ip(host), ipaddress.IPv6Address) or "%" in host or (rest and not port):
            return False
    elif ":" in v:
        host, _, port = v.rpartition(":")
        if not port or not (is_hostname(host) or isinstance(_ip(host), ipaddress.IPv4Address)):
            return False
    elif not (is_hostname(host) or isinstance(_ip(host), ipaddress.IPv4Address)):
        return False
    return not port or (re.fullmatch(r"[1-9][0-9]{0,4}", port) is not None and int(port) <= 65535)


def _ip(v: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(v)
    except ValueError:
        return None


Host = Annotated[
    StrictStr,
    _checked(
        is_host,
        "a host name (RFC 1123) or an IP address, without a port",
        "write a name such as ntp1.example.com or an address such as 10.0.0.2",
    ),
]
HostPort = Annotated[
    StrictStr,
    _checked(
        is_host_port,
        "a host name or IPv4 address with an optional :port, or [IPv6]:port",
        "write e.g. 10.10.1.11, bmc-01.example.com:443 or [2001:db8::1]:443",
    ),
]


def naming_problem(pattern: str, literal: str, what: str) -> str | None:
    """Why `pattern` is not a naming pattern (None when it is): Python format text whose only replacement
    field is `{index}`, with at most a zero-padded width up to NAMING_WIDTH_MAX (`{index:04d}`), and whose
    literal text is made of the characters of the regex class `literal`."""
    if len(pattern) > NAMING_MAX_CHARS:
        return f"at most {NAMING_MAX_CHARS} characters"
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        return f"a valid pattern ({exc})"
    lit = re.compile(f"[{literal}]*")
    spec = re.compile(f"(0?[1-{NAMING_WIDTH_MAX}])?d?")
    fields = 0
    for text, name, fmt, conv in parts:
        if not lit.fullmatch(text):
            return f"{what} characters outside the braces"
        if name is None:
            continue
        if name != "index" or conv is not None or fmt is None or not spec.fullmatch(fmt):
            return "{index} as the only field, with at most a width"
        fields += 1
    return None if fields else "{index} in the pattern"


def _naming(literal: str, what: str, example: str) -> AfterValidator:
    expected = (
        f"a naming pattern with {{index}} (1-based), optionally zero-padded to a width of at most "
        f"{NAMING_WIDTH_MAX} (e.g. '{example}'), and otherwise only {what}"
    )

    def check(v: str) -> str:
        why = naming_problem(v, literal, what)
        if why is not None:
            raise bad(
                expected,
                f"fix the pattern: it needs {why}; {{index}} is the only field "
                "(no attributes, indexes, conversions, alignment or signs)",
            )
        return v

    return AfterValidator(check)


NodeNaming = Annotated[StrictStr, _naming("a-z0-9-", "a-z, 0-9 and '-'", "gpu-{index:04d}")]
RackNaming = Annotated[StrictStr, _naming("A-Za-z0-9_-", "A-Z, a-z, 0-9, '_' and '-'", "r{index:02d}")]

IPv4Addr = Annotated[ipaddress.IPv4Address, Strict(False)]
IPv4Net = Annotated[ipaddress.IPv4Network, Strict(False)]
