"""The verbs as tools for a model: names, descriptions, JSON schemas, annotations, argument
checks and compact text results, written once for every agent surface.

The MCP server (``kenning.mcp``), ``Kenning.tools()`` / ``Kenning.call_tool()`` (OpenAI
function-calling definitions, for any framework) and the framework integrations
(``kenning.integrations``) all take their tools from here. A tool is a verb: its parameters are
the verb's request model's fields (``kenning.requests``), less what a tool cannot use
(``OMITTED``: files on the server's disk, wiping every dataset) and, in the lean ``agent``
profile, less the tuning knobs an agent in a conversation does not need (``AGENT_PARAMS``).
Arguments are checked by the request model itself (unknown names refused, as HTTP answers 422).

Profiles: ``agent`` (the default: at most 8 tools, what an agent does in a conversation) and
``all`` (every verb, for admin and lifecycle work); a comma-separated list of verb names picks
tools one by one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo
from pydantic import ValidationError as PydanticValidationError

from .errors import ValidationError
from .requests import DATASET_PATTERN, VERBS, VerbRequest

__all__ = [
    "AGENT_PARAMS",
    "OMITTED",
    "PROFILES",
    "Tool",
    "check_arguments",
    "definitions",
    "parse_arguments",
    "render",
    "result_json",
    "select",
    "tool",
    "tool_names",
]

#: at most 8 tools: what an agent does in a conversation
AGENT_TOOLS = ("remember", "recall", "context", "timeline", "get", "forget", "feedback")
PROFILES: dict[str, tuple[str, ...] | None] = {"agent": AGENT_TOOLS, "all": None}  # None: every verb

#: parameters no tool has: files and folders on the server's own disk (no transport reads
#: them; HTTP uploads to /v1/remember/file) and ``forget(everything=True)`` (an agent may not
#: wipe every dataset)
OMITTED: dict[str, frozenset[str]] = {
    "remember": frozenset({"include", "exclude", "sync"}),
    "forget": frozenset({"everything"}),
}

#: the parameters of the ``agent`` profile's tools (the ``all`` profile has every one)
AGENT_PARAMS: dict[str, tuple[str, ...]] = {
    "remember": ("content", "dataset", "user", "agent", "session", "valid_at", "source", "metadata"),
    "recall": ("query", "dataset", "top_k", "as_of", "known_at", "user", "session", "filters"),
    "context": ("query", "dataset", "user", "session", "max_tokens"),
    "timeline": ("entity", "dataset", "relation"),
    "get": ("memory_id",),
    "forget": ("memory_id", "dataset", "user"),
    "feedback": ("fact_id", "helpful"),
}

#: what each tool does, written for a model (the Python docstrings speak of Python)
DESCRIPTIONS: dict[str, str] = {
    "remember": "Store something worth keeping and extract its facts: a statement, a decision, or a "
                "conversation's messages (with user and session). A newer statement closes the older "
                "fact it contradicts (kept as history).",
    "add": "Store memories as pending without processing them (cognify or improve processes them later). "
           "Returns the memory ids.",
    "cognify": "Process every pending memory (failed ones too with retry_failed).",
    "recall": "Search memory with a question. Returns facts (with the dates they hold, current or not) and "
              "passages, each with its memory id. Use as_of to ask about another time, known_at for what "
              "was believed then.",
    "timeline": "How one entity's facts changed over time: every value, open and closed, with its dates.",
    "stats": "Counts of memories, chunks, entities and facts (of one dataset, or every dataset).",
    "get": "Read one stored memory in full by its memory id (ids come from recall, remember and context).",
    "list": "Stored memories, newest first, a page at a time, narrowed by kind, status, user, agent, "
            "session or metadata filters.",
    "update": "Change the given fields of a memory; new content is re-extracted.",
    "delete": "Delete one memory by id, with the facts only it stated.",
    "forget": "Delete for good: one memory (memory_id), a whole dataset (dataset), or everything one user "
              "said (user, within dataset). Give exactly one of memory_id, dataset or user.",
    "provenance": "The passages, entities and facts one memory states.",
    "pin": "Pin a memory: it never decays and is never pruned.",
    "unpin": "Undo pin: the memory decays and may be pruned again.",
    "chain": "The chain of memories one memory belongs to (what it superseded and what superseded it), "
             "oldest first.",
    "prune": "Remove what has decayed, aged out or been superseded. dry_run (the default) only reports.",
    "datasets": "The names of the datasets that hold memories.",
    "feedback": "Say whether a recalled fact (its id from recall) helped: it ranks higher or lower from now on.",
    "improve": "Tidy a dataset: process pending messages, merge duplicate entities, fill missing embeddings.",
    "context": "The block to put in a prompt about a user: their current facts with dates, the session's "
               "latest messages and, with a query, the evidence for it, within max_tokens.",
    "sessions": "The conversations of a dataset (of one user or agent), latest first.",
}

#: parameter descriptions for a model, where the request model's own is missing or speaks of Python
_WHEN = "ISO 8601 or words ('2024-05-01', 'last June', '3 days ago')."
PARAMS: dict[str, str] = {
    "dataset": "Dataset (namespace) name: letters, digits, '_', '.', '-'.",
    "query": "The question or keywords to search for.",
    "top_k": "How many results to return.",
    "memory_id": "A memory id (mem_…) from remember, recall or context.",
    "fact_id": "A fact id (fct_…), as returned by recall.",
    "helpful": "true if the fact helped, false if it was wrong or irrelevant.",
    "entity": "The entity's name, e.g. 'Alice' or 'Acme Corp'.",
    "relation": "Only facts with this relation, e.g. 'works_at'.",
    "max_tokens": "Largest size of the block, in tokens.",
    "user": "The user the memories are about (speaker of role-user messages).",
    "agent": "The agent the memories are about (speaker of role-assistant messages).",
    "session": "The conversation id the messages belong to.",
    "source": "Where it came from (a URL, file name or system).",
    "kind": "A label for the memory, e.g. 'knowledge', 'note', 'episode'.",
    "force": "Process again content seen before.",
    "dry_run": "Only report what would happen; change nothing.",
    "valid_at": "When it happened or was said (default: now). " + _WHEN,
    "as_of": "Answer about this time instead of now. " + _WHEN,
    "known_at": "Answer with what was believed at this time. " + _WHEN,
    "retention_until": "Prunable after this time. " + _WHEN,
    "metadata": "A JSON object of your own labels (string keys), kept with the memory and usable in filters.",
    "neighbors": "Conversation turns to attach before and after each hit.",
    "search_type": "Which searches to run (auto: chosen from the question).",
    "retry_failed": "Also process the memories whose processing failed.",
    "status": "Only memories in this state.",
    "retention": "How long the memory is kept: permanent, decision, standard, ephemeral or session.",
    "order_by": "The order of the page.",
    "descending": "Newest (largest) first.",
    "limit": "How many to return.",
    "offset": "How many to skip (the next page starts at offset + limit).",
    "topic": "The subject of a decision.",
    "decisions": "What was decided, one item each.",
    "rationale": "Why, one reason each.",
    "reason": "Why it is pinned.",
    "content": "What to remember: text, chat messages [{role, content, name?, created_at?}] (one list is one "
               "conversation episode), a decision {topic, context?, decisions?, rationale?}, or known facts "
               "{source, relation, target, valid_at?, invalid_at?}.",
}
_OVERRIDES: dict[str, dict[str, str]] = {  # per verb, where the general words do not fit
    "context": {"query": "What the conversation is about now (adds the evidence for it).",
                "session": "The conversation whose latest messages to show."},
    "forget": {"dataset": "Forget this whole dataset, or (with user) the dataset the user's memories are in.",
               "user": "Forget everything this user's memories stated."},
    "list": {"dataset": "Dataset name (default 'main')."},
    "update": {"content": "The new text of the memory.", "context": "The situation of a decision."},
}

READ_ONLY = frozenset({"recall", "timeline", "stats", "get", "list", "provenance", "chain", "datasets",
                       "context", "sessions"})
DESTRUCTIVE = frozenset({"forget", "delete", "prune", "update"})
IDEMPOTENT = READ_ONLY | {"forget", "delete", "pin", "unpin", "update"}

TEXT_CHARS = 360  # the longest passage or memory text a result shows (the structured result has all)
GET_CHARS = 4000  # the longest memory content ``get`` shows


@dataclass(frozen=True)
class Tool:
    """One tool: a verb with the parameters a profile gives it."""

    name: str
    description: str
    params: tuple[str, ...]
    model: type[VerbRequest]
    lean: bool = False  #: the agent profile's shorter schema (see ``_lean``)

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (hints for the client: may it call this without asking?)."""
        read_only = self.name in READ_ONLY
        out: dict[str, Any] = {"title": self.name.capitalize(), "readOnlyHint": read_only,
                               "openWorldHint": False}
        if not read_only:
            out |= {"destructiveHint": self.name in DESTRUCTIVE, "idempotentHint": self.name in IDEMPOTENT}
        return out

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments, compact (no titles), every parameter described."""
        fields = {name: (self.model.model_fields[name].annotation, _field(self, name)) for name in self.params}
        model = create_model(f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)  # type: ignore[call-overload]
        schema = _compact(model.model_json_schema())
        return _lean(schema) if self.lean else schema

    def definition(self) -> dict[str, Any]:
        """The OpenAI function-calling definition of the tool."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.schema()}}


