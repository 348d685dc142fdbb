"""Load a cluster spec: YAML with lines -> schema validation -> SKU resolution -> cross-field checks.

Every problem is collected into one `InputError` (exit code 2); nothing is written on failure. The stages
feed one report: duplicate YAML keys, schema errors, unknown or inconsistent SKUs and, whenever the schema
allows building the cluster (sections with defaults that fail validation are replaced by their defaults for
this purpose), the cross-field checks.

Sizes are bounded before anything is generated (docs/security.md): the YAML loader limits the file, its
nesting and its aliases; the schema limits lists and numbers; and a spec whose pools add up to more than
`MAX_NODES` nodes or `MAX_ENDPOINTS` compute endpoints (nodes x rails) is refused before a name is made.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from clusterforge.errors import InputError, Problem
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku, catalog, sku_problems
from clusterforge.spec.values import SkuName
from clusterforge.spec.yamlsrc import PathKey, SourceDoc, format_path, load_yaml, load_yaml_text

MAX_NODES = 32_768  # nodes per spec, all pools together (~2.6x the 100k-GPU benchmark)
MAX_ENDPOINTS = 262_144  # compute endpoints per spec: nodes x rails, all pools together


@dataclass(frozen=True)
class Spec:
    """A validated cluster spec with its SKUs resolved and the file it came from."""

    cluster: Cluster
    skus: dict[str, Sku]
    file: str
    source: SourceDoc | None = field(default=None, compare=False, repr=False)
    # what the spec declares but will not get (spec/checks_mgmt.py): reported, never a reason to refuse it
    warnings: tuple[Problem, ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        return self.cluster.metadata.name

    def problem(self, path: PathKey, expected: str, found: str, fix: str) -> Problem:
        """A Problem located in this spec's file (with the line of `path` when known)."""
        line = self.source.line_of(path) if self.source else None
        return Problem(self.file, format_path(path), expected, found, fix, line)


