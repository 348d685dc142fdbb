"""YAML loading that remembers the line of every key, so errors can point at it; bounded (untrusted specs).

Composition uses libyaml (CSafeLoader) when PyYAML has it. Duplicate keys and non-scalar keys are not
fatal: they are collected in `SourceDoc.problems` (the first value wins) so that the loader can report
them together with every schema and cross-field problem.

A spec is untrusted input (docs/security.md): only regular files up to `MAX_SPEC_BYTES` are read (the type is
checked before any read, so a FIFO or a device is refused without blocking); only the core YAML tags are
accepted; nesting is limited to `MAX_DEPTH`; aliases may expand to at most `MAX_ALIAS_NODES` nodes in all and
may not refer to themselves. Every violation is an `InputError` (exit 2) naming the file, path and line.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import InputError, Problem

PathKey = tuple[str | int, ...]

MAX_SPEC_BYTES = 4 * 1024 * 1024  # a spec file larger than this is refused unread
MAX_DEPTH = 64  # nesting of mappings and lists (a real spec nests about 8 deep)
MAX_ALIAS_NODES = 100_000  # nodes produced by expanding aliases, all aliases of a document together

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
_MAP, _SEQ, _MERGE = _CORE + "map", _CORE + "seq", _CORE + "merge"


@dataclass
class SourceDoc:
    """Parsed YAML data plus a map from YAML path to 1-based line number."""

    file: str
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line_of(self, path: PathKey) -> int | None:
        """Line of `path`, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), None)


class _Stop(Exception):
    """A problem that ends the build of a document (limits, recursion, bad tags and values)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


def _tag_name(tag: str | None) -> str:
    return "!!" + tag[len(_CORE) :] if tag and tag.startswith(_CORE) else str(tag)


class _Composer:
    """Turns a composed node tree into plain data, recording lines and collecting key problems.

    Aliases are shared nodes in the composed tree: a node met again is an alias being expanded, and every
    node built that way counts against `MAX_ALIAS_NODES`; a node met again while it is still being built
    is an alias that contains itself."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[PathKey, int] = {}
        self.problems: list[Problem] = []
        self._scalars = yaml.SafeLoader("")
        self._seen: set[int] = set()
        self._open: set[int] = set()
        self._aliased = 0

    def close(self) -> None:
        self._scalars.dispose()

    def _stop(self, node: yaml.Node, path: PathKey, expected: str, found: str, fix: str) -> _Stop:
        return _Stop(Problem(self.file, format_path(path), expected, found, fix, node.start_mark.line + 1))

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        key = id(node)
        if key in self._open:
            raise self._stop(
                node,
                path,
                "an alias that does not contain itself",
                "a recursive alias",
                "write the value out instead of referring to its own anchor",
            )
        if key in self._seen:
            self._aliased += 1
            if self._aliased > MAX_ALIAS_NODES:
                raise self._stop(
                    node,
                    path,
                    f"aliases that expand to at most {MAX_ALIAS_NODES} values in all",
                    "more (an alias expansion bomb?)",
                    "write the values out or use fewer aliases",
                )
        self._seen.add(key)
        if len(path) > MAX_DEPTH:
            raise self._stop(
                node,
                path,
                f"at most {MAX_DEPTH} levels of nesting",
                "deeper nesting",
                "flatten the document (a cluster spec nests about 8 levels)",
            )
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            want = _MAP if isinstance(node, yaml.MappingNode) else _SEQ
            if node.tag != want:
                raise self._bad_tag(node, path)
            self._open.add(key)
            try:
                if isinstance(node, yaml.MappingNode):
                    return self._mapping(node, path)
                return [self.build(v, (*path, i)) for i, v in enumerate(node.value)]
            finally:
                self._open.discard(key)
        return self._scalar(node, path)

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            line = knode.start_mark.line + 1
            if isinstance(knode, yaml.ScalarNode) and knode.tag == _MERGE:
                raise self._stop(
                    knode,
                    path,
                    "plain keys",
                    "a merge key (<<)",
                    "write the keys out: merge keys are not supported in specs",
                )
            key = self._scalar(knode, path) if isinstance(knode, yaml.ScalarNode) else None
            if key is None or not isinstance(key, str | int) or isinstance(key, bool):
                self.problems.append(
                    Problem(
                        self.file,
                        format_path(path),
                        "a plain string key",
                        repr(key)[:80] if key is not None else "a complex key",
                        "write the key as a plain word",
                        line,
                    )
                )
                continue
            skey = str(key)
            if skey in out:
                self.problems.append(
                    Problem(
                        self.file,
                        format_path((*path, skey)),
                        "each key once in a mapping",
                        f"duplicate key '{skey}' (first at line {self.lines.get((*path, skey))})",
                        "remove or merge the duplicate key",
                        line,
                    )
                )
                continue
            out[skey] = self.build(vnode, (*path, skey))
            self.lines[(*path, skey)] = line
        return out

    def _bad_tag(self, node: yaml.Node, path: PathKey) -> _Stop:
        return self._stop(
            node,
            path,
            "a plain YAML value (tags other than the core ones are not accepted)",
            f"tag {_tag_name(node.tag)}",
            "remove the tag",
        )

    def _scalar(self, node: yaml.Node, path: PathKey) -> Any:
        if node.tag not in _SCALAR_TAGS:
            raise self._bad_tag(node, path)
        try:
            return self._scalars.construct_object(node, deep=True)
        except Exception as exc:
            raise self._stop(
                node,
                path,
                f"a valid {_tag_name(node.tag)} value",
                f"{str(node.value)[:80]!r} ({exc})",
                "fix the value (quote it to make it a string)",
            ) from None


