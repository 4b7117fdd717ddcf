"""Export a store's datasets to a file, and import such a file into any store; docs/export.md
gives the format and every rule.

The file is JSON Lines: a header line (format, version, datasets, vectors, embedder), one line
per row (``{"row": {…}, "table": "…"}``) table by table in foreign-key order, each table sorted
by its primary key, every value in one form whatever the backend (``copy.Side``'s plain form,
vectors as base64 of little-endian float32), and an end line counting the rows; so export →
import → export is byte-identical across SQLite and PostgreSQL. API keys are never exported.

Import writes in one transaction of the target and touches only what its header declares:
every row must belong to one of its datasets and refer to no row of another one
(``ValidationError``, nothing written); account rows are applied only with ``accounts=True``.
A row whose primary key the target holds is skipped when identical, a ``ConflictError`` when
it differs (a dataset the target has already is merged into).

This module reads both backends' tables directly, which only code inside ``kenning.store`` may.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._checks import check_flag
from ..errors import ConflictError, NotFoundError, StoreError, ValidationError
from ..models import TransferResult
from .base import Store, quoted
from .copy import KINDS, Side, driver_errors, in_order, side_of

__all__ = ["FORMAT", "VERSION", "export_file", "import_file"]

FORMAT, VERSION = "kenning-export", 1
Progress = Callable[[int], None] | None

#: how each table's rows are chosen for a set of datasets (``{ds}``: the list of names)
SCOPES: dict[str, str] = {
    "datasets": "name IN ({ds})",
    "auth_datasets": "name IN ({ds})",
    "fact_memories": "fact_id IN (SELECT id FROM facts WHERE dataset IN ({ds}))",
    "entity_memories": "entity_id IN (SELECT id FROM entities WHERE dataset IN ({ds}))",
    "auth_users": "id IN (SELECT user_id FROM auth_grants WHERE dataset IN ({ds}))"
                  " OR id IN (SELECT owner_id FROM auth_datasets WHERE name IN ({ds}))"
                  " OR id IN (SELECT owner_id FROM datasets WHERE name IN ({ds}))",
}
#: tables never exported (secrets); a store's own bookkeeping is left out by ``copy`` already
NEVER = {"auth_keys"}
#: the account tables: their rows are applied only on ``accounts=True``
ACCOUNTS = ("auth_users", "auth_datasets", "auth_grants")
#: columns that name another row (table referred to); ``memories.supersedes`` holds a list
REFS: dict[tuple[str, str], str] = {
    ("chunks", "memory_id"): "memories", ("facts", "source_id"): "entities",
    ("facts", "target_id"): "entities", ("facts", "memory_id"): "memories",
    ("facts", "superseded_by"): "facts", ("memories", "superseded_by"): "memories",
    ("memories", "supersedes"): "memories", ("fact_memories", "fact_id"): "facts",
    ("fact_memories", "memory_id"): "memories", ("entity_memories", "entity_id"): "entities",
    ("entity_memories", "memory_id"): "memories",
}
#: tables whose rows, when the target holds the key already, are kept as the target has them:
#: importing into a dataset that exists merges into it
KEEP = {"datasets"}


# -- one form for every value: copy's plain form, vectors as base64 ------------------------------
def _out(kind: str | None, value: Any) -> Any:
    """A plain value (``Side.rows``) in the file's form."""
    if kind == "vector" and value is not None:
        return base64.b64encode(np.asarray(value, dtype="<f4").tobytes()).decode()
    return value


def _in(kind: str | None, value: Any, where: str, dimension: int | None) -> Any:
    """A value from the file in the plain form."""
    if value is None or kind != "vector":
        return value
    try:
        vector = np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4").astype(np.float32)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{where}: an embedding is not base64 float32 ({exc})") from exc
    if len(vector) != dimension:
        raise ValidationError(f"{where}: an embedding has {len(vector)} dimensions, the header says {dimension}")
    return vector


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


# -- choosing rows ---------------------------------------------------------------------------
def _tables(side: Side) -> list[str]:
    return [t for t in in_order(side, side.tables()) if t not in NEVER and _scope(side, t) is not None]