def _fields_of(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Allowed keys at `loc` inside `model`, for 'did you mean' hints."""
    cur: Any = model
    keys = 0  # mapping keys to pass before the next field name (a field that maps names to models)
    for part in loc:
        if isinstance(part, int) or cur is None:
            continue
        if keys:
            keys -= 1
            continue
        fields = getattr(cur, "model_fields", None)
        if not fields or part not in fields:
            return []
        cur = _model_in(fields[part].annotation)
        keys = _key_levels(fields[part].annotation) if cur is not None else 0
    fields = getattr(cur, "model_fields", None)
    return list(fields) if fields else []


def _key_levels(ann: Any) -> int:
    """How many mappings (`dict[K, dict[K, Model]]`: 2) stand between a field and the model it holds."""
    if typing.get_origin(ann) is dict:
        return 1 + _key_levels(typing.get_args(ann)[1])
    return max((_key_levels(a) for a in typing.get_args(ann) if not isinstance(a, (str, int))), default=0)


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
    "int_type": "write a whole number (not quoted, not true/false)",
    "int_from_float": "write a whole number",
    "float_parsing": "write a number",
    "float_type": "write a number",
    "bool_parsing": "write true or false",
    "bool_type": "write true or false (not quoted)",
    "finite_number": "write a finite number",
    "string_type": "write a string (quote it if YAML reads it as a number)",
    "list_type": "write a YAML list",
    "dict_type": "write a YAML mapping",
    "model_type": "write a YAML mapping",
    "model_attributes_type": "write a YAML mapping",
    "string_pattern_mismatch": "match the documented format (docs/spec.md)",
    "string_too_long": "shorten the value",
    "greater_than_equal": "raise the value",
    "greater_than": "raise the value",
    "less_than_equal": "lower the value",
    "less_than": "lower the value",
    "too_short": "add at least one entry",
    "too_long": "use fewer entries",
    "ip_v4_network": "write an IPv4 CIDR such as 10.0.0.0/24 with no host bits set",
    "ip_v4_address": "write an IPv4 address",
}


def _data_loc(loc: tuple[Any, ...], data: Any, etype: str) -> PathKey:
    """The YAML path of an error: the parts of pydantic's `loc` that exist in the input `data`. The others
    are pydantic's names of union members and validators ("str", "Sku", "function-after[...]", "[key]"),
    except a missing key, which is the last part of a `missing` error."""
    out: list[str | int] = []
    cur = data
    for i, p in enumerate(loc):
        in_dict = isinstance(cur, dict) and isinstance(p, str) and p in cur
        if in_dict or (isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur)):
            cur = cur[p]
        elif etype == "missing" and i == len(loc) - 1 and isinstance(p, str) and isinstance(cur, dict):
            cur = None
        else:
            continue
        out.append(p)
    return tuple(out)


def _problems_from_validation(
    exc: ValidationError, doc: SourceDoc, model: type[BaseModel], prefix: PathKey = (), data: Any = None
) -> list[Problem]:
    out: list[Problem] = []
    for err in exc.errors():
        loc = _data_loc(err["loc"], data, err["type"])
        path = (*prefix, *loc)
        etype = err["type"]
        fix = _FIXES.get(etype, "correct the value")
        if etype == "extra_forbidden":
            key = str(loc[-1]) if loc else "?"
            allowed = _fields_of(model, loc[:-1])
            near = difflib.get_close_matches(key, allowed, n=1)
            expected = f"one of the known keys ({', '.join(allowed)})" if allowed else "no such key"
            found = f"unknown key '{key}'"
            fix = f"did you mean '{near[0]}'?" if near else "remove the key (docs/spec.md lists every key)"
        elif etype == "missing":
            expected, found = f"a value for '{loc[-1] if loc else '?'}'", "nothing"
        else:
            expected = err["msg"].removeprefix("Value error, ")
            found = repr(err.get("input"))[:80]
            if etype == "spec_value":
                fix = str(err.get("ctx", {}).get("fix", fix))
        out.append(Problem(doc.file, format_path(path), expected, found, fix, doc.line_of(path)))
    return out


def load_spec(path: Path | str) -> Spec:
    """Load, validate and cross-check a spec file; raises InputError listing every problem."""
    return _build(load_yaml(path))


def load_spec_text(text: str, file: str = "<string>") -> Spec:
    return _build(load_yaml_text(text, file))


def _inline_skus(data: dict[str, Any], doc: SourceDoc) -> tuple[dict[str, Any], list[Problem], set[str]]:
    """Validate inline SKU mappings on their own (precise paths, no union noise); returns the data with
    each inline entry replaced by its Sku (or, when invalid, by its name, listed in the third item)."""
    entries = data.get("skus")
    if not isinstance(entries, list):
        return data, [], set()
    problems: list[Problem] = []
    broken: set[str] = set()
    out: list[Any] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str) and not _is_sku_name(entry):
            try:  # reported here once, then set aside like a broken inline SKU
                _SKU_NAME.validate_python(entry)
            except ValidationError as exc:
                problems += _problems_from_validation(exc, doc, Sku, ("skus", i), entry)
            broken.add(_placeholder(i))
            out.append(_placeholder(i))
            continue
        if not isinstance(entry, dict):
            out.append(entry)
            continue
        try:
            sku = Sku.model_validate(entry)
        except ValidationError as exc:
            problems += _problems_from_validation(exc, doc, Sku, ("skus", i), entry)
            name = entry.get("name")
            name = name if isinstance(name, str) and _is_sku_name(name) else _placeholder(i)
            broken.add(name)
            out.append(name)
            continue
        own = sku_problems(sku)
        for path, expected, found, fix in own:
            full = ("skus", i, *path)
            problems.append(Problem(doc.file, format_path(full), expected, found, fix, doc.line_of(full)))
        if own:
            broken.add(sku.name)
            out.append(sku.name)
        else:
            out.append(sku)
    return {**data, "skus": out}, problems, broken


_SKU_NAME: TypeAdapter[str] = TypeAdapter(SkuName)


def _is_sku_name(name: str) -> bool:
    try:
        _SKU_NAME.validate_python(name)
    except ValidationError:
        return False
    return True


def _placeholder(i: int) -> str:
    """A valid SKU name standing in for the invalid one at skus[i] (already reported), so that the
    rest of the spec is still validated with the list's indexes unchanged."""
    return f"invalid-sku-{i}"


def _validate_cluster(data: dict[str, Any], doc: SourceDoc) -> tuple[Cluster | None, list[Problem]]:
    """Validate the whole spec. When only sections that have defaults (or unknown top-level keys) fail,
    validate again without them, so that the cross-field checks can still run on the rest."""
    try:
        return Cluster.model_validate(data), []
    except ValidationError as exc:
        problems = _problems_from_validation(exc, doc, Cluster, (), data)
        errors = exc.errors()
        bad = {e["loc"][0] for e in errors if e["loc"]}
        fields = Cluster.model_fields
        if any(not e["loc"] for e in errors) or any(k in fields and fields[k].is_required() for k in bad):
            return None, problems
        try:
            return Cluster.model_validate({k: v for k, v in data.items() if k not in bad}), problems
        except ValidationError:
            return None, problems


def _build(doc: SourceDoc) -> Spec:
    if not isinstance(doc.data, dict):
        found = "an empty file" if doc.data is None else f"a YAML {type(doc.data).__name__}"
        raise InputError(
            [
                Problem(
                    doc.file,
                    "",
                    "a YAML mapping with apiVersion: clusterforge/v1, kind: Cluster, "
                    "metadata, target, skus, pools, site, fabrics, addressing, software",
                    found,
                    "start from inventory/clusters/lab.yaml (docs/spec.md)",
                    doc.line_of(()),
                )
            ],
            f"invalid cluster spec {doc.file}",
        )
    problems: list[Problem] = list(doc.problems)
    data, sku_probs, broken = _inline_skus(doc.data, doc)
    problems += sku_probs
    cluster, schema_probs = _validate_cluster(data, doc)
    problems += schema_probs
    raw = data.get("skus")
    entries: list[Any] = raw if isinstance(raw, list) else []
    skus, resolve_probs = _resolve_skus(entries, doc, broken)
    problems += resolve_probs
    if cluster is not None:
        from clusterforge.spec.checks import cross_checks

        unresolved = broken | {e for e in cluster.skus if isinstance(e, str) and e not in skus}
        size = _size_problems(cluster, skus, doc)
        problems += size or cross_checks(cluster, skus, doc, unresolved)
    if problems:
        raise InputError(_dedupe(problems), f"invalid cluster spec {doc.file}")
    assert cluster is not None
    return Spec(cluster=cluster, skus=skus, file=doc.file, source=doc, warnings=_warnings(cluster, skus, doc))


def _warnings(cluster: Cluster, skus: dict[str, Sku], doc: SourceDoc) -> tuple[Problem, ...]:
    """The spec's warnings (checked once it is valid), each located like an error."""
    from clusterforge.spec.checks_mgmt import management_warnings, unverified_sku_warnings

    out: list[Problem] = []

    def warn(path: PathKey, expected: str, found: str, fix: str) -> None:
        out.append(Problem(doc.file, format_path(path), expected, found, fix, doc.line_of(path)))

    management_warnings(cluster, skus, warn)
    unverified_sku_warnings(cluster, skus, warn)
    return tuple(out)


def _size_problems(cluster: Cluster, skus: dict[str, Sku], doc: SourceDoc) -> list[Problem]:
    """Node and endpoint totals within MAX_NODES and MAX_ENDPOINTS (checked before any name is generated)."""
    nodes = sum(p.count for p in cluster.pools)
    endpoints = sum(p.count * skus[p.sku].compute_nics.count for p in cluster.pools if p.sku in skus)
    out = []
    if nodes > MAX_NODES:
        out.append(
            Problem(
                doc.file,
                "pools",
                f"at most {MAX_NODES} nodes in one spec (all pools together)",
                f"{nodes} nodes",
                "split the cluster into several specs or lower the pools' counts",
                doc.line_of(("pools",)),
            )
        )
    elif endpoints > MAX_ENDPOINTS:
        out.append(
            Problem(
                doc.file,
                "pools",
                f"at most {MAX_ENDPOINTS} compute endpoints (nodes x rails) in one spec",
                f"{endpoints} endpoints",
                "split the cluster into several specs or lower the pools' counts",
                doc.line_of(("pools",)),
            )
        )
    return out


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[Problem] = set()
    out = []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _resolve_skus(
    entries: list[Any], doc: SourceDoc, broken: set[str]
) -> tuple[dict[str, Sku], list[Problem]]:
    """Catalog names -> catalog SKUs, inline SKUs as validated; entries of other types are schema errors."""
    problems: list[Problem] = []
    skus: dict[str, Sku] = {}
    cat = catalog()
    for i, entry in enumerate(entries):
        path: PathKey = ("skus", i)
        if isinstance(entry, str):
            if entry in broken:
                continue
            if entry not in cat:
                near = difflib.get_close_matches(entry, list(cat), n=1, cutoff=0.5)
                problems.append(
                    Problem(
                        doc.file,
                        format_path(path),
                        f"a catalog SKU ({', '.join(sorted(cat))}) or an inline SKU mapping",
                        f"unknown SKU '{entry}'",
                        f"did you mean '{near[0]}'?"
                        if near
                        else "use a catalog name or define the SKU inline",
                        doc.line_of(path),
                    )
                )
                continue
            sku = cat[entry]
        elif isinstance(entry, Sku):
            sku = entry
        else:
            continue
        if sku.name in skus:
            problems.append(
                Problem(
                    doc.file,
                    format_path(path),
                    "each SKU listed once",
                    f"'{sku.name}' twice",
                    "remove the duplicate",
                    doc.line_of(path),
                )
            )
        skus[sku.name] = sku
    return skus, problems
