"""The ``/v1`` routes: one per verb of the Python API, each a shell over one ``Service`` call."""

# No `from __future__ import annotations`: FastAPI must see the local `Caller` alias.

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Path, Query, UploadFile

from ..access import Principal
from ..errors import ValidationError
from ..models import (
    Context,
    ImproveResult,
    CognifyResult,
    ForgetResult,
    Memory,
    Provenance,
    PruneResult,
    RecallResult,
    RememberResult,
    Session,
    Stats,
    Timeline,
)
from ..requests import (
    DATASET_PATTERN,
    DATE_CHARS,
    DEFAULT_DATASET,
    ID_CHARS,
    KIND_CHARS,
    SOURCE_CHARS,
    AddRequest,
    CognifyRequest,
    ContextRequest,
    FeedbackRequest,
    ForgetRequest,
    ImproveRequest,
    ListRequest,
    PinRequest,
    PruneRequest,
    RecallRequest,
    RememberRequest,
    SessionsRequest,
    StatsRequest,
    TimelineRequest,
    UpdateRequest,
)
from .schemas import (
    AddResult,
    DatasetCreate,
    DatasetInfo,
    ErrorResponse,
    FeedbackResult,
    GrantInfo,
    GrantRequest,
    MemoryPage,
    WhoAmI,
    without,
)
from ..access.service import Service

__all__ = ["build_router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 409, 413, 421, 422, 429, 502, 503)
}
MemoryIdPath = Annotated[str, Path(min_length=1, max_length=ID_CHARS)]
DatasetPath = Annotated[str, Path(pattern=DATASET_PATTERN)]
UserPath = Annotated[str, Path(min_length=1, max_length=ID_CHARS)]
_FIELDS = RememberRequest.model_fields
if TYPE_CHECKING:  # built at import from the request models: the checker knows them as requests
    PinBody = PinRequest
    UpdateBody = UpdateRequest
else:
    PinBody = without(PinRequest, "memory_id")
    UpdateBody = without(UpdateRequest, "memory_id")


def build_router(service: Service, caller: Callable[..., Principal]) -> APIRouter:
    router = APIRouter(prefix="/v1", responses=_ERRORS)
    Caller = Annotated[Principal, Depends(caller)]
    _memory_routes(router, service, Caller)
    _dataset_routes(router, service, Caller)

    @router.get("/me", tags=["meta"], summary="Who the key belongs to.")
    def me(who: Caller) -> WhoAmI:
        return WhoAmI(name=who.name, admin=who.admin, auth=service.access.enabled)

    @router.post("/remember", tags=["memory"], summary="Store and process now.")
    def remember(body: RememberRequest, who: Caller) -> RememberResult:
        return service.remember(who, **body.arguments())

    @router.post("/remember/file", tags=["memory"],
                 summary="Remember uploaded files: text, Markdown, HTML, PDF, DOCX, PPTX, XLSX/CSV, JSON.")
    def remember_file(
        who: Caller,
        file: Annotated[list[UploadFile], File(
            description="One or more files (repeat the part); a name may be a path (docs/a.pdf): the source.")],
        dataset: Annotated[str, Form(pattern=DATASET_PATTERN)] = DEFAULT_DATASET,
        kind: Annotated[str, Form(min_length=1, max_length=KIND_CHARS)] = _FIELDS["kind"].default,
        valid_at: Annotated[str | None, Form(max_length=DATE_CHARS)] = None,
        force: Annotated[bool, Form()] = False,
        include: Annotated[list[str] | None, Form(description=_FIELDS["include"].description)] = None,
        exclude: Annotated[list[str] | None, Form(description=_FIELDS["exclude"].description)] = None,
        sync: Annotated[bool, Form(description="Forget the memories of earlier uploads of this folder "
                                               "not sent now.")] = False,
        folder: Annotated[str | None, Form(max_length=SOURCE_CHARS, description=(
            "The folder these files come from: sync compares them with earlier uploads of this folder only."
        ))] = None,
        dry_run: Annotated[bool, Form()] = False,
    ) -> RememberResult:
        uploads = [(upload.filename or "upload", upload.file.read()) for upload in file]
        return service.remember_uploads(who, uploads, folder=folder, dataset=dataset, kind=kind, valid_at=valid_at,
                                        force=force, include=include, exclude=exclude, sync=sync, dry_run=dry_run)

    @router.post("/add", tags=["memory"], summary="Store as pending; cognify processes later.")
    def add(body: AddRequest, who: Caller) -> AddResult:
        return service.add(who, **body.arguments())

    @router.post("/cognify", tags=["memory"], summary="Process pending memories.")
    def cognify(body: CognifyRequest, who: Caller) -> CognifyResult:
        return service.cognify(who, **body.arguments())

    @router.post("/recall", tags=["memory"], summary="Search what is known.")
    def recall(body: RecallRequest, who: Caller) -> RecallResult:
        return service.recall(who, **body.arguments())

    @router.post("/context", tags=["memory"], summary="The context block for an agent's prompt.")
    def context(body: ContextRequest, who: Caller) -> Context:
        return service.context(who, **body.arguments())

    @router.get("/sessions", tags=["memory"], summary="Conversations, latest first.")
    def sessions(query: Annotated[SessionsRequest, Query()], who: Caller) -> list[Session]:
        return service.sessions(who, **query.arguments())

    @router.get("/timeline", tags=["memory"], summary="An entity's facts in time order.")
    def timeline(query: Annotated[TimelineRequest, Query()], who: Caller) -> Timeline:
        return service.timeline(who, **query.arguments())

    @router.post("/improve", tags=["lifecycle"], summary="Process pending, merge duplicate entities, fill embeddings.")
    def improve(body: ImproveRequest, who: Caller) -> ImproveResult:
        return service.improve(who, **body.arguments())

    @router.post("/feedback", tags=["lifecycle"], summary="Mark a recalled fact helpful or not.")
    def feedback(body: FeedbackRequest, who: Caller) -> FeedbackResult:
        return service.feedback(who, **body.arguments())

    @router.post("/prune", tags=["lifecycle"], summary="Remove decayed or superseded memories.")
    def prune(body: PruneRequest, who: Caller) -> PruneResult:
        return service.prune(who, **body.arguments())

    @router.post("/forget", tags=["lifecycle"], summary="Hard-delete a memory, a dataset, a user's memories or everything.")
    def forget(body: ForgetRequest, who: Caller) -> ForgetResult:
        return service.forget(who, **body.arguments())

    @router.get("/stats", tags=["meta"], summary="Counts; without a dataset, over those you may read.")
    def stats(query: Annotated[StatsRequest, Query()], who: Caller) -> Stats:
        return service.stats(who, **query.arguments())

    return router


