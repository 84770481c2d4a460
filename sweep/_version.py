"""The engine's version (kept in step with pyproject.toml by a test)."""

ENGINE_VERSION = "0.1.0"
