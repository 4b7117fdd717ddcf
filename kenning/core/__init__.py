"""The engine: writing, reading and lifecycle parts composed by ``Engine``."""
