"""What the web explorer needs beyond the verbs: an entity's neighbourhood as a graph
(``GET /v1/graph``) and the explorer's own files under ``/ui``.

The graph is built from ``Service.timeline`` calls only (the entity's facts, then each
neighbour's), so it sees exactly what the caller may read and nothing the API refuses.
"""

# No `from __future__ import annotations`: FastAPI must see the local `Caller` alias.

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from ..access import Principal
from ..models import Entity, Fact
from ..requests import DATASET_PATTERN, DEFAULT_DATASET, NAME_CHARS
from .schemas import ErrorResponse
from ..access.service import Service

__all__ = ["Graph", "GraphNode", "build_graph_router", "mount_ui", "neighbourhood"]

UI_DIR = Path(__file__).parent / "ui"
#: neighbours whose own facts one graph call reads at most (each is one timeline query)
MAX_EXPANDED = 50
#: served with the explorer's page: its scripts, styles and requests stay on this server
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


class GraphNode(BaseModel):
    id: str
    name: str
    type: str | None = Field(default=None, description="Known for the centre and expanded nodes.")
    hop: int = Field(description="Distance from the centre entity.")


class Graph(BaseModel):
    """An entity's neighbourhood: facts (open and closed) as edges between entities."""

    center: Entity
    nodes: list[GraphNode]
    edges: list[Fact]
    truncated: bool = Field(description="True when a cap stopped the walk: facts may be missing.")


def neighbourhood(service: Service, who: Principal, entity: str, *, dataset: str = DEFAULT_DATASET,
                  depth: int = 1, limit: int = 100) -> Graph:
    """Facts within ``depth`` hops of ``entity`` (a name or id), at most ``limit`` of them;
    nodes are expanded breadth first, closest first."""
    center = service.timeline(who, entity, dataset=dataset)
    nodes = {center.entity.id: GraphNode(id=center.entity.id, name=center.entity.name,
                                         type=center.entity.type, hop=0)}
    edges: dict[str, Fact] = {}
    truncated = _take(center.facts, nodes, edges, 1, limit)
    for hop in range(1, depth):
        frontier = [n for n in nodes.values() if n.hop == hop]
        for expanded, node in enumerate(frontier):
            if len(edges) >= limit or expanded == MAX_EXPANDED:
                truncated = True  # some far facts may be missing
                break
            found = service.timeline(who, node.id, dataset=dataset)
            node.type = found.entity.type
            truncated = _take(found.facts, nodes, edges, node.hop + 1, limit) or truncated
    return Graph(center=center.entity, nodes=list(nodes.values()), edges=list(edges.values()),
                 truncated=truncated)


def _take(facts: list[Fact], nodes: dict[str, GraphNode], edges: dict[str, Fact], hop: int,
          limit: int) -> bool:
    """Add ``facts`` and their far ends; True when ``limit`` cut some off."""
    for fact in facts:
        if fact.id in edges:
            continue
        if len(edges) >= limit:
            return True
        edges[fact.id] = fact
        for node_id, name in ((fact.source_id, fact.source), (fact.target_id, fact.target)):
            nodes.setdefault(node_id, GraphNode(id=node_id, name=name, hop=hop))
    return False


def build_graph_router(service: Service, caller: Callable[..., Principal]) -> APIRouter:
    errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (401, 404, 422)}
    router = APIRouter(prefix="/v1", responses=errors)
    Caller = Annotated[Principal, Depends(caller)]

    @router.get("/graph", tags=["memory"], summary="An entity's neighbourhood: 1-2 hops, capped.")
    def graph(
        who: Caller,
        entity: Annotated[str, Query(min_length=1, max_length=NAME_CHARS, description="A name or an id.")],
        dataset: Annotated[str, Query(pattern=DATASET_PATTERN)] = DEFAULT_DATASET,
        depth: Annotated[int, Query(ge=1, le=2)] = 1,
        limit: Annotated[int, Query(ge=1, le=500, description="At most this many facts.")] = 100,
    ) -> Graph:
        return neighbourhood(service, who, entity, dataset=dataset, depth=depth, limit=limit)

    return router


def mount_ui(app: FastAPI) -> None:
    """Serve the explorer: its page at ``/ui``, its files under ``/ui/static``."""
    app.mount("/ui/static", StaticFiles(directory=UI_DIR / "static"), name="ui-static")

    @app.get("/ui", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(UI_DIR / "index.html", headers={
            "Content-Security-Policy": CSP, "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"})

    @app.get("/ui/", include_in_schema=False)
    def slash() -> RedirectResponse:
        return RedirectResponse("/ui")
