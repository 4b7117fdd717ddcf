"""Who may do what: API keys, users, per-dataset grants, the permission check, rate limits and
account administration, over the ``Kenning`` facade. The transports (``server``, ``mcp``,
``cli``) use this package and never the store's auth records directly."""

from .accounts import Accounts, DatasetInfo, DatasetLocks, GrantInfo, Permission
from .limits import Limiter
from .rules import LOCAL, Access, Principal, auth_store

__all__ = [
    "LOCAL",
    "Access",
    "Accounts",
    "DatasetInfo",
    "DatasetLocks",
    "GrantInfo",
    "Limiter",
    "Permission",
    "Principal",
    "auth_store",
]
