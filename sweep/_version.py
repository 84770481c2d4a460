"""The engine's version (kept in step with pyproject.toml by a test).

0.2.0: CPU-independent transcendentals and no BLAS on result paths; rows differ from 0.1.0's
in their last bits, so a 0.1.0 folder is not resumed silently.
"""

ENGINE_VERSION = "0.2.0"
