"""A small, fast YAML writer for the big generated files (hosts.yml of 10^4 hosts).

PyYAML's pure-Python representer needs about a minute for a 12,500-host inventory; this writer needs well
under a second because it emits plain data directly and writes each mapping of scalars (a rail) as one
JSON-compatible flow mapping, which `json.dumps` renders in C. Output is YAML 1.1 as PyYAML and Ansible read
it: `yaml.safe_load(dump(x)) == x` for dicts, lists, str, int, float, bool and None (tested with Hypothesis).

Style: block mappings; short lists and mappings of scalars (a rail, a list of addresses) in flow style
(`[a, b]`, `{k: v}`); strings plain when unambiguous, else double-quoted.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*\Z")
# words PyYAML (YAML 1.1) or other YAML 1.1 readers resolve to booleans or null
_RESERVED = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
_NONE = type(None)
_SCALARS = frozenset({str, int, float, bool, _NONE})
_JSON_SCALARS = frozenset({str, int, bool, _NONE})
FLOW_MAX_ITEMS = 24


def _json_encoder() -> Any:
    """`json.dumps` with default arguments, minus its per-call set-up (one C encoder, reused)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pure-Python json
        return json.dumps
    enc = make(None, None, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return lambda value: "".join(enc(value, 0))


_dumps = _json_encoder()


def _pyyaml_scalar(value: Any) -> str:
    """PyYAML's rendering on one line: strings double-quoted (escapes keep them single-line)."""
    style = '"' if isinstance(value, str) else None
    text = yaml.dump(value, Dumper=yaml.SafeDumper, default_style=style, width=math.inf, allow_unicode=True)
    return text.removesuffix("\n...\n").removesuffix("\n")


def scalar(value: Any) -> str:
    """One YAML scalar (flow- and block-safe)."""
    t = type(value)
    if t is str:
        if _PLAIN.match(value) and value.lower() not in _RESERVED:
            return str(value)
        if value.isascii() and value.isprintable():
            return json.dumps(value)  # a JSON string of printable ASCII is a valid YAML double-quoted scalar
        return _pyyaml_scalar(value)
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if value is None:
        return "null"
    if t is float:
        r = repr(value)
        if "." in r and "e" not in r and "n" not in r:  # 1.5 is a YAML 1.1 float; 1e-05, inf, nan are not
            return r
    return _pyyaml_scalar(value)


def flow(value: dict[Any, Any] | list[Any]) -> str | None:
    """A short mapping or list of scalars on one line, or None when it should be written in block style
    (nested values, more than FLOW_MAX_ITEMS items, or a mapping of nulls, which reads better as a block)."""
    if not value:
        return "{}" if isinstance(value, dict) else "[]"
    if len(value) > FLOW_MAX_ITEMS:
        return None
    is_dict = isinstance(value, dict)
    vtypes = set(map(type, value.values() if is_dict else value))  # type: ignore[union-attr]
    if not vtypes <= _SCALARS or (is_dict and vtypes == {_NONE}):
        return None
    ktypes = set(map(type, value)) if is_dict else {str}
    if not ktypes <= _SCALARS:
        return None
    if vtypes <= _JSON_SCALARS and ktypes == {str}:
        j = _dumps(value)  # JSON is a YAML flow collection; C speed
        if "\\u" not in j:  # nothing JSON had to escape as a \u sequence (non-ASCII, control characters)
            return j
    if is_dict:
        return "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in value.items()) + "}"  # type: ignore[union-attr]
    return "[" + ", ".join(scalar(v) for v in value) + "]"


def _emit(value: Any, indent: int, out: list[str], keys: dict[Any, str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            out.append(pad + "{}\n")
            return
        for k, v in value.items():
            key = keys.get(k)
            if key is None:
                key = keys[k] = scalar(k)
            if type(v) in _SCALARS:
                out.append(f"{pad}{key}: {scalar(v)}\n")
                continue
            line = flow(v) if isinstance(v, dict | list) else None
            if line is not None:
                out.append(f"{pad}{key}: {line}\n")
            else:
                out.append(f"{pad}{key}:\n")
                _emit(v, indent + 2, out, keys)
    elif isinstance(value, list):
        if not value:
            out.append(pad + "[]\n")
            return
        for v in value:
            if type(v) in _SCALARS:
                out.append(f"{pad}- {scalar(v)}\n")
                continue
            line = flow(v) if isinstance(v, dict | list) else None
            if line is not None:
                out.append(f"{pad}- {line}\n")
            else:
                first = len(out)
                _emit(v, indent + 2, out, keys)
                out[first] = f"{pad}- {out[first][indent + 2 :]}"
    else:
        out.append(f"{pad}{scalar(value)}\n")


def lines(value: Any, indent: int = 0) -> list[str]:
    """Block YAML lines (each ending in a newline) for a mapping or list at `indent` spaces."""
    out: list[str] = []
    _emit(value, indent, out, {})
    return out


def dump(value: Any) -> str:
    """The YAML document for `value` (a mapping or a list)."""
    return "".join(lines(value))