def _memory_routes(router: APIRouter, service: Service, Caller: Any) -> None:
    @router.get("/memories", tags=["memories"], summary="List memories, a page at a time.")
    def list_memories(query: Annotated[ListRequest, Query()], who: Caller) -> MemoryPage:
        return service.list(who, **query.arguments())

    @router.get("/memories/{memory_id}", tags=["memories"], summary="One memory.")
    def get_memory(memory_id: MemoryIdPath, who: Caller) -> Memory:
        return service.get(who, memory_id)

    @router.patch("/memories/{memory_id}", tags=["memories"], summary="Change the fields sent.")
    def update_memory(memory_id: MemoryIdPath, body: UpdateBody, who: Caller) -> Memory:
        changes = body.arguments()
        if not changes:
            raise ValidationError("nothing to update: send at least one field")
        return service.update(who, memory_id, **changes)

    @router.delete("/memories/{memory_id}", tags=["memories"], summary="Hard-delete one memory.")
    def delete_memory(memory_id: MemoryIdPath, who: Caller) -> ForgetResult:
        return service.delete(who, memory_id)

    @router.post("/memories/{memory_id}/pin", tags=["memories"], summary="Never decay or prune it.")
    def pin_memory(memory_id: MemoryIdPath, who: Caller, body: PinBody | None = None) -> Memory:
        return service.pin(who, memory_id, **(body.arguments() if body else {}))

    @router.post("/memories/{memory_id}/unpin", tags=["memories"], summary="Undo pin.")
    def unpin_memory(memory_id: MemoryIdPath, who: Caller) -> Memory:
        return service.unpin(who, memory_id)

    @router.get("/memories/{memory_id}/chain", tags=["memories"], summary="Its supersession chain.")
    def chain(memory_id: MemoryIdPath, who: Caller) -> list[Memory]:
        return service.chain(who, memory_id)

    @router.get("/memories/{memory_id}/provenance", tags=["memories"], summary="What it states.")
    def provenance(memory_id: MemoryIdPath, who: Caller) -> Provenance:
        return service.provenance(who, memory_id)


def _dataset_routes(router: APIRouter, service: Service, Caller: Any) -> None:
    @router.get("/datasets", tags=["datasets"], summary="Datasets you may read.")
    def list_datasets(who: Caller) -> list[DatasetInfo]:
        return service.accounts.datasets(who)

    @router.post("/datasets", tags=["datasets"], status_code=201, summary="Create a dataset you own.")
    def create_dataset(body: DatasetCreate, who: Caller) -> DatasetInfo:
        return service.accounts.create_dataset(who, body.name)

    @router.delete("/datasets/{name}", tags=["datasets"], summary="Delete a dataset and its memories.")
    def delete_dataset(name: DatasetPath, who: Caller) -> ForgetResult:
        return service.accounts.delete_dataset(who, name)

    @router.get("/datasets/{name}/grants", tags=["datasets"], summary="Who else may use it.")
    def list_grants(name: DatasetPath, who: Caller) -> list[GrantInfo]:
        return service.accounts.grants(who, name)

    @router.put("/datasets/{name}/grants/{user}", tags=["datasets"], summary="Set a user's permissions.")
    def grant(name: DatasetPath, user: UserPath, body: GrantRequest, who: Caller) -> GrantInfo:
        return service.accounts.grant(who, name, user, body.permissions)

    @router.delete("/datasets/{name}/grants/{user}", tags=["datasets"], summary="Revoke a grant.")
    def revoke(name: DatasetPath, user: UserPath, who: Caller) -> GrantInfo:
        return service.accounts.grant(who, name, user, [])
