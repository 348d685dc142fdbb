"""YAML loading that remembers the line of every key, so errors can point at it.

Composition uses libyaml (CSafeLoader) when PyYAML has it. Duplicate keys and non-scalar keys are not
fatal: they are collected in `SourceDoc.problems` (the first value wins) so that the loader can report
them together with every schema and cross-field problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import InputError, Problem

PathKey = tuple[str | int, ...]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


class _Composer:
    """Turns a composed node tree into plain data, recording lines and collecting key problems."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[PathKey, int] = {}
        self.problems: list[Problem] = []
        self._scalars = yaml.SafeLoader("")

    def close(self) -> None:
        self._scalars.dispose()

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                line = knode.start_mark.line + 1
                key = self._scalar(knode) if isinstance(knode, yaml.ScalarNode) else None
                if key is None or not isinstance(key, str | int) or isinstance(key, bool):
                    self.problems.append(
                        Problem(
                            self.file,
                            format_path(path),
                            "a plain string key",
                            repr(key) if key is not None else "a complex key",
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
        if isinstance(node, yaml.SequenceNode):
            return [self.build(v, (*path, i)) for i, v in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        return self._scalars.construct_object(node, deep=True)


def format_path(path: PathKey) -> str:
    """`("pools", 0, "sku")` -> `pools[0].sku`."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def load_yaml(path: Path | str) -> SourceDoc:
    """Read a YAML file; syntax errors become an InputError naming file and line."""
    p = Path(path)
    file = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            [Problem(file, "", "an existing spec file", "no such file", "check the path")], "cannot read spec"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            [Problem(file, "", "a readable UTF-8 file", str(exc), "check the file and its permissions")],
            "cannot read spec",
        ) from None
    return load_yaml_text(text, file)


def load_yaml_text(text: str, file: str = "<string>") -> SourceDoc:
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
    if node is None:
        return SourceDoc(file, None)
    comp = _Composer(file)
    try:
        data = comp.build(node, ())
    except yaml.YAMLError as exc:  # a scalar that cannot be constructed (e.g. a bad timestamp)
        raise InputError(
            [Problem(file, "", "valid YAML values", str(exc), "fix the value")], "invalid YAML"
        ) from None
    finally:
        comp.close()
    return SourceDoc(file, data, comp.lines, comp.problems)