def _field(t: Tool, name: str) -> Any:
    field = t.model.model_fields[name]
    words = _OVERRIDES.get(t.name, {}).get(name) or PARAMS.get(name) or field.description
    return FieldInfo.merge_field_infos(field, description=words)  # a copy: the model's own is untouched


def tool(name: str, profile: str = "agent") -> Tool:
    """The tool ``name`` as ``profile`` gives it (a verb outside the agent profile has all its
    parameters)."""
    if name not in VERBS:
        raise ValidationError(f"unknown tool {name!r}: the tools are {', '.join(VERBS)}")
    model = VERBS[name]
    params = tuple(n for n in model.model_fields if n not in OMITTED.get(name, ()))
    if profile == "agent" and name in AGENT_PARAMS:
        params = tuple(n for n in AGENT_PARAMS[name] if n in params)
    description = DESCRIPTIONS.get(name) or " ".join((model.__doc__ or name).replace("``", "").split())
    return Tool(name, description, params, model, lean=profile == "agent" and name in AGENT_PARAMS)


def select(profile: str = "agent") -> list[Tool]:
    """The tools of a profile: ``agent``, ``all``, or verb names separated by commas."""
    if profile in PROFILES:
        names = PROFILES[profile] or tuple(VERBS)
        return [tool(n, profile) for n in names]
    names = tuple(n.strip() for n in profile.split(",") if n.strip())
    unknown = [n for n in names if n not in VERBS]
    if unknown or not names:
        raise ValidationError(f"unknown tool profile {profile!r}: give one of {', '.join(PROFILES)} or verb "
                              f"names separated by commas ({', '.join(VERBS)})")
    return [tool(n, "all") for n in dict.fromkeys(names)]


