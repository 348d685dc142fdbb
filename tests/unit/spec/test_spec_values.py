"""The spec's value types at their boundaries, and the one error printer (issue 16)."""

from __future__ import annotations

import io

import pytest
from pydantic import TypeAdapter, ValidationError
from rich.console import Console

from clusterforge.errors import InputError, Problem, printable
from clusterforge.spec.values import (
    NAMING_WIDTH_MAX,
    HcaName,
    Host,
    HostPort,
    IfName,
    NodeNaming,
    PciAddress,
    RackNaming,
    Text,
    TunedProfile,
)
from clusterforge.term import error_line, literal, safe

CASES = [
    (IfName, ["eth0", "ens1f0np0", "ibp24s0", "a" * 15, "bond0.100", "a_b-c", "mgmt"],
     ["", ".", "..", "a" * 16, "eth 0", "eth/0", "eth:0", "eth0\n", "eth\x000", "éth0", "$(id)"]),
    (HcaName, ["mlx5_0", "ibp12s0", "rocep1s0f1", "mlx5_bond_0", "bnxt_re0", "irdma0"],
     ["", "0mlx", "MLX5_0", "mlx5-0", "mlx5_0;id", "../x", "mlx5_0\n", "m" * 65]),
    (PciAddress, ["0000:18:00.0", "0000:c1:1f.7", "ffff:ff:1f.7"],
     ["0000:18:00.8", "0000:18:20.0", "0000:18:00", "18:00.0", "0000:18:00.0 ", "0000:GG:00.0",
      "0000:18:00.A"]),
    (Host, ["pool.ntp.org", "10.244.0.1", "2001:db8::1", "ntp-1", "a.b-c.d"],
     ["", "10.0.0.256", "ntp.org:123", "-ntp.org", "ntp..org", "fe80::1%eth0", "a b", "x\nserver y",
      "1.2.3"]),
    (HostPort, ["127.0.0.1:8441", "10.10.1.11", "bmc-01.example.com:443", "[2001:db8::1]:443", "[::1]"],
     ["2001:db8::1", "[2001:db8::1]x", "host:0", "host:65536", "host:080", "host:", "[10.0.0.1]:1", "h;id"]),
    (TunedProfile, ["latency-performance", "network-latency", "hpc_compute", "my.profile"],
     ["", "a b", "a;b", "-x", "a/b", "a" * 65]),
    (Text, ["NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) Platinum 8480C", "", "é ü `nvidia-smi topo -m`"],
     ["{{ x }}", "{% x %}", "a}", "\x1b[31m", "a\nb", "a\u202eb", "\x85", "x" * 1025]),
]  # fmt: skip


@pytest.mark.parametrize(("typ", "good", "bad"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_value_types(typ: object, good: list[str], bad: list[str]) -> None:
    ta: TypeAdapter[str] = TypeAdapter(typ)
    for v in good:
        assert ta.validate_python(v) == v
    for v in bad:
        with pytest.raises(ValidationError) as info:
            ta.validate_python(v)
        err = info.value.errors()[0]
        assert err["type"] in ("spec_value", "string_type"), err
        if err["type"] == "spec_value":
            assert err["ctx"]["fix"] and err["msg"] == err["ctx"]["expected"]


def test_strings_only() -> None:
    for typ in (IfName, Host, Text):
        for v in (1, True, None, b"eth0", ["eth0"]):
            with pytest.raises(ValidationError):
                TypeAdapter(typ).validate_python(v)


def test_naming_patterns() -> None:
    node: TypeAdapter[str] = TypeAdapter(NodeNaming)
    rack: TypeAdapter[str] = TypeAdapter(RackNaming)
    for v in ("gpu-{index:04d}", "n{index}", f"gpu-{{index:0{NAMING_WIDTH_MAX}d}}", "{index:3}", "{index}-x"):
        node.validate_python(v)
    for v in (
        f"gpu-{{index:0{NAMING_WIDTH_MAX + 1}d}}",
        "gpu-{index:10}",
        "gpu",
        "gpu-{index[0]}",
        "gpu-{index.real}",
        "gpu-{index!r}",
        "gpu-{foo}",
        "gpu-{}",
        "gpu-{0}",
        "gpu-{index:x}",
        "gpu-{index:,}",
        "gpu-{index:+d}",
        "gpu-{index:>5}",
        "gpu-{index:{w}}",
        "GPU-{index}",
        "gpu_{index}",
        "gpu-{{index}}",
        "gpu-{index",
        "g" * 60 + "{index}",
    ):
        with pytest.raises(ValidationError):
            node.validate_python(v)
    rack.validate_python("R_{index:02d}")
    with pytest.raises(ValidationError):
        rack.validate_python("r.{index}")


def test_printable_escapes_controls_and_keeps_text() -> None:
    assert printable("plain [b]x[/b] é 日本") == "plain [b]x[/b] é 日本"
    assert printable("a\x1b[31mb\rc\nd\x00e\x85f\u202eg\u2028h\x7f") == (
        "a\\x1b[31mb\\rc\\nd\\x00e\\x85f\\u202eg\\u2028h\\x7f"
    )
    assert printable("a\tb") == "a\tb"
    assert printable("x" * 30, limit=10) == "x" * 10 + "... (20 more characters)"


def test_problem_render_is_one_printable_line() -> None:
    p = Problem("f\x1b.yaml", "a\nb", "x\r", "[/x]\x1b[2J", "fix\u202e", 3)
    line = p.render()
    assert line.isprintable() and "\n" not in line
    assert line == "f\\x1b.yaml:3 at `a\\nb`: expected x\\r; found [/x]\\x1b[2J. Fix: fix\\u202e"


def test_input_error_report_is_bounded() -> None:
    err = InputError([Problem("f", "p", "e", "x" * 10_000, "fix")] * 500, "bad")
    lines = err.render().split("\n")
    assert len(lines) == 1 + 100 + 1 and lines[-1] == "  ... and 400 more problem(s)"
    assert max(map(len, lines)) < 700


def _rendered(obj: object) -> str:
    buf = io.StringIO()
    Console(file=buf, width=300, force_terminal=True, color_system="truecolor").print(obj, highlight=False)
    return buf.getvalue()


def test_markup_in_user_text_prints_literally() -> None:
    out = _rendered(error_line("error", "found '[/x]' and [bold]not bold[/bold] \x1b[2J"))
    assert "[/x]" in out and "[bold]not bold[/bold]" in out and "\\x1b[2J" in out
    assert "\x1b[2J" not in out
    assert "[/x]" in _rendered(f"[red]label[/]: {safe('[/x] [red]')}") and "[red]" in _rendered(safe("[red]"))
    assert "\\r" in _rendered(literal("a\rb"))