def _scope(side: Side, table: str) -> str | None:
    if table in SCOPES:
        return SCOPES[table]
    return "dataset IN ({ds})" if "dataset" in side.columns(table) else None


def _all_datasets(side: Side) -> list[str]:
    names: set[str] = set()
    for table in side.tables():
        if table in NEVER:
            continue
        column = "name" if table in ("datasets", "auth_datasets") else "dataset"
        if column in side.columns(table):
            names.update(r[0] for r in side.select(f'SELECT DISTINCT "{column}" FROM "{table}"'))
    return sorted(names)


def _chosen(side: Side, datasets: Iterable[str] | None) -> list[str]:
    existing = _all_datasets(side)
    if isinstance(datasets, str):
        datasets = [datasets]
    chosen = existing if datasets is None else sorted(set(datasets))
    if missing := [d for d in chosen if d not in existing]:
        raise NotFoundError(f"no dataset {missing[0]!r}; datasets: {', '.join(existing) or 'none yet'}")
    return chosen


def _rows(side: Side, table: str, datasets: list[str], batch: int = 1000) -> Iterator[list[dict[str, Any]]]:
    marks = ", ".join([side.mark] * len(datasets))
    where = _scope(side, table).replace("{ds}", marks)  # type: ignore[union-attr]
    order = ", ".join(f'"{c}"{side.collate}' for c in side.primary_key(table)) or "1"
    yield from _file_rows(side, table, batch, f"WHERE {where} ORDER BY {order}", datasets * where.count(marks))


def _file_rows(side: Side, table: str, batch: int, where: str, args: list[Any]) -> Iterator[list[dict[str, Any]]]:
    """``Side.rows`` of every column in the file's form: dicts, vectors as base64."""
    columns = list(side.columns(table))
    kinds = [KINDS.get((table, c)) for c in columns]
    for rows in side.rows(table, columns, batch, where, args):
        yield [{c: _out(k, v) for c, k, v in zip(columns, kinds, row)} for row in rows]


# -- export ----------------------------------------------------------------------------------
def export_file(store: Store, path: str | Path, *, datasets: Iterable[str] | None = None,
                format: str = "jsonl", vectors: bool = True, progress: Progress = None) -> TransferResult:
    """Write the rows of ``datasets`` (all of them by default), all read in one snapshot of the
    store, to ``path`` (through ``path.part``, renamed over it once complete): ``"jsonl"`` every
    row as JSON Lines; ``"graphml"`` or ``"json"`` entities as nodes and facts as edges (closed
    ones too, with both timelines), as GraphML or a JSON node-link graph (``{"nodes": […],
    "edges": […]}``)."""
    _check_path(path)
    if format != "jsonl" and format not in _GRAPH_FORMATS:
        raise ValidationError(f"format must be one of {', '.join(_GRAPH_FORMATS)}, not {format!r}")
    target = Path(path)
    part = target.with_name(target.name + ".part")
    side = side_of(store)
    try:
        with part.open("w", encoding="utf-8", newline="\n") as out, side.snapshot():
            chosen = _chosen(side, datasets)
            if format == "jsonl":
                report = _export_rows(side, out, chosen, vectors, progress)
            else:
                report = _export_graph(side, out, chosen, _GRAPH_FORMATS[format], progress)
        part.replace(target)
    except OSError as exc:
        raise ValidationError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        part.unlink(missing_ok=True)
    return report


def _export_rows(side: Side, out: IO[str], chosen: list[str], vectors: bool, progress: Progress) -> TransferResult:
    from .. import __version__

    embedder = side.embedder()
    report = TransferResult(datasets=chosen, vectors=vectors, embedder=embedder)
    out.write(_line({"format": FORMAT, "version": VERSION, "kenning": __version__, "datasets": chosen,
                     "vectors": vectors, "embedder": embedder and {"name": embedder[0], "dimension": embedder[1]}}))
    for table in _tables(side) if chosen else []:
        for rows in _rows(side, table, chosen):
            for row in rows:
                if not vectors and "embedding" in row:
                    row["embedding"] = None
                out.write(_line({"table": table, "row": row}))
            report.rows[table] = report.rows.get(table, 0) + len(rows)
            if progress:
                progress(len(rows))
    out.write(_line({"end": {"rows": report.rows}}))
    return report


