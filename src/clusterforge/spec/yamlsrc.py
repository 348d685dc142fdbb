"""YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import InputError, Problem

PathKey = tuple[str | int, ...]


@dataclass
class SourceDoc:
    """Parsed YAML data plus a map from YAML path to 1-based line number."""

    file: str
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line_of(self, path: PathKey) -> int | None:
        """Line of `path`, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), None)


def _construct(node: yaml.Node, path: PathKey, lines: dict[PathKey, int], file: str) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for knode, vnode in node.value:
            key = _scalar(knode)
            if not isinstance(key, str | int):
                raise InputError(
                    [Problem(file, _fmt(path), "a string key", repr(key), "use plain scalar keys",
                             knode.start_mark.line + 1)],
                    "invalid YAML",
                )
            skey = str(key)
            if skey in out:
                raise InputError(
                    [Problem(file, _fmt((*path, skey)), "each key once", f"duplicate key '{skey}'",
                             "remove or merge the duplicate key", knode.start_mark.line + 1)],
                    "invalid YAML",
                )
            out[skey] = _construct(vnode, (*path, skey), lines, file)
            lines[(*path, skey)] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(v, (*path, i), lines, file) for i, v in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _fmt(path: PathKey) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


format_path = _fmt


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
    except OSError as exc:
        raise InputError([Problem(file, "", "a readable file", str(exc), "check permissions")],
                         "cannot read spec") from None
    return load_yaml_text(text, file)


def load_yaml_text(text: str, file: str = "<string>") -> SourceDoc:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise InputError(
            [Problem(file, "", "valid YAML", str(exc.problem or exc), "fix the YAML syntax at that line", line)],
            "invalid YAML",
        ) from None
    lines: dict[PathKey, int] = {}
    if node is None:
        return SourceDoc(file, None, lines)
    data = _construct(node, (), lines, file)
    return SourceDoc(file, data, lines)
