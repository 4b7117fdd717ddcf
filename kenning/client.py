"""The public facade: ``Kenning`` (sync) and ``AsyncKenning`` (async), thin shells over one
``Engine``. Each verb's signature and docstring come from its request model
(``kenning.requests``); ``AsyncKenning`` runs each verb of a ``Kenning`` on a worker thread, so
the two can never drift apart.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import functools
import inspect
import os
import typing
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._checks import nfc
from ._time import utcnow
from .core.engine import Engine
from .errors import ConfigurationError, EmbedderMismatchError
from .models import TransferResult
from .pipeline.extract import Extractor
from .providers.base import ChatModel, Embedder
from .providers.rerank import Reranker
from .settings import Settings
from .store import open_store
from .requests import VERBS, VerbRequest
from .store.base import MemoryFilter, Store

if TYPE_CHECKING:
    from .remote import Remote

__all__ = ["AsyncKenning", "Kenning", "verb_signature"]


def _build_engine(
    path_or_url: str | None,
    *,
    store: Store | None,
    embedder: Embedder | None,
    llm: ChatModel | str | None,
    extractor: Extractor | None,
    clock: Callable[[], dt.datetime] | None,
    settings: dict[str, Any],
    verify_embedder: bool = True,
    reranker: Reranker | None = None,
) -> Engine:
    from .providers.registry import make_chat, make_embedder, make_reranker

    if path_or_url is not None:
        settings["db"] = str(path_or_url)
    if isinstance(embedder, str):  # a spec such as "openai:text-embedding-3-small" is a setting
        settings["embedder"], embedder = embedder, None
    if isinstance(llm, str):  # a model name is the ``llm`` setting
        settings["llm"], llm = llm, None
    if isinstance(reranker, str):
        settings["reranker"], reranker = reranker, None
    config = Settings(**settings)
    asked = embedder is not None or "embedder" in config.model_fields_set
    store = store if store is not None else open_store(
        config.db, pool_size=config.pool_size, hnsw_ef_search=config.hnsw_ef_search)
    try:
        embedder = embedder if embedder is not None else make_embedder(config)
        chat = llm if llm is not None else make_chat(config)
        reranker = reranker if reranker is not None else make_reranker(config)
        if extractor is None:
            if chat is not None:
                from .pipeline.llm_extract import LLMExtractor

                extractor = LLMExtractor(chat, graph_model=config.graph_model, prompt=config.prompt)
            else:
                from .pipeline.offline import OfflineExtractor

                extractor = OfflineExtractor()
        try:
            return Engine(config, store, embedder, extractor, chat, clock or utcnow,
                          verify_embedder=verify_embedder, reranker=reranker)
        except EmbedderMismatchError as exc:
            stored = str(exc.details.get("stored", ""))
            if asked or not stored.startswith(("local:", "openai:")):
                raise
            # docs/llm.md "Changing the embedder": the store knows its embedder; opening it uses that one unless asked
            # for another (a name it cannot be rebuilt from, e.g. an interrupted re-embedding,
            # stays an error).
            embedder.close()
            config = config.model_copy(update={"embedder": stored})
            embedder = make_embedder(config)
            return Engine(config, store, embedder, extractor, chat, clock or utcnow, reranker=reranker)
    except BaseException:
        store.close()
        raise


def _server_settings(path_or_url: str | None, settings: dict[str, Any]) -> Settings | None:
    """The settings, when ``path_or_url`` (or the ``db`` setting) names a kenning server with
    http(s)://; None for a local store."""
    config = Settings(**(settings if path_or_url is None else settings | {"db": str(path_or_url)}))
    return config if (config.db or "").lower().startswith(("http://", "https://")) else None


def _remote(path_or_url: str | None, settings: dict[str, Any], **collaborators: Any) -> Remote | None:
    """A client of the kenning server that ``path_or_url`` names, or None for a local store."""
    config = _server_settings(path_or_url, settings)
    if config is None:
        return None
    given = [name for name, value in collaborators.items() if value is not None]
    if given:
        raise ConfigurationError(f"Kenning({config.db!r}) speaks to a server, which has its own "
                                 f"{', '.join(given)}: pass none")
    from .remote import Remote

    return Remote(config)


