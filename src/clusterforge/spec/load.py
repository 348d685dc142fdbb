"""Load a cluster spec: YAML with lines -> schema validation -> SKU resolution -> cross-field checks.

Every problem is collected into one `InputError` (exit code 2); nothing is written on failure.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from clusterforge.errors import InputError, Problem
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku, catalog
from clusterforge.spec.yamlsrc import PathKey, SourceDoc, format_path, load_yaml, load_yaml_text


@dataclass(frozen=True)
class Spec:
    """A validated cluster spec with its SKUs resolved and the file it came from."""

    cluster: Cluster
    skus: dict[str, Sku]
    file: str

    @property
    def name(self) -> str:
        return self.cluster.metadata.name


def _fields_of(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Allowed keys at `loc` inside `model`, for 'did you mean' hints."""
    cur: Any = model
    for part in loc:
        if isinstance(part, int) or cur is None:
            continue
        fields = getattr(cur, "model_fields", None)
        if not fields or part not in fields:
            return []
        ann = fields[part].annotation
        cur = _model_in(ann)
    fields = getattr(cur, "model_fields", None)
    return list(fields) if fields else []


def _model_in(ann: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        m = _model_in(arg)
        if m is not None:
            return m
    return None


_FIXES = {
    "missing": "add the key",
    "extra_forbidden": "remove the key or correct its spelling",
    "literal_error": "use one of the allowed values",
    "int_parsing": "write a whole number",
    "int_type": "write a whole number",
    "float_parsing": "write a number",
    "string_type": "write a string",
    "list_type": "write a YAML list",
    "dict_type": "write a YAML mapping",
    "model_type": "write a YAML mapping",
    "string_pattern_mismatch": "match the documented format",
    "greater_than_equal": "raise the value",
    "greater_than": "raise the value",
    "less_than_equal": "lower the value",
    "too_short": "add at least one entry",
    "ip_v4_network": "write an IPv4 CIDR such as 10.0.0.0/24 with no host bits set",
    "ip_v4_address": "write an IPv4 address",
}


def _problems_from_validation(exc: ValidationError, doc: SourceDoc, prefix: PathKey = ()) -> list[Problem]:
    out: list[Problem] = []
    for err in exc.errors():
        loc: PathKey = tuple(p for p in err["loc"] if isinstance(p, str | int))
        # pydantic adds union member names ("str", "Sku", "function-after[...]") to locs: drop them
        loc = tuple(p for p in loc if not (isinstance(p, str) and (p[:1].isupper() or "[" in p or p == "str")))
        path = (*prefix, *loc)
        etype = err["type"]
        fix = _FIXES.get(etype, "correct the value")
        if etype == "extra_forbidden":
            key = str(loc[-1]) if loc else "?"
            allowed = _fields_of(Cluster, loc[:-1]) if not prefix else _fields_of(Sku, loc[:-1])
            near = difflib.get_close_matches(key, allowed, n=1)
            expected = f"one of the known keys ({', '.join(allowed)})" if allowed else "no such key"
            found = f"unknown key '{key}'"
            fix = f"did you mean '{near[0]}'?" if near else "remove the key"
        elif etype == "missing":
            expected, found = f"a value for '{loc[-1] if loc else '?'}'", "nothing"
        else:
            expected = err["msg"].removeprefix("Value error, ")
            found = repr(err.get("input"))[:80]
        out.append(Problem(doc.file, format_path(path), expected, found, fix, doc.line_of(path)))
    return out


def load_spec(path: Path | str) -> Spec:
    """Load, validate and cross-check a spec file; raises InputError listing every problem."""
    return _build(load_yaml(path))


def load_spec_text(text: str, file: str = "<string>") -> Spec:
    return _build(load_yaml_text(text, file))


def _build(doc: SourceDoc) -> Spec:
    if not isinstance(doc.data, dict):
        raise InputError([Problem(doc.file, "", "a YAML mapping with apiVersion: clusterforge/v1, kind: Cluster",
                                  type(doc.data).__name__, "start from inventory/clusters/lab.yaml")],
                         "invalid cluster spec")
    problems: list[Problem] = []
    cluster: Cluster | None = None
    try:
        cluster = Cluster.model_validate(doc.data)
    except ValidationError as exc:
        problems += _problems_from_validation(exc, doc)
    if cluster is None:
        raise InputError(problems, f"invalid cluster spec {doc.file}")
    skus, sku_problems = _resolve_skus(cluster, doc)
    problems += sku_problems
    if not problems:
        from clusterforge.spec.checks import cross_checks

        problems += cross_checks(cluster, skus, doc)
    if problems:
        raise InputError(problems, f"invalid cluster spec {doc.file}")
    return Spec(cluster=cluster, skus=skus, file=doc.file)


def _resolve_skus(cluster: Cluster, doc: SourceDoc) -> tuple[dict[str, Sku], list[Problem]]:
    problems: list[Problem] = []
    skus: dict[str, Sku] = {}
    cat = catalog()
    for i, entry in enumerate(cluster.skus):
        path: PathKey = ("skus", i)
        if isinstance(entry, str):
            if entry not in cat:
                near = difflib.get_close_matches(entry, list(cat), n=1)
                problems.append(Problem(doc.file, format_path(path),
                                        f"a catalog SKU ({', '.join(sorted(cat))}) or an inline SKU mapping",
                                        f"'{entry}'", f"did you mean '{near[0]}'?" if near else
                                        "use a catalog name or define the SKU inline", doc.line_of(path)))
                continue
            sku = cat[entry]
        else:
            sku = entry
        if sku.name in skus:
            problems.append(Problem(doc.file, format_path(path), "each SKU listed once",
                                    f"'{sku.name}' twice", "remove the duplicate", doc.line_of(path)))
        skus[sku.name] = sku
    return skus, problems
