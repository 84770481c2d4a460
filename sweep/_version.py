"""The engine's version (kept in step with pyproject.toml by a test).

0.2.0: CPU-independent transcendentals and no BLAS on result paths; rows differ from 0.1.0's
in their last bits, so a 0.1.0 folder is not resumed silently.
0.3.0: ``omega`` (and so ``t_stat``, ``p_value`` and the null summaries) is the block
bootstrap's exact long-run standard deviation, not an estimate from the replications; rows
differ from 0.2.0's, so a 0.2.0 folder is not resumed silently.
"""

ENGINE_VERSION = "0.3.0"
