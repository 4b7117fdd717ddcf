"""One settings object, read once: environment variables ``KENNING_*``, then arguments.

Every field is documented in ``docs/settings.md`` (a test checks it). Nothing here runs at
import time: a ``Settings`` is built when a ``Kenning`` is.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .errors import ConfigurationError

__all__ = ["Settings"]


class Settings(BaseSettings):
    # ``extra="ignore"`` only for the environment (a KENNING_* variable of another version is no
    # error); a keyword argument that names no setting is refused by ``__init__``.
    model_config = SettingsConfigDict(
        env_prefix="KENNING_", extra="ignore", populate_by_name=True, validate_default=True
    )

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - _known_names())
        if unknown:
            raise ConfigurationError(_unknown_setting(unknown[0]), unknown=unknown)
        super().__init__(**values)

    # -- store -----------------------------------------------------------------------------
    db: str | None = Field(
        default=None,
        description="Store path or URL: a file path, sqlite:///path, :memory:, postgresql://…, or"
        " http(s)://… (a kenning server: see api_key).",
    )
    pool_size: int = Field(default=4, ge=1, description="PostgreSQL connection pool size.")
    hnsw_ef_search: int = Field(
        default=100, ge=1, le=1000,
        description="PostgreSQL: candidates each HNSW vector search keeps (pgvector's hnsw.ef_search);"
        " higher finds more of the exact nearest rows, and is slower.",
    )

    # -- models ----------------------------------------------------------------------------
    llm: str | None = Field(default=None, description="Chat model name; unset = offline extractor.")
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible base URL.")
    llm_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("llm_api_key", "KENNING_LLM_API_KEY", "OPENAI_API_KEY"),
        description="API key for the chat endpoint (falls back to OPENAI_API_KEY).",
    )
    llm_concurrency: int = Field(default=8, ge=1, description="Model calls in flight at once.")
    llm_timeout: float = Field(default=60.0, gt=0, description="Seconds before a model call times out.")
    llm_max_retries: int = Field(default=4, ge=0, description="Retries of a failed model call.")
    embedder: str = Field(
        default="hashing",
        description="hashing (offline default), openai:<model>, or local:<dir|package|hub id> "
        "(e.g. local:BAAI/bge-small-en-v1.5; downloaded on first use; :int8 after it runs the "
        "model's weights in 8 bits in onnxruntime).",
    )
    embedder_base_url: str | None = Field(default=None, description="Base URL for openai: embedders.")
    embedder_api_key: SecretStr | None = Field(default=None, description="API key for the embedder.")
    embedding_dimensions: int | None = Field(
        default=None, ge=8, description="Requested embedding size (openai: embedders that allow it)."
    )
    graph_model: str | None = Field(
        default=None,
        description="Custom entity and relation types for the LLM extractor, as JSON "
        '({"entity_types": [...], "relation_types": [...]}).',
    )
    prompt: str | None = Field(default=None, description="Extra instructions for the LLM extractor.")
    reranker: str | None = Field(
        default=None,
        description="Reorders recall's first hits: local:<dir|hub id> (a cross-encoder, e.g. "
        "local:cross-encoder/ms-marco-MiniLM-L-6-v2) or an http(s)://…/rerank endpoint; unset = off.",
    )
    reranker_model: str | None = Field(default=None, description="Model name sent to a /rerank endpoint.")
    reranker_api_key: SecretStr | None = Field(default=None, description="API key for the /rerank endpoint.")
    rerank_top_n: int = Field(default=30, ge=1, le=1000, description="Recall hits the reranker reorders.")

    # -- pipeline --------------------------------------------------------------------------
    chunk_size: int = Field(default=256, ge=16, description="Chunk size in tokens.")
    chunk_overlap: int = Field(default=32, ge=0, description="Tokens shared by neighbouring chunks.")
    single_valued_relations: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra relations that hold one value per subject at a time (comma list in env).",
    )
    processing_timeout: float = Field(
        default=60.0, ge=0,
        description="Seconds a 'processing' claim lasts unless its worker renews it (it does, every quarter"
        " of this, while it works); a claim whose worker process on this host is gone is taken over at once.",
    )
    max_content_chars: int = Field(
        default=5_000_000, ge=1, description="Largest accepted memory content, in characters."
    )
    entity_similarity: float = Field(
        default=0.92, gt=0, le=1, description="Embedding similarity that merges two entity names."
    )

    # -- server ----------------------------------------------------------------------------
    auth_failures_per_minute: float = Field(
        default=30, ge=0,
        description="Server: failed API-key attempts allowed per client address per minute "
        "(then 429, even for a right key, until it refills); 0 = no limit.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Server: addresses (or CIDR ranges) of reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto name the client (comma list in env; '*': any); empty = forwarded headers are "
        "ignored and the connecting address is the client that rate limits count.",
    )
    write_chars_per_minute: int = Field(
        default=10_000_000, ge=0,
        description="Server: characters of content one caller may write per minute (remember, "
        "add, update; then 429); 0 = no limit.",
    )

    # -- remote client (db = http(s)://… names a kenning server) ---------------------------
    api_key: SecretStr | None = Field(
        default=None, description="Remote client: the API key sent to the kenning server that db names.",
    )
    remote_timeout: float = Field(
        default=120.0, gt=0, description="Remote client: seconds to wait for the server's answer.",
    )
    remote_retries: int = Field(
        default=3, ge=0, le=10,
        description="Remote client: retries of a call whose connection failed (backing off from 0.25 s);"
        " a dropped connection is retried only for idempotent verbs.",
    )

    # -- lifecycle -------------------------------------------------------------------------
    decay: bool = Field(default=False, description="Apply time decay to recall scores.")
    half_life_days: float = Field(default=90.0, gt=0, description="Half-life for decay.")
    decay_basis: Literal["access", "creation"] = Field(
        default="access", description="Age measured from last access or from creation."
    )
    reference_access_count: int = Field(
        default=10, ge=1, description="Accesses at which decay is fully offset."
    )
    supersession_grace_days: float = Field(
        default=30.0, ge=0, description="Days a superseded memory stays searchable."
    )

    @field_validator("single_valued_relations", "trusted_proxies", mode="before")
    @classmethod
    def _split_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_smaller(cls, value: int, info) -> int:
        size = info.data.get("chunk_size")
        if size is not None and value >= size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return value


def _known_names() -> set[str]:
    """Every name a setting may be given by: its field name and its aliases."""
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        names.add(name)
        alias = field.validation_alias
        if isinstance(alias, str):
            names.add(alias)
        elif isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
    return names


def _unknown_setting(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(Settings.model_fields), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else " (docs/settings.md lists every setting)"
    return f"unknown setting {name!r}{hint}"
