"""Report section 1: what was run, on what data, by which code."""

from __future__ import annotations

from sweep.common._environment import git_commit, library_versions
from sweep.report._load import RunData
from sweep.report._sections import CodeInfo, IdentitySection


def identity_section(run: RunData) -> IdentitySection:
    """Section 1 of the report: run name, hashes, spec, data, strategy, versions, grid.

    Parameters
    ----------
    run : RunData
        The run folder, read.

    Returns
    -------
    IdentitySection
        ``code`` describes the code building the report (git commit and library versions);
        the manifest records the engine version of each driver session.
    """
    manifest = run.manifest
    key = manifest.run_key
    sessions = manifest.sessions
    return IdentitySection(
        run_name=str(manifest.spec["name"]),
        run_dir=run.location,
        created=manifest.created,
        spec_hash=key.spec_hash,
        spec=dict(manifest.spec),
        data=dict(manifest.data),
        data_origin=_data_origin(run),
        strategy=key.strategy,
        strategy_origin=_strategy_origin(run),
        engine_version=manifest.engine_version,
        session_engine_versions=tuple(
            sorted({str(s.engine_version) for s in sessions if s.engine_version})
        ),
        root_seed=key.root_seed,
        session_environments=tuple({"session": s.id, **s.environment} for s in sessions),
        metrics=dict(key.metrics or manifest.metric_options),
        grid=manifest.grid,
        code=CodeInfo(
            git_commit=git_commit(),
            versions=library_versions(),
            note=(
                "git commit and versions are those of the code building this report; the run "
                "folder records the engine version of each driver session"
            ),
        ),
    )


def _data_origin(run: RunData) -> str | None:
    """Where the panel came from, as the run folder recorded it (None: not recorded)."""
    provenance = run.manifest.provenance
    if provenance is not None:
        return provenance.data.description
    source = run.manifest.data.get("source")
    return None if source is None else str(source)


def _strategy_origin(run: RunData) -> str | None:
    """How a later process finds the strategy again (None: not recorded)."""
    provenance = run.manifest.provenance
    if provenance is None:
        return None
    origin = provenance.strategy
    if origin.import_path is not None:
        return f"imported as {origin.import_path}"
    return f"defined in {origin.defined_in}, not importable: reopen from Python with the object"