def _export_graph(side: Side, out: IO[str], chosen: list[str], write: Callable[..., None],
                  progress: Progress) -> TransferResult:
    nodes, edges = ([{k: v for k, v in r.items() if k != "embedding"}
                     for rows in _rows(side, table, chosen) for r in rows] if chosen else []
                    for table in ("entities", "facts"))
    write(out, nodes, edges)
    if progress:
        progress(len(nodes) + len(edges))
    return TransferResult(datasets=chosen, vectors=False, embedder=side.embedder(),
                          rows={"entities": len(nodes), "facts": len(edges)})


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # no XML 1.0 document may hold these
_NODE = ("name", "type", "description", "dataset", "aliases", "created_at")
_EDGE = ("relation", "description", "dataset", "valid_at", "invalid_at", "created_at", "expired_at",
         "superseded_by", "memory_id", "weight")


def _graphml(out: IO[str], nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    from xml.etree import ElementTree as ET

    root = ET.Element("graphml", xmlns="http://graphml.graphdrawing.org/xmlns")
    for scope, names in (("node", _NODE), ("edge", _EDGE)):
        for name in names:
            kind = "double" if name == "weight" else "string"
            ET.SubElement(root, "key", {"id": f"{scope[0]}_{name}", "for": scope, "attr.name": name,
                                        "attr.type": kind})
    graph = ET.SubElement(root, "graph", id="kenning", edgedefault="directed")
    for scope, items, names in (("node", nodes, _NODE), ("edge", edges, _EDGE)):
        for item in items:
            attrs = {"id": item["id"]}
            if scope == "edge":
                attrs |= {"source": item["source_id"], "target": item["target_id"]}
            element = ET.SubElement(graph, scope, attrs)
            for name in names:
                value = item.get(name)
                if value is not None and value != []:
                    text = "; ".join(value) if isinstance(value, list) else str(value)
                    ET.SubElement(element, "data", key=f"{scope[0]}_{name}").text = _XML_INVALID.sub("", text)
    ET.indent(root)
    out.write(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def _json_graph(out: IO[str], nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    edges = [{"source": e["source_id"], "target": e["target_id"],
              **{k: v for k, v in e.items() if k not in ("source_id", "target_id")}} for e in edges]
    out.write(json.dumps({"directed": True, "nodes": nodes, "edges": edges}, sort_keys=True,
                         ensure_ascii=False, indent=1) + "\n")


_GRAPH_FORMATS = {"graphml": _graphml, "json": _json_graph}


# -- import ----------------------------------------------------------------------------------
def _parse(lines: Iterable[str], name: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """(the header, each table's rows) of an export file's lines."""
    header: dict[str, Any] | None = None
    tables: dict[str, list[dict[str, Any]]] = {}
    end: dict[str, Any] | None = None
    for number, text in enumerate(lines, 1):
        where = f"{name} line {number}"
        if end is not None:
            raise ValidationError(f"{where}: text after the end line")
        try:
            item = json.loads(text)
        except ValueError as exc:
            raise ValidationError(f"{where} is not JSON ({exc.args[0]}); was the file cut short?") from exc
        if not isinstance(item, dict):
            raise ValidationError(f"{where} is not a JSON object")
        if header is None:
            header = _check_header(item, where)
        elif "end" in item:
            end = item["end"]
        elif isinstance(item.get("table"), str) and isinstance(item.get("row"), dict):
            tables.setdefault(item["table"], []).append(item["row"])
        else:
            raise ValidationError(f"{where}: expected a {{\"table\", \"row\"}} line")
    if header is None:
        raise ValidationError(f"{name} is empty")
    counts = {t: len(r) for t, r in tables.items()}
    if end is None or not isinstance(end, dict) or end.get("rows") != counts:
        raise ValidationError(f"{name} is truncated or altered: its end line does not match its rows")
    return header, tables


def _check_header(item: dict[str, Any], where: str) -> dict[str, Any]:
    if item.get("format") != FORMAT:
        raise ValidationError(f"{where}: not a kenning export (no \"format\": \"{FORMAT}\" header)")
    if item.get("version") != VERSION:
        raise ValidationError(f"{where}: export format version {item.get('version')!r}; this kenning"
                              f" reads version {VERSION} (upgrade kenning to import it)")
    embedder = item.get("embedder")
    if not (isinstance(item.get("datasets"), list) and all(isinstance(d, str) for d in item["datasets"])
            and isinstance(item.get("vectors"), bool)
            and (embedder is None or (isinstance(embedder, dict) and isinstance(embedder.get("name"), str)
                                      and isinstance(embedder.get("dimension"), int)))):
        raise ValidationError(f"{where}: the header's datasets, vectors or embedder are malformed")
    return item


def import_file(store: Store, path: str | Path, *, vectors: bool = True, accounts: bool = False,
                batch: int = 1000, progress: Progress = None) -> TransferResult:
    """Load an export file into ``store`` (see the module's rules), in one transaction.
    ``vectors=False`` ignores the file's vectors (for a store with another embedder; the
    facade then embeds the rows here). ``accounts=True`` applies the file's users (with their
    admin flags), dataset owners and grants; by default they are left out."""
    _check_path(path)
    check_flag(accounts, "accounts")
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            header, tables = _parse(handle, path.name)
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path.name} is not UTF-8 text, so not a kenning export") from exc
    embedder = header.get("embedder")
    embedder = (embedder["name"], int(embedder["dimension"])) if embedder else None
    side = side_of(store)
    vectors = vectors and header["vectors"]
    _check_embedder(side, embedder, vectors)
    report = TransferResult(datasets=header["datasets"], vectors=vectors, embedder=embedder, accounts=accounts)
    if not accounts:
        for table in ACCOUNTS:
            if table in tables:
                report.ignored[table] = len(tables.pop(table))
    _check_tables(side, tables)
    _check_scope(side, header["datasets"], tables)
    users_before = ({r[0] for r in side.select('SELECT "id" FROM "auth_users"')}
                    if "auth_users" in tables else set())
    try:
        with side.writing():
            for table in in_order(side, list(tables)):
                _write(side, table, tables[table], report, batch, progress)
    except driver_errors(integrity=True) as exc:
        raise ConflictError(f"the import clashes with the store and was rolled back: {exc}") from exc
    except driver_errors() as exc:
        if isinstance(exc, ValidationError):
            raise
        raise StoreError(f"the import failed and was rolled back: {type(exc).__name__}: {exc}") from exc
    if embedder and report.vectors and side.embedder() is None:
        store.set_embedder(*embedder)
    created = [u for u in tables.get("auth_users", []) if u.get("id") not in users_before]
    report.users = sorted(u["name"] for u in created)
    report.admins = sorted(u["name"] for u in created if u.get("admin"))
    return report


def _check_path(path: Any) -> None:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValidationError(f"path must be a file path, not {path!r}")


def _check_embedder(side: Side, embedder: tuple[str, int] | None, vectors: bool) -> None:
    stored = side.embedder()
    if vectors and embedder and stored and stored != embedder:
        raise ConflictError(
            f"the file's vectors were made by {embedder[0]!r} ({embedder[1]} dimensions), this store"
            f" uses {stored[0]!r} ({stored[1]}): import into a store with that embedder, or import"
            " without the file's vectors (kenning import --no-vectors) to embed the rows here")


def _check_tables(side: Side, tables: dict[str, list[dict[str, Any]]]) -> None:
    lacking = side.lacks(tables)
    for table in sorted(tables):
        if table in NEVER or table in lacking:
            raise ValidationError(f"the file has rows for table {table!r}, which this store cannot take")
        side.check_columns(table, {c for row in tables[table] for c in row})


def _check_scope(side: Side, datasets: list[str], tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every row belongs to one of the ``datasets`` the header declares and refers to no row of
    another dataset (in the file or in the store); every table is one an export writes."""
    declared = set(datasets)
    exported = set(_tables(side)) | set(ACCOUNTS)
    # id -> dataset of the file's rows
    where = {t: {row.get("id"): row.get("dataset") for row in tables.get(t, [])} for t in ("memories", "entities", "facts")}

    def dataset_of(table: str, row_id: Any) -> Any:
        if row_id in where[table]:
            return where[table][row_id]
        if not isinstance(row_id, str):
            return None
        found = side.select(f'SELECT "dataset" FROM "{table}" WHERE "id" = {side.mark}', [row_id])
        return found[0][0] if found else None  # a dangling reference names nothing to touch

    owners = {r.get("owner_id") for t in ("auth_datasets", "datasets") for r in tables.get(t, [])}
    grantees = {r.get("user_id") for r in tables.get("auth_grants", [])}
    for table, rows in tables.items():
        if table not in exported:
            raise ValidationError(f"the file has rows for table {table!r}, which an export never holds")
        for row in rows:
            if table == "auth_users":
                if row.get("id") not in owners | grantees:
                    raise ValidationError(f"the file's user {row.get('name')!r} owns and is granted none of"
                                          " its datasets; nothing was imported")
                continue
            home = row.get("name") if table in ("datasets", "auth_datasets") else row.get("dataset")
            links = [(t, row.get(c)) for (tt, c), t in REFS.items() if tt == table and c in row]
            if table in ("fact_memories", "entity_memories"):
                home = dataset_of(*links[0])
            if home not in declared:
                raise ValidationError(
                    f"the file's {table} row {_ident(table, row)} belongs to dataset {home!r}, which its"
                    f" header does not declare ({', '.join(sorted(declared)) or 'none'}); nothing was imported")
            for target, value in links:
                for ref in value if isinstance(value, list) else [value]:
                    if ref is not None and (other := dataset_of(target, ref)) not in (None, home):
                        raise ValidationError(
                            f"the file's {table} row {_ident(table, row)} in dataset {home!r} refers to"
                            f" {target} {ref!r} of dataset {other!r}; nothing was imported")


def _ident(table: str, row: dict[str, Any]) -> str:
    keys = ("id",) if "id" in row else ("name",) if "name" in row else tuple(sorted(row))[:2]
    return ", ".join(f"{k}={row.get(k)!r}" for k in keys)


def _write(side: Side, table: str, rows: list[dict[str, Any]], report: TransferResult, batch: int,
           progress: Progress) -> None:
    columns = list(side.columns(table))
    key = side.primary_key(table)
    kinds = {c: KINDS.get((table, c)) for c in columns}
    ignored = {} if report.vectors else {c: None for c, k in kinds.items() if k == "vector"}
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        held = _held(side, table, key, part)
        fresh = []
        for row in part:
            full = {c: row.get(c) for c in columns} | ignored
            old = held.get(tuple(full[k] for k in key))
            if old is not None:
                old |= ignored  # a held row's own vector is not compared when the file's are ignored
            if old is None:
                fresh.append(full)
            elif old != full and table not in KEEP:
                ident = ", ".join(f"{k}={full[k]!r}" for k in key)
                differ = sorted(c for c in columns if old[c] != full[c])
                raise ConflictError(f"the store already holds {table} {ident} with other values"
                                    f" ({', '.join(differ)}); nothing was imported")
        if fresh:
            dimension = report.embedder[1] if report.embedder else None
            side.write(table, columns, [[_in(kinds[c], r[c], table, dimension) for c in columns] for r in fresh])
        report.rows[table] = report.rows.get(table, 0) + len(fresh)
        report.skipped[table] = report.skipped.get(table, 0) + len(part) - len(fresh)
        if progress:
            progress(len(part))


def _held(side: Side, table: str, key: list[str], rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """The target's rows (in the file's form) with the primary keys of ``rows``."""
    if not key:
        return {}
    one = "(" + ", ".join([side.mark] * len(key)) + ")"
    where = f'WHERE ({quoted(key)}) IN (VALUES {", ".join([one] * len(rows))})'
    found = _file_rows(side, table, len(rows), where, [row.get(k) for row in rows for k in key])
    return {tuple(row[k] for k in key): row for part in found for row in part}
