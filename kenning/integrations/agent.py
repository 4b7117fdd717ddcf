"""``with_memory``: give any agent function the user's memory before it runs and record the
turn after it (no framework needed).

    @with_memory(kn, user="alice")
    def reply(message: str, *, memory: str) -> str:
        return llm(f"{memory}\\n\\nUser: {message}")

Before each call, ``kn.context(message, user=…, session=…)`` is rendered and passed as the
keyword ``memory`` (``context_arg``); after it, the user's message and the function's answer
are remembered as two chat messages of that user (and session, when there is one), so their
facts are extracted and the next call's context has them. The message is the call's first
positional argument (or the keyword ``message_arg``). ``user`` and ``session`` are fixed by the
decorator or given per call as keywords of those names (taken by the wrapper unless the
function declares them too). Sync and async functions; ``Kenning`` or ``AsyncKenning``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from ..client import AsyncKenning, Kenning
from ..errors import ValidationError

__all__ = ["with_memory"]

F = TypeVar("F", bound=Callable[..., Any])


def with_memory(kn: Kenning | AsyncKenning, *, user: str | None = None, session: str | None = None,
                dataset: str = "main", agent: str | None = None, max_tokens: int = 1500,
                context_arg: str = "memory", message_arg: str | None = None, record: bool = True) -> Callable[[F], F]:
    """The decorator (see the module's words). ``record=False`` only reads."""

    def decorate(fn: F) -> F:
        params = inspect.signature(fn).parameters
        takes = {name for name, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}

        def prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
            scope = {"user": user, "session": session}
            for name in scope:
                if name in kwargs:
                    scope[name] = kwargs[name] if name in takes else kwargs.pop(name)
            message = kwargs.get(message_arg) if message_arg else (args[0] if args else None)
            if not isinstance(message, str) or not message.strip():
                raise ValidationError(f"{fn.__name__}: with_memory needs the user's message as text "
                                      f"({'keyword ' + repr(message_arg) if message_arg else 'the first argument'})")
            return message, scope, kwargs

        def turns(message: str, answer: Any) -> list[dict[str, str]]:
            out = [{"role": "user", "content": message}]
            if answer is not None and str(answer).strip():
                out.append({"role": "assistant", "content": str(answer)})
            return out

        if inspect.iscoroutinefunction(fn):
            async def run(method: str, *a: Any, **kw: Any) -> Any:
                call = getattr(kn, method)
                if isinstance(kn, AsyncKenning):
                    return await call(*a, **kw)
                return await asyncio.to_thread(call, *a, **kw)

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                message, scope, kwargs = prepare(args, dict(kwargs))
                ctx = await run("context", message, dataset=dataset, max_tokens=max_tokens, **scope)
                answer = await fn(*args, **{**kwargs, context_arg: ctx.text})
                if record:
                    await run("remember", turns(message, answer), dataset=dataset, agent=agent, **scope)
                return answer

            return async_wrapper  # type: ignore[return-value]

        if isinstance(kn, AsyncKenning):
            raise ValidationError(f"{fn.__name__} is not async: give with_memory a Kenning, not an AsyncKenning")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            message, scope, kwargs = prepare(args, dict(kwargs))
            ctx = kn.context(message, dataset=dataset, max_tokens=max_tokens, **scope)
            answer = fn(*args, **{**kwargs, context_arg: ctx.text})
            if record:
                kn.remember(turns(message, answer), dataset=dataset, agent=agent, **scope)  # type: ignore[arg-type]  # chat dicts: client.pyi names Message only
            return answer

        return wrapper  # type: ignore[return-value]

    return decorate
