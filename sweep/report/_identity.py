"""Report section 1: what was run, on what data, by which code."""

from __future__ import annotations

from sweep._environment import git_commit, library_versions
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
        spec=manifest.spec,
        data=manifest.data,
        strategy=key.strategy,
        engine_version=manifest.engine_version,
        session_engine_versions=tuple(
            sorted({str(s.engine_version) for s in sessions if s.engine_version})
        ),
        root_seed=key.root_seed,
        session_environments=tuple({"session": s.id, **s.environment} for s in sessions),
        metrics=key.metrics or manifest.metric_options,
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