def format_path(path: PathKey) -> str:
    """`("pools", 0, "sku")` -> `pools[0].sku`."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _cannot_read(file: str, expected: str, found: str, fix: str) -> InputError:
    return InputError([Problem(file, "", expected, found, fix)], "cannot read spec")


def read_spec_text(path: Path | str) -> str:
    """The text of a spec file: a regular file of at most MAX_SPEC_BYTES, UTF-8. The file type is checked
    before it is opened (a FIFO, a device or a folder is refused without reading), and again on the open
    descriptor; the read stops one byte past the limit whatever the file claims its size is."""
    file = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _cannot_read(file, "an existing spec file", "no such file", "check the path") from None
    except (OSError, ValueError) as exc:
        raise _cannot_read(file, "a readable spec file", str(exc), "check the path") from None
    _check_stat(file, st)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _cannot_read(
            file, "a readable spec file", str(exc), "check the file and its permissions"
        ) from None
    try:
        _check_stat(file, os.fstat(fd))
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise _cannot_read(
            file, "a readable spec file", str(exc), "check the file and its permissions"
        ) from None
    finally:
        os.close(fd)
    if len(data) > MAX_SPEC_BYTES:
        raise _too_big(file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _cannot_read(file, "a UTF-8 text file", str(exc), "save the spec as UTF-8") from None


def _check_stat(file: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = {
            stat.S_IFDIR: "a folder",
            stat.S_IFIFO: "a FIFO (named pipe)",
            stat.S_IFCHR: "a character device",
            stat.S_IFBLK: "a block device",
            stat.S_IFSOCK: "a socket",
        }.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise _cannot_read(file, "a regular file", kind, "give the path of a spec file (YAML)")
    if st.st_size > MAX_SPEC_BYTES:
        raise _too_big(file, st.st_size)


def _too_big(file: str, size: int | None = None) -> InputError:
    return _cannot_read(
        file,
        f"a spec of at most {MAX_SPEC_BYTES} bytes",
        f"{size} bytes" if size is not None else "a larger file",
        "check that this is the spec file (a cluster spec is a few kilobytes)",
    )


def load_yaml(path: Path | str) -> SourceDoc:
    """Read a YAML spec file (`read_spec_text`); syntax errors become an InputError naming file and line."""
    return load_yaml_text(read_spec_text(path), str(path))


def load_yaml_text(text: str, file: str = "<string>") -> SourceDoc:
    if len(text) > MAX_SPEC_BYTES:
        raise _too_big(file)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = exc.problem or str(exc)
        if exc.context:
            cm = exc.context_mark
            what += f" ({exc.context}{f' that starts at line {cm.line + 1}' if cm else ''})"
        raise InputError(
            [Problem(file, "", "valid YAML", what, "fix the YAML syntax at that line", line)],
            "invalid YAML",
        ) from None
    except yaml.YAMLError as exc:  # e.g. a non-printable character
        raise InputError(
            [Problem(file, "", "valid YAML", str(exc), "fix the YAML text")], "invalid YAML"
        ) from None
    except RecursionError:  # the pure-Python composer (no libyaml) on very deep nesting
        raise InputError(
            [Problem(file, "", f"at most {MAX_DEPTH} levels of nesting", "deeper nesting", "flatten it")],
            "invalid YAML",
        ) from None
    if node is None:
        return SourceDoc(file, None)
    comp = _Composer(file)
    try:
        data = comp.build(node, ())
    except _Stop as stop:
        raise InputError([stop.problem], "invalid YAML") from None
    finally:
        comp.close()
    return SourceDoc(file, data, comp.lines, comp.problems)