def definitions(profile: str = "agent") -> list[dict[str, Any]]:
    """The tools of ``profile`` as OpenAI function-calling definitions."""
    return [t.definition() for t in select(profile)]


def check_arguments(t: Tool, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of the verb call, checked by its request model; unknown names and
    bad values raise ``ValidationError`` (HTTP's 422), naming each problem."""
    arguments = parse_arguments(arguments)
    unknown = [n for n in arguments if n not in t.params]
    if unknown:
        raise ValidationError(f"{t.name}: unknown argument{'s' * (len(unknown) > 1)} "
                              f"{', '.join(repr(n) for n in unknown)}; it takes {', '.join(t.params)}")
    if t.model.partial:  # only the fields given change; a tool cannot tell null from unset
        arguments = {k: v for k, v in arguments.items() if v is not None}
    try:
        request = t.model.model_validate(arguments)
    except PydanticValidationError as exc:
        raise ValidationError(f"{t.name}: {_message(exc.errors())}") from None
    values = request.arguments()
    if t.name in ("remember", "add") and "origin" in values:
        # the caller is the agent: what it stores is at most its own word (docs/security.md)
        values["origin"] = values["origin"] if values["origin"] in ("tool", "document") else "agent"
    if t.name == "forget":
        user = values.get("user") is not None
        chosen = sum([values.get("memory_id") is not None, values.get("dataset") is not None and not user, user])
        if chosen != 1:
            raise ValidationError("forget: give exactly one of memory_id, dataset or user (user with its dataset)")
    return values


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A tool call's arguments: an object, or the JSON text of one (as OpenAI sends them)."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"the arguments are not JSON: {exc.msg}") from None
    if not isinstance(arguments, Mapping):
        raise ValidationError("the arguments must be a JSON object")
    return dict(arguments)


def _message(errors: list[Any]) -> str:
    parts = [f"{'.'.join(str(p) for p in err.get('loc', ())) or 'arguments'}: {err.get('msg', 'invalid')}"
             for err in errors[:5]]
    return "; ".join(parts) + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")


def call(kn: Any, name: str, arguments: Mapping[str, Any] | None = None, *, format: str = "text",
         profile: str = "all") -> Any:
    """Run tool ``name`` on a ``Kenning`` (embedded or remote): its answer as compact text
    (``format="text"``) or as the JSON of the verb's result (``"json"``)."""
    if format not in ("text", "json"):
        raise ValidationError(f"format must be 'text' or 'json', not {format!r}")
    t = tool(name, profile)
    values = check_arguments(t, arguments)
    result = getattr(kn, name)(**values)
    return render(name, result) if format == "text" else result_json(result)


def result_json(value: Any) -> Any:
    """A verb's result as JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [result_json(v) for v in value]
    return value


# -- compact text results ---------------------------------------------------------------------
def render(verb: str, result: Any) -> str:
    """What an agent should read of a verb's result: short lines (the fact or passage, its
    dates, current or not, its ids), bounded in size."""
    renderer = _RENDERERS.get(verb)
    if renderer is not None:
        return renderer(result)
    data = result_json(result)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= 8000 else text[:8000] + " …(cut: ask for format json)"


def _day(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) or (value.hour, value.minute, value.second) == (0, 0, 0):
            return value.date().isoformat()
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _span(valid: Any, invalid: Any) -> str:
    if valid is None and invalid is None:
        return ""
    return f"{_day(valid) or '?'} → {_day(invalid) or 'now'}"


def _hit_line(i: int, hit: Any) -> str:
    label = {"chunk": "passage", "memory": "memory"}.get(hit.kind, hit.kind)
    state = "current" if hit.current else "no longer current"
    if hit.kind == "fact":
        span = _span(hit.valid_at, hit.invalid_at)
        head = f"{i}. [fact, {state}{', ' + span if span else ''}] {_cut(hit.text)}"
    else:
        where = getattr(hit, "source", None) if hit.kind != "fact" else None
        loc = getattr(hit, "location", None)
        page = ""
        if loc is not None:
            parts = [f"{k} {v}" for k, v in result_json(loc).items() if v not in (None, [], "")]
            page = f", {'; '.join(str(p) for p in parts)[:80]}" if parts else ""
        when = _day(hit.valid_at or hit.created_at)
        speaker = getattr(hit, "speaker", None)  # a message hit's speaker, where the hit names one
        extra = ", ".join(x for x in (when, f"said by {speaker}" if speaker else "",
                                      f"from {where}{page}" if where else "", state if not hit.current else "") if x)
        head = f"{i}. [{label}{', ' + extra if extra else ''}] {_cut(hit.text)}"
    ids = f"   id {hit.id}" + (f" · memory {', '.join(hit.memory_ids[:3])}" if hit.memory_ids else "")
    return head + "\n" + ids


def _recall(result: Any) -> str:
    when = f" as of {_day(result.as_of)}" if result.as_of else ""
    known = f", as known at {_day(result.known_at)}" if result.known_at else ""
    lines = [f"{len(result.hits)} result{'s' * (len(result.hits) != 1)} for {_cut(result.query, 120)!r}"
             f" in dataset {result.dataset!r}{when}{known}:"]
    if result.answer:
        lines.append(f"Answer: {_cut(result.answer, 600)}")
    lines += [_hit_line(i, hit) for i, hit in enumerate(result.hits, 1)]
    for neighbor_hit in result.hits:
        for n in getattr(neighbor_hit, "neighbors", [])[:4]:
            lines.append(f"   near {neighbor_hit.id}: {_cut(getattr(n, 'text', '') or getattr(n, 'content', ''), 160)}")
    if result.messages:
        lines.append("Latest messages of the session:")
        lines += [f"- {_cut(m.content, 200)} ({_day(m.valid_at)}, {m.id})" for m in result.messages[-5:]]
    if not result.hits:
        lines.append("Nothing found.")
    return "\n".join(lines)


def _fact_line(f: Any) -> str:
    state = "current" if f.invalid_at is None and f.expired_at is None else "closed"
    later = f"; superseded by {f.superseded_by}" if f.superseded_by else ""
    what = f"{f.relation}: {f.target}; id {f.id}{later}"
    return f"- {_span(f.valid_at, f.invalid_at)} [{state}] {_cut(f.description, 200)} ({what})"


def _timeline(result: Any) -> str:
    if not result.facts:
        return f"No facts about {result.entity.name!r}."
    return "\n".join([f"Timeline of {result.entity.name} ({len(result.facts)} facts, oldest first):",
                      *[_fact_line(f) for f in result.facts]])


def _context(result: Any) -> str:
    return result.text or "Nothing known yet."


def _remember(result: Any) -> str:
    if isinstance(result, list):  # add: the ids
        return f"Stored {len(result)} pending memor{'y' if len(result) == 1 else 'ies'}: {', '.join(result)}"
    ids: list[str] = result.memory_ids
    parts = [f"Remembered {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}"
             + (f" ({', '.join(ids[:10])}{' …' if len(ids) > 10 else ''})" if ids else "")
             + f": {result.facts_created} new fact{'s' * (result.facts_created != 1)}, "
               f"{result.entities_created} new entit{'y' if result.entities_created == 1 else 'ies'}."]
    if result.facts_invalidated:
        parts.append(f"Closed {len(result.facts_invalidated)} earlier fact(s) it contradicts: "
                     f"{', '.join(result.facts_invalidated[:10])}.")
    if result.skipped:
        parts.append(f"Already known (skipped): {', '.join(result.skipped[:10])}.")
    if result.no_facts:
        parts.append(f"No facts found in {len(result.no_facts)} (kept as searchable text).")
    if result.errors:
        parts.append("Errors: " + "; ".join(_cut(e, 200) for e in result.errors[:5]))
    if result.dry_run:
        parts.append("Dry run: nothing was stored.")
    return " ".join(parts)


def _memory_line(m: Any, limit: int = 200) -> str:
    who = ", ".join(f"{k} {v}" for k, v in (("user", getattr(m, "user", None)), ("session", getattr(m, "session", None)))
                    if v)
    return f"- {m.id} [{m.kind}, {m.status}, {_day(m.valid_at)}{', ' + who if who else ''}] {_cut(m.content, limit)}"


def _get(m: Any) -> str:
    head = _memory_line(m, 0).rsplit("] ", 1)[0] + "]"
    extra = [f"source: {m.source}"] if m.source else []
    if m.pinned:
        extra.append("pinned")
    body = m.content if len(m.content) <= GET_CHARS else m.content[:GET_CHARS] + " …(cut)"
    return "\n".join([head[2:], *extra, body])


def _memories(result: Any) -> str:
    items = result if isinstance(result, list) else getattr(result, "items", [])
    if not items:
        return "No memories."
    more = getattr(result, "next_offset", None)
    return "\n".join([*[_memory_line(m) for m in items[:50]],
                      *([f"(more: offset {more})"] if more is not None else [])])


def _forget(result: Any) -> str:
    n, f, e = len(result.memory_ids), len(result.fact_ids), len(result.entity_ids)
    ids = f": {', '.join(result.memory_ids[:20])}{' …' if n > 20 else ''}" if n else ""
    return f"Forgot {n} memor{'y' if n == 1 else 'ies'}, {f} fact(s) and {e} entit{'y' if e == 1 else 'ies'}{ids}."


def _feedback(result: Any) -> str:
    data = result_json(result)
    return f"Fact {data.get('fact_id', '')} now weighs {data.get('weight')}." if isinstance(data, dict) else str(data)


def _datasets(result: Any) -> str:
    return ", ".join(result) if result else "No datasets."


def _sessions(result: Any) -> str:
    if not result:
        return "No sessions."
    return "\n".join(f"- {s.id if hasattr(s, 'id') else s}" + "".join(
        f" {k}={v}" for k, v in result_json(s).items() if k != "id" and v not in (None, [], {}, ""))
        for s in result[:50])


def _provenance(result: Any) -> str:
    lines = [f"Memory {result.memory_id}: {len(result.chunks)} passage(s)."]
    facts = getattr(result, "facts", [])
    lines += [_fact_line(f) for f in facts[:30]]
    return "\n".join(lines)


_RENDERERS: dict[str, Callable[[Any], str]] = {
    "recall": _recall, "timeline": _timeline, "context": _context, "remember": _remember, "add": _remember,
    "get": _get, "update": _get, "pin": _get, "unpin": _get, "list": _memories, "chain": _memories,
    "forget": _forget, "delete": _forget, "feedback": _feedback, "datasets": _datasets,
    "sessions": _sessions, "provenance": _provenance,
}


#: the fields of a nested shape the agent profile shows (the others are still accepted)
LEAN_SHAPES: dict[str, tuple[str, ...]] = {"MemoryInput": ("topic", "context", "decisions", "rationale")}


def _lean(schema: dict[str, Any]) -> dict[str, Any]:
    """The agent profile's schema: nested shapes (``$defs``) without their words and limits (the
    parameter's description says what each shape is), a decision with its main fields only."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    out = {}
    for name, shape in defs.items():
        keep = LEAN_SHAPES.get(name)
        props = {k: {a: b for a, b in v.items() if a not in ("description", "default", "minLength", "maxLength")}
                 for k, v in shape.get("properties", {}).items() if keep is None or k in keep}
        out[name] = {**shape, "properties": props}
    return {**schema, "$defs": out}


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema without what a model does not need: titles, and the ``null``
    branch of an optional parameter (leaving it out means the same)."""

    def walk(node: Any, top: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()
               if k not in ("title", "additionalProperties") or not isinstance(v, (str, bool))}
        if top and "$defs" in out:  # the parameter's own description says what the shapes are
            out["$defs"] = {n: {k: v for k, v in d.items() if k != "description"} for n, d in out["$defs"].items()}
        if "properties" in out and isinstance(out["properties"], dict):  # a property named "title" stays
            out["properties"] = {k: walk(v) for k, v in node["properties"].items()}
        branches = out.get("anyOf")
        if isinstance(branches, list):
            kept = [b for b in branches if b != {"type": "null"}]
            strings = [b for b in kept if b.get("type") == "string" and set(b) <= {"type", "maxLength", "format", "minLength"}]
            if len(strings) > 1 and len(strings) == len(kept):  # a date as text or date-time: text
                kept = [{"type": "string"}]
            if len(kept) == 1:
                out.pop("anyOf")
                out = {**kept[0], **out}
            else:
                out["anyOf"] = kept
        if out.get("default", 0) is None:
            out.pop("default")
        if out.get("pattern") == DATASET_PATTERN:  # the words say what a dataset name is; a bad one is refused
            out.pop("pattern")
        return out

    return walk(schema, True)


def tool_names(profile: str = "agent") -> list[str]:
    """The names of a profile's tools."""
    return [t.name for t in select(profile)]