def verb_signature(model: type[VerbRequest]) -> inspect.Signature:
    """The Python signature of a verb: its model's fields, ``positional`` ones first."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints = typing.get_type_hints(model)  # without the limits' Annotated metadata
    for name, field in model.model_fields.items():
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if name in model.positional else inspect.Parameter.KEYWORD_ONLY
        default = inspect.Parameter.empty if field.is_required() else field.default
        params.append(inspect.Parameter(name, kind, default=default, annotation=hints[name]))
    if model.progress:
        params.append(inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Callable[[int], None] | None))
    return inspect.Signature(params)


def _verb(name: str, run: Callable[[Engine, dict[str, Any]], Any] | None = None) -> Callable[..., Any]:
    """A ``Kenning`` method for verb ``name``: binds the call to the model's signature and passes
    the arguments to the engine's method of that name (or to ``run``) as keywords."""
    model = VERBS[name]
    signature = verb_signature(model)

    def method(self: Kenning, *args: Any, **kwargs: Any) -> Any:
        # a partial verb (update) passes unknown fields on: the engine names what may change
        extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in model.model_fields} if model.partial else {}
        bound = signature.bind(self, *args, **kwargs)
        if not model.partial:
            bound.apply_defaults()
        # every surface (Python, CLI, HTTP, MCP, a remote client's server) passes here: text in NFC
        values = {k: nfc(v) for k, v in bound.arguments.items() if k != "self"} | nfc(extra)
        if self._remote is not None:
            values.pop("progress", None)
            return self._remote.call(model, values)
        return run(self._engine, values) if run else getattr(self._engine, name)(**values)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = model.__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


class Kenning:
    """Persistent, temporal knowledge-graph memory.

    ``Kenning()`` opens the default store in the user's data directory; ``Kenning(":memory:")``
    an in-memory one; ``Kenning("memory.db")`` or ``Kenning("sqlite:///memory.db")`` a file;
    ``Kenning("postgresql://…")`` a PostgreSQL database; ``Kenning("http://host:8000",
    api_key="kn_…")`` a ``kenning serve`` (the same verbs over HTTP, see ``docs/server.md``).
    Other keyword arguments are settings
    (see ``docs/settings.md``); ``store``, ``embedder``, ``llm`` (the chat model: a
    ``ChatModel``, or a model name, which is the ``llm`` setting), ``extractor``, ``reranker``
    and ``clock`` replace a collaborator.

    Every verb takes the parameters of its request model in ``kenning.requests``.

    Example::

        with Kenning("memory.db") as kn:
            kn.remember("Alice works at Acme.")
            print(kn.recall("Where does Alice work?").hits[0].text)
    """

    def __init__(
        self,
        path_or_url: str | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        llm: ChatModel | str | None = None,
        extractor: Extractor | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        reranker: Reranker | None = None,
        **settings: Any,
    ) -> None:
        if isinstance(llm, str):  # the setting, given by its name
            settings["llm"], llm = llm, None
        self._remote = _remote(path_or_url, settings, store=store, embedder=embedder, llm=llm,
                               extractor=extractor, clock=clock, reranker=reranker)
        if self._remote is not None:
            return
        self._engine = _build_engine(
            path_or_url, store=store, embedder=embedder, llm=llm, extractor=extractor,
            clock=clock, settings=settings, reranker=reranker,
        )

    @property
    def settings(self) -> Settings:
        """The settings this instance was opened with."""
        return (self._remote or self._engine).settings

    @property
    def store(self) -> Store:
        """The store this instance writes to (for tools that need more than the verbs)."""
        if self._remote is not None:
            raise ConfigurationError(f"Kenning({self._remote.url!r}) speaks to a server and has no local store")
        return self._engine.store

    @classmethod
    def reembed(cls, path_or_url: str | None = None, **kwargs: Any) -> dict[str, int]:
        """Re-embed a whole store with the configured embedder (after changing embedders):
        ``Kenning.reembed("memory.db", embedder="local:all-MiniLM-L6-v2")``."""
        self = cls.__new__(cls)
        self._remote = None
        known = {k: kwargs.pop(k, None) for k in ("store", "embedder", "llm", "extractor", "clock", "reranker")}
        progress = kwargs.pop("progress", None)  # called with the number of texts just embedded
        if _server_settings(path_or_url, dict(kwargs)) is not None:
            raise ConfigurationError("re-embed where the store is: kenning --db STORE reembed, beside the server")
        self._engine = _build_engine(path_or_url, settings=kwargs, verify_embedder=False, **known)
        with self:
            counts: dict[str, int] = self._engine.reembed(progress=progress)
            return counts

    def __enter__(self) -> Kenning:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store and the model clients."""
        (self._remote or self._engine).close()

    remember = _verb("remember")
    add = _verb("add", lambda engine, args: [memory_id for memory_id, _ in engine.add(**args)])
    cognify = _verb("cognify")
    recall = _verb("recall")
    timeline = _verb("timeline")
    stats = _verb("stats")
    get = _verb("get")
    list = _verb("list", lambda engine, args: engine.list(MemoryFilter(**args)))
    update = _verb("update")
    delete = _verb("delete")
    forget = _verb("forget")
    provenance = _verb("provenance")
    pin = _verb("pin")
    unpin = _verb("unpin")
    chain = _verb("chain")
    prune = _verb("prune")
    datasets = _verb("datasets", lambda engine, args: engine.store.datasets())
    feedback = _verb("feedback")
    improve = _verb("improve")
    context = _verb("context")
    sessions = _verb("sessions")

    # -- the verbs as tools for a model (kenning/tools.py, docs/integrations.md) ---------------
    def tools(self, profile: str = "agent") -> builtins.list[dict[str, Any]]:
        """The verbs as OpenAI function-calling definitions (``{"type": "function", "function":
        {name, description, parameters}}``), from their request models: ``profile`` is
        ``"agent"`` (at most 8 tools for a conversation), ``"all"``, or verb names separated by
        commas. Run a model's call with :meth:`call_tool`."""
        from .tools import definitions

        return definitions(profile)

    def call_tool(self, name: str, arguments: dict[str, Any] | str | None = None, *,
                  format: str = "text") -> Any:
        """Run the tool call a model made: ``name`` and its ``arguments`` (an object, or its
        JSON text), checked by the verb's request model (an unknown argument is a
        ``ValidationError``). Returns compact text for the model (``format="text"``: facts and
        passages with their dates, current or not, and ids) or the result as JSON data
        (``"json"``)."""
        from .tools import call, parse_arguments

        return call(self, name, parse_arguments(arguments), format=format)

    # -- export / import (kenning/store/portable.py, docs/export.md) ---------------------------
    def export(self, path: str | os.PathLike[str], *, datasets: Sequence[str] | None = None,
               format: str = "jsonl", vectors: bool = True,
               progress: Callable[[int], None] | None = None) -> TransferResult:
        """Write ``datasets`` (default: all) to ``path``: ``format="jsonl"`` everything, sorted
        and versioned, for :meth:`import_`; ``"graphml"`` or ``"json"`` the graph (entities and
        facts) for graph tools. ``vectors=False`` leaves vectors out. The file is replaced only
        once complete. ``progress(n)`` is called as rows are written."""
        from .store.portable import export_file

        return export_file(self.store, _path(path), datasets=datasets, format=format, vectors=vectors,
                           progress=progress)

    def import_(self, path: str | os.PathLike[str], *, vectors: bool = True, accounts: bool = False,
                progress: Callable[[int], None] | None = None) -> TransferResult:
        """Load a file written by :meth:`export` (``import`` is a Python keyword, hence the
        underscore) with the same ids, in one transaction; identical rows already held are
        skipped, differing ones refused. Only the datasets the file's header declares are
        touched. A file without vectors (or ``vectors=False``, which ignores the file's: for a
        store with another embedder) is embedded here. The file's users (with their admin
        flags), dataset owners and grants are applied only with ``accounts=True``; otherwise
        they are counted in the result's ``ignored``."""
        from .store.portable import import_file

        report = import_file(self.store, _path(path), vectors=vectors, accounts=accounts, progress=progress)
        if not report.vectors:
            self._engine.reembed(missing_only=True)
        return report


