"""OpenSM's configuration files as a running subnet manager reads them: opensm.conf (the options file),
partitions.conf, qos-policy.conf and a GUID list (root_guid_file and the other GUID files).

Semantics follow OpenSM's own readers (linux-rdma/opensm, commit fa74b98c4b604ebb8b6bb348ca3ac065ba418df0):

- opensm.conf, `osm_subn_parse_conf_file` and `clean_val` (opensm/osm_subnet.c): everything from the
  first ``#`` of a line is a comment; the first blank/tab-separated token is the option name, the rest of
  the line the value, leading and trailing whitespace removed and one pair of enclosing double or single
  quotes dropped; options are applied line by line, so a repeated option's last value wins. ``(null)`` is
  how OpenSM writes (and reads) an unset string option. OpenSM ignores names it does not know (it logs
  "Unrecognized token"); here every name is kept - the option table is OpenSM's, not this parser's.
- partitions.conf, `osm_prtn_config_parse_file` (opensm/osm_prtn_config.c): ``#`` starts a comment, a rule
  ends at ``;`` and may span lines; whitespace between tokens carries no meaning.
- qos-policy.conf, the flex lexer opensm/osm_qos_parser_l.l: ``#`` to the end of the line is a comment,
  blanks and tabs separate tokens.
- GUID files, `parse_node_map` (complib/cl_nodenamemap.c): one GUID per line read with strtoull base 0
  (``0x`` hex, decimal, ``0`` octal), blank lines and lines starting with ``#`` skipped, anything after
  the GUID ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._common import require_text, split_lines
from .errors import ParseError

TOOL = "opensm.conf"
NULL = "(null)"  # OpenSM's spelling of an unset string option

_KEY_RE = re.compile(r"^[A-Za-z0-9_]+$")  # every name in OpenSM's option table (opt_tbl) has this form
_GUID_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|[1-9][0-9]*|0[0-7]*)(?=\s|#|$)")  # strtoull(.., 0)


@dataclass(frozen=True)
class OpensmOption:
    key: str
    value: str
    line_no: int


@dataclass(frozen=True)
class OpensmConf:
    entries: tuple[OpensmOption, ...]  # every option line, in file order
    options: dict[str, str] = field(compare=False)  # name -> value, the last line of a name wins

    @property
    def repeated(self) -> tuple[str, ...]:
        """Names set on more than one line (the last value is the one OpenSM uses)."""
        seen: dict[str, int] = {}
        for e in self.entries:
            seen[e.key] = seen.get(e.key, 0) + 1
        return tuple(k for k, n in seen.items() if n > 1)


def _clean(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1]
    return v


def parse(text: str) -> OpensmConf:
    """opensm.conf -> its options. ParseError for empty text, a file with no option line, or a line whose
    first token cannot be an OpenSM option name (e.g. a partitions.conf given in its place)."""
    require_text(TOOL, text)
    entries: list[OpensmOption] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.split("#", 1)[0]
        parts = line.strip().split(None, 1)
        if not parts:
            continue
        key = parts[0]
        if not _KEY_RE.match(key):
            raise ParseError(TOOL, f"{key!r} is not an OpenSM option name", line_no=line_no, line=raw)
        entries.append(OpensmOption(key, _clean(parts[1]) if len(parts) > 1 else "", line_no))
    if not entries:
        raise ParseError(TOOL, "no option line (only comments)")
    return OpensmConf(tuple(entries), {e.key: e.value for e in entries})


@dataclass(frozen=True)
class PartitionRule:
    text: str  # the rule without its ";", whitespace runs collapsed to one blank
    key: str  # the rule with all whitespace removed: what two rules are compared by
    name: str  # partition name ("Default")
    pkey: str | None  # P_Key as written, lower case ("0x7fff"); None when the rule gives none


@dataclass(frozen=True)
class PartitionsConf:
    rules: tuple[PartitionRule, ...]
    unterminated: str | None  # text after the last ";" (OpenSM never completes such a rule)


def _rule(text: str) -> PartitionRule:
    collapsed = " ".join(text.split())
    head = collapsed.split(":", 1)[0].split(",", 1)[0]
    name, _, pkey = head.partition("=")
    return PartitionRule(collapsed, "".join(text.split()), name.strip(), pkey.strip().lower() or None)


def parse_partitions(text: str) -> PartitionsConf:
    """partitions.conf -> its rules, comments dropped. ParseError for empty text or a file without one
    complete rule."""
    require_text("partitions.conf", text)
    body = " ".join(line.split("#", 1)[0] for line in split_lines(text))
    *rules, tail = body.split(";")
    done = tuple(_rule(r) for r in rules if r.strip())
    rest = " ".join(tail.split()) or None
    if not done:
        raise ParseError("partitions.conf", "no rule ending in ';'" + (f" (found {rest!r})" if rest else ""))
    return PartitionsConf(done, rest)


def qos_policy_lines(text: str) -> tuple[str, ...]:
    """qos-policy.conf -> its non-comment lines, each with whitespace runs collapsed to one blank (blank
    lines dropped). ParseError for empty text or a file of comments only."""
    require_text("qos-policy.conf", text)
    lines = tuple(" ".join(ln.split("#", 1)[0].split()) for ln in split_lines(text))
    out = tuple(ln for ln in lines if ln)
    if not out:
        raise ParseError("qos-policy.conf", "no policy line (only comments)")
    return out


def parse_guids(text: str, tool: str = "root_guids.conf") -> tuple[int, ...]:
    """A GUID file (root_guid_file, cn_guid_file, ...) -> its GUIDs in file order. ParseError for a line
    that does not start with a number, as OpenSM rejects the whole file then."""
    guids: list[int] = []
    for line_no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _GUID_RE.match(line)
        if m is None:
            raise ParseError(tool, "not a GUID", line_no=line_no, line=raw)
        g = m.group(1)
        guids.append(int(g, 0) if not g.startswith("0") or g[:2].lower() == "0x" else int(g, 8))
    return tuple(guids)
