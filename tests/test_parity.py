"""Every verb has one definition (its request model in ``kenning.requests``); every surface names
the same parameters with the same defaults: ``Kenning`` and ``AsyncKenning``, the OpenAPI
schema, the MCP tools' input schemas and the CLI options (through the CLI's documented
``ALIASES``). ``drift`` is the detector; the last tests show it catching a drifted surface."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import click
import pytest

from kenning import AsyncKenning, Kenning
from kenning.cli import cli
from kenning.cli._common import ALIASES, CLI_ONLY
from kenning.remote import ROUTES
from kenning.requests import VERBS

REQUIRED = object()  # the "default" of a parameter that has none
ALIASED = object()  # the default of a CLI alias: its own (``--asc`` is false when descending)

#: each verb's method and path, from the remote client's table (the server serves each:
#: tests/test_remote.py)
HTTP = {verb: (ROUTES[model].method.lower(), ROUTES[model].path) for verb, model in VERBS.items()}
CLI = {
    "remember": ["remember"], "add": ["add"], "cognify": ["cognify"], "recall": ["recall"],
    "timeline": ["timeline"], "stats": ["stats"], "improve": ["improve"], "feedback": ["feedback"],
    "prune": ["prune"], "forget": ["forget"], "list": ["memories", "list"], "get": ["memories", "show"],
    "update": ["memories", "update"], "delete": ["memories", "delete"], "pin": ["memories", "pin"],
    "unpin": ["memories", "unpin"], "chain": ["memories", "chain"], "context": ["context"],
    "sessions": ["sessions"],
}


def model_params(verb: str) -> dict[str, Any]:
    fields = VERBS[verb].model_fields
    return {n: REQUIRED if f.is_required() else f.default for n, f in fields.items()}


def drift(surface: dict[str, Any], verb: str, *, partial: bool = False) -> list[str]:
    """How a surface's parameters (name → default) differ from the verb's model. ``partial``:
    the surface may leave parameters out (the CLI), but those it has must agree."""
    want = model_params(verb)
    problems = [f"{verb}: unknown parameter {n!r}" for n in surface if n not in want]
    problems += [f"{verb}: {n!r} missing" for n in want if n not in surface and not partial]
    problems += [f"{verb}: {n!r} defaults to {surface[n]!r}, not {want[n]!r}"
                 for n in want if n in surface and surface[n] not in (want[n], ALIASED)
                 and not (partial and want[n] is REQUIRED)]
    return problems


def python_params(fn: Any) -> dict[str, Any]:
    params = list(inspect.signature(fn).parameters.values())[1:]  # less self
    return {p.name: REQUIRED if p.default is inspect.Parameter.empty else p.default for p in params}


def _schema_params(schema: dict[str, Any]) -> dict[str, Any]:
    required = set(schema.get("required", ()))
    return {n: REQUIRED if n in required else p.get("default")
            for n, p in schema.get("properties", {}).items()}


def openapi_params(spec: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    operation = spec["paths"][path][method]
    out = {p["name"]: REQUIRED if p.get("required") else p["schema"].get("default")
           for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        ref = body["$ref"] if "$ref" in body else next(s["$ref"] for s in body["anyOf"] if "$ref" in s)
        out |= _schema_params(spec["components"]["schemas"][ref.rsplit("/", 1)[1]])
    return out


def cli_params(command: click.Command) -> dict[str, Any]:
    out, given = {}, command.make_context(command.name, [], resilient_parsing=True).params
    for param in command.params:
        if param.name in ALIASES:
            out[ALIASES[param.name]] = ALIASED
        elif param.name not in CLI_ONLY:  # what the command receives when the option is not given
            out[param.name] = REQUIRED if param.required else None if given[param.name] == () else given[param.name]
    return out


def _command(path: list[str]) -> click.Command:
    command: Any = cli
    for name in path:
        command = command.commands[name]
    return command


@pytest.fixture(scope="module")
def openapi(tmp_path_factory):
    pytest.importorskip("fastapi")
    from kenning.server.app import create_app

    with Kenning(str(tmp_path_factory.mktemp("parity") / "p.db")) as kn:
        yield create_app(kn, auth=False).openapi()


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory):
    pytest.importorskip("mcp")
    from kenning.mcp import build_server

    with Kenning(str(tmp_path_factory.mktemp("parity") / "m.db")) as kn:
        tools = anyio.run(build_server(kn, auth=False, tools="all").list_tools)
        yield {t.name: t for t in tools}


@pytest.mark.parametrize("verb", list(VERBS))
def test_python_verbs_match_their_models(verb):
    for facade in (Kenning, AsyncKenning):
        method = getattr(facade, verb)
        params = python_params(method)
        # the one Python-only parameter: a callback, declared by the model (``progress``)
        assert (params.pop("progress", "absent") is None) == VERBS[verb].progress, facade
        assert drift(params, verb) == [], facade
        assert method.__doc__ == VERBS[verb].__doc__
    assert inspect.iscoroutinefunction(getattr(AsyncKenning, verb))


def test_both_facades_have_the_same_documented_public_surface():
    def public(cls: type) -> dict[str, Any]:
        return {n: v for n, v in vars(cls).items() if not n.startswith("_")}

    assert public(Kenning).keys() == public(AsyncKenning).keys()
    for cls in (Kenning, AsyncKenning):
        for name, member in public(cls).items():
            target = member if isinstance(member, property) else getattr(cls, name)
            assert (target.__doc__ or "").strip(), f"{cls.__name__}.{name} has no docstring"
    assert python_params(AsyncKenning.__init__) == python_params(Kenning.__init__)


@pytest.mark.parametrize("verb", list(VERBS))
def test_openapi_matches_the_models(openapi, verb):
    assert drift(openapi_params(openapi, *HTTP[verb]), verb) == []


def test_mcp_tools_are_the_verbs(mcp_tools):
    """The full profile (``kenning mcp --tools all``) keeps every verb with every parameter a
    tool can use; ``OMITTED`` names the rest (files on the server's disk, wiping everything)."""
    from kenning.mcp.server import OMITTED
    from kenning.tools import tool as agent_tool

    assert set(mcp_tools) == set(VERBS)
    for verb, tool in mcp_tools.items():
        schema = getattr(tool, "input_schema", None) or tool.inputSchema
        params = _schema_params(schema) | {n: model_params(verb)[n] for n in OMITTED.get(verb, ())}
        assert drift(params, verb) == []
        assert tool.description == agent_tool(verb, "all").description


@pytest.mark.parametrize("verb", list(CLI))
def test_cli_options_match_the_models(verb):
    assert drift(cli_params(_command(CLI[verb])), verb, partial=True) == []


def test_the_detector_catches_a_drifted_python_signature():
    def recall(self, query, *, dataset="other", top_k=10, limit=5):  # noqa: ANN001, ANN202
        """A copy that drifted: another default, a renamed parameter, the rest missing."""

    found = drift(python_params(recall), "recall")
    assert "recall: 'dataset' defaults to 'other', not 'main'" in found
    assert "recall: unknown parameter 'limit'" in found
    assert "recall: 'depth' missing" in found


def test_the_detector_catches_a_drifted_cli_option_and_openapi_schema(openapi):
    @click.command()
    @click.option("--dataset", default="main")
    @click.option("--top-k", default=5)
    @click.option("--lanes", default=None)
    def recall(dataset, top_k, lanes):  # noqa: ANN001, ANN202
        """A CLI command that drifted."""

    assert drift(cli_params(recall), "recall", partial=True) == [
        "recall: unknown parameter 'lanes'", "recall: 'top_k' defaults to 5, not 10"]
    spec = {**openapi, "components": {"schemas": {**openapi["components"]["schemas"]}}}
    body = spec["components"]["schemas"]["RecallRequest"]
    spec["components"]["schemas"]["RecallRequest"] = {
        **body, "properties": {**body["properties"], "depth": {**body["properties"]["depth"], "default": 2}}}
    assert drift(openapi_params(spec, *HTTP["recall"]), "recall") == ["recall: 'depth' defaults to 2, not 1"]


def engine_functions(verb: str) -> list[Any]:
    """The engine's functions a verb's call reaches (the dispatcher and the parts' methods)."""
    from kenning.core.engine import Engine, _Verb
    from kenning.core.files import Files
    from kenning.core.writing import Writing

    found = vars(Engine).get(verb)
    if found is None or verb == "list":  # list is given the request's fields as one MemoryFilter
        return []
    if verb == "remember":
        return [Engine.remember, Writing.remember, Files.remember]
    return [found.fn if isinstance(found, _Verb) else found]


#: engine arguments no request model has: internal callers' options (``lanes``: evaluation;
#: ``status``: remember stores as processing) and the Python-only callback
ENGINE_ONLY = {"lanes", "status", "progress"}


def engine_redeclared(verb: str) -> list[str]:
    """Parameters of the engine functions of ``verb`` that repeat a default of the model or are
    not the model's: the engine is given the validated request's fields, it declares none."""
    fields = VERBS[verb].model_fields
    problems = []
    for fn in engine_functions(verb):
        for param in list(inspect.signature(fn).parameters.values())[1:]:
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL) or param.name in ENGINE_ONLY:
                continue
            if param.name not in fields:
                problems.append(f"{fn.__qualname__}: {param.name!r} is not a field of {VERBS[verb].__name__}")
            elif param.default is not inspect.Parameter.empty:
                problems.append(f"{fn.__qualname__}: {param.name!r} declares the default {param.default!r}")
    return problems


@pytest.mark.parametrize("verb", list(VERBS))
def test_the_engine_declares_no_default_of_its_own(verb):
    assert engine_redeclared(verb) == []



def test_update_changes_the_fields_of_its_model():
    from kenning.core.lifecycle import UPDATABLE_FIELDS

    assert UPDATABLE_FIELDS == set(VERBS["update"].model_fields) - {"memory_id"}