def _path(path: str | os.PathLike[str]) -> str | Path:
    """A path as the export and import functions take it (anything else passed on, for them to refuse)."""
    return Path(path) if isinstance(path, os.PathLike) else path


def _async(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The awaitable twin of a ``Kenning`` method: same name, signature and docstring."""

    @functools.wraps(fn)
    async def method(self: AsyncKenning, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self._sync, fn.__name__), *args, **kwargs)

    return method


class AsyncKenning:
    """The async facade: the same verbs as ``Kenning``, with the same parameters, awaited."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._sync = Kenning(*args, **kwargs)

    settings = property(lambda self: self._sync.settings, doc=Kenning.settings.__doc__)
    store = property(lambda self: self._sync.store, doc=Kenning.store.__doc__)

    @classmethod
    async def reembed(cls, *args: Any, **kwargs: Any) -> dict[str, int]:
        return await asyncio.to_thread(Kenning.reembed, *args, **kwargs)

    #: set below, with the verbs (each the awaited twin of ``Kenning``'s)
    close: Callable[[], Awaitable[None]]

    async def __aenter__(self) -> AsyncKenning:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# the constructor and reembed read as Kenning's (signature and docstring)
functools.update_wrapper(AsyncKenning.__init__, Kenning.__init__)
functools.update_wrapper(vars(AsyncKenning)["reembed"].__func__, vars(Kenning)["reembed"].__func__)
# every verb of ``Kenning``, awaited: a verb added there is added here
for _name in ("close", "export", "import_", "tools", "call_tool", *VERBS):
    setattr(AsyncKenning, _name, _async(getattr(Kenning, _name)))
