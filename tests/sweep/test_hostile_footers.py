"""A malformed footer in one validly named part (hostile review M3, M4, H2).

A part's parquet footer carries its null summary, fold summary, environment record and row
digest. A forger (or a bit-flip in the footer, the part re-written under its new sha256 name)
must not crash a reader nor make the folder unreadable: the part check
(:meth:`RunStore.check_part`, which ``verify``, ``status``, ``resume`` and the audits all use)
validates every footer field against the run and the part's rows, so such a part is bad,
named with a one-line reason, left out and recomputed by ``resume``.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sweep import fold_table, results_hash, run_sweep, spec_from_dict
from sweep.errors import RunFolderError
from sweep.store._fold_summary import FOLDS_KEY, decode_folds, encode_folds
from sweep.store._null_summary import SUMMARY_KEY, decode_summary, encode_summary
from sweep.store._part_environment import ENVIRONMENT_KEY, decode_environment
from sweep.store._row_set_hash import DIGEST_KEY
from sweep.store._run_store import RunStore
from tests.helpers import read_part_table, rewrite_part, run_main, small_spec_dict

VALIDATION = {
    "walk_forward": {"train": "1y", "test": "3m", "purge": "5d"},
    "cpcv": {"groups": 6, "test_groups": 2, "purge": 3, "embargo": 2},
}
#: Folds of VALIDATION on the small spec's data: 12 walk-forward windows, C(6, 2) splits.
FOLDS = 27


def _doc(**overrides: object) -> dict[str, object]:
    doc = small_spec_dict(validation=VALIDATION, **overrides)
    doc["metrics"] = {**doc["metrics"], "benchmark": "buy_and_hold"}
    return doc


@pytest.fixture(scope="module")
def done_run(tmp_path_factory) -> tuple[Path, str]:
    """A complete run with bootstrap (20 reps) and 27 folds: 60 configs in parts of 25, 25, 10."""
    run = tmp_path_factory.mktemp("footers") / "run"
    summary = run_sweep(spec_from_dict(_doc()), run, batch_size=25, progress=False)
    return run, summary.table_hash


def _smallest(run: Path) -> Path:
    """The part of 10 rows (grid indices 50..59)."""
    return min((run / "parts").glob("part-*.parquet"), key=lambda p: pq.read_metadata(p).num_rows)


def _footer(run: Path) -> dict[bytes, bytes]:
    return dict(read_part_table(_smallest(run), ["grid_index"]).schema.metadata)


def _doctored(done_run: tuple[Path, str], tmp_path: Path, key: bytes, value: bytes | None):
    """A copy of the run whose smallest part has ``key`` set to ``value`` (None: removed).

    The part is re-written under the sha256 of its new bytes, so its name still matches.
    Returns the run folder and the doctored part's name.
    """
    run = tmp_path / "run"
    shutil.copytree(done_run[0], run)
    victim = _smallest(run)
    table = read_part_table(victim)
    meta = {k: v for k, v in table.schema.metadata.items() if k != key}
    if value is not None:
        meta[key] = value
    return run, rewrite_part(victim, table.replace_schema_metadata(meta)).name


def _folds_doc(footer: dict[bytes, bytes]) -> dict[str, list[object]]:
    doc: dict[str, list[object]] = json.loads(footer[FOLDS_KEY])
    return doc


def _with_folds(footer: dict[bytes, bytes], **changes: object) -> bytes:
    return json.dumps({**_folds_doc(footer), **changes}).encode()


def _first_index(footer: dict[bytes, bytes], value: int) -> bytes:
    index = list(_folds_doc(footer)["index"])
    index[0] = value
    return _with_folds(footer, index=index)


def _environment(footer: dict[bytes, bytes], **changes: object) -> bytes:
    return json.dumps({**json.loads(footer[ENVIRONMENT_KEY]), **changes}).encode()


def _one_fold(footer: dict[bytes, bytes]) -> bytes:
    doc = _folds_doc(footer)
    return json.dumps({"value": doc["value"][:1], "index": doc["index"][:1]}).encode()


#: The hostile review's cases: (key, value made from the part's own footer, reason words).
CASES = {
    "null summary not base64": (SUMMARY_KEY, lambda f: b"garbage", "null summary"),
    "fold summary not JSON": (FOLDS_KEY, lambda f: b"{", "fold summary"),
    "fold summary bad hex": (
        FOLDS_KEY,
        lambda f: _with_folds(f, value=["zz"] * FOLDS),
        "fold summary",
    ),
    "fold index 10^6": (FOLDS_KEY, lambda f: _first_index(f, 10**6), "fold summary"),
    "fold index 10^30": (FOLDS_KEY, lambda f: _first_index(f, 10**30), "fold summary"),
    "fold summary of one fold": (FOLDS_KEY, _one_fold, "27 validation folds"),
    "environment nested 50,000 deep": (
        ENVIRONMENT_KEY,
        lambda f: b"[" * 50_000 + b"]" * 50_000,
        "environment record",
    ),
    "environment not JSON": (ENVIRONMENT_KEY, lambda f: b"{", "environment record"),
    "environment a list": (ENVIRONMENT_KEY, lambda f: b"[1]", "environment record"),
    "environment format 9": (ENVIRONMENT_KEY, lambda f: _environment(f, format=9), "format"),
    "environment versions a list": (
        ENVIRONMENT_KEY,
        lambda f: _environment(f, versions=["numpy", "2.0"]),
        "versions",
    ),
}


def _case(done_run, tmp_path, case: str) -> tuple[Path, str, str]:
    key, make, words = CASES[case]
    run, name = _doctored(done_run, tmp_path, key, make(_footer(done_run[0])))
    return run, name, words


def _clean(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err, out + err
    assert "Error:" not in err.replace("RunFolderError", ""), err


@pytest.mark.parametrize("case", list(CASES))
def test_verify_and_status_name_the_part_with_a_one_line_reason(
    done_run, tmp_path, monkeypatch, capsys, case
):
    run, name, words = _case(done_run, tmp_path, case)
    code, out, err = run_main(monkeypatch, capsys, "verify", run, "--executor", "local")
    _clean(code, out, err)
    assert code == 1, out + err
    [line] = [s for s in err.splitlines() if s.startswith("BAD PART")]
    assert line.startswith(f"BAD PART parts/{name}: footer: ") and words in line, line
    assert "parts verified: 2 good, 1 bad" in out

    code, out, err = run_main(monkeypatch, capsys, "status", run, "--json", "--executor", "local")
    _clean(code, out, err)
    assert code == 0, err
    info = json.loads(out)
    assert [b["name"] for b in info["bad_parts"]] == [name]
    assert info["done"] == 50


@pytest.mark.parametrize(
    "case", ["null summary not base64", "fold index 10^30", "environment a list"]
)
def test_results_folds_and_reproduce_leave_the_part_out(
    done_run, tmp_path, monkeypatch, capsys, case
):
    run, name, _ = _case(done_run, tmp_path, case)
    code, out, err = run_main(
        monkeypatch, capsys, "results", run, "--folds", "--format", "csv", "--executor", "local"
    )
    _clean(code, out, err)
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1 + FOLDS

    # --parts 3: the smallest parts, the doctored one first, are re-computed whole
    code, out, err = run_main(
        monkeypatch, capsys, "reproduce", run, "--sample", "4", "--parts", "3"
    )
    _clean(code, out, err)
    assert code == 0, out + err
    assert "left out:     1 bad part(s)" in out and name not in out


def test_the_report_builds_from_the_good_parts_and_names_the_bad_ones(
    done_run, tmp_path, monkeypatch, capsys
):
    run, folds_bad, _ = _case(done_run, tmp_path, "fold summary not JSON")
    other = max((run / "parts").glob("part-*.parquet"), key=lambda p: p.name != folds_bad)
    table = read_part_table(other)
    environment = _environment(dict(table.schema.metadata), format=9)
    meta = {**table.schema.metadata, ENVIRONMENT_KEY: environment}
    environment_bad = rewrite_part(other, table.replace_schema_metadata(meta)).name
    code, out, err = run_main(
        monkeypatch, capsys, "report", run, "--quiet", "--out", tmp_path / "report",
        "--executor", "local",
    )  # fmt: skip
    _clean(code, out, err)
    assert code == 0, out + err
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "3 verified: 1 good, 2 bad" in markdown
    for name, words in (
        (folds_bad, "fold summary: not JSON"),
        (environment_bad, "environment record: expected format 1, got 9"),
    ):
        [line] = [s for s in markdown.splitlines() if name in s]
        assert f"footer: {words}" in line, line


@pytest.mark.parametrize(
    "case", ["null summary not base64", "fold summary of one fold", "environment not JSON"]
)
def test_resume_quarantines_the_part_and_recomputes_its_configs(
    done_run, tmp_path, monkeypatch, capsys, case
):
    run, name, _ = _case(done_run, tmp_path, case)
    code, out, err = run_main(monkeypatch, capsys, "resume", run, "--quiet", "--executor", "local")
    _clean(code, out, err)
    assert code == 0, out + err
    assert (run / "quarantine" / name).exists()
    assert results_hash(run) == done_run[1]


# --- H2: each footer field checked against the run and the part's rows -------------------
def _summary_with(footer: dict[bytes, bytes], change) -> bytes:  # type: ignore[no-untyped-def]
    summary = decode_summary(footer[SUMMARY_KEY])
    return encode_summary(change(summary))


def _null(**fields):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return lambda s: replace(s, **fields)


def _null_reps(s):  # type: ignore[no-untyped-def]
    return _null(
        reality_check=s.reality_check[:10],
        spa=s.spa[:10],
        null_sharpe=s.null_sharpe[:10],
        top_value=s.top_value[:10],
        top_index=s.top_index[:10],
    )(s)


def _null_top_k(s):  # type: ignore[no-untyped-def]
    return _null(top_value=s.top_value[:, :3], top_index=s.top_index[:, :3])(s)


def _null_index(value: int):  # type: ignore[no-untyped-def]
    def change(s):  # type: ignore[no-untyped-def]
        index = s.top_index.copy()
        index[0, 0] = value
        return _null(top_index=index)(s)

    return change


def _null_repeat(s):  # type: ignore[no-untyped-def]
    index = s.top_index.copy()
    index[0, 1] = index[0, 0]
    return _null(top_index=index)(s)


def _extra_bytes(footer: dict[bytes, bytes]) -> bytes:
    return base64.b64encode(base64.b64decode(footer[SUMMARY_KEY]) + b"\0" * 8)


def _header(footer: dict[bytes, bytes], **changes: object) -> bytes:
    raw = base64.b64decode(footer[SUMMARY_KEY])
    line, _, body = raw.partition(b"\n")
    header = {**json.loads(line), **changes}
    return base64.b64encode(json.dumps(header, sort_keys=True).encode() + b"\n" + body)


#: (key, value from the part's footer, reason words): structurally sound, wrong for the part.
MISFITS = {
    "null reps not the run's": (
        SUMMARY_KEY,
        lambda f: _summary_with(f, _null_reps),
        "10 replications, the run draws 20",
    ),
    "null top_k not the run's": (
        SUMMARY_KEY,
        lambda f: _summary_with(f, _null_top_k),
        "top 3, the run keeps 32",
    ),
    "null n_configs over the rows": (
        SUMMARY_KEY,
        lambda f: _summary_with(f, _null(n_configs=11)),
        "11 configs",
    ),
    "null top index outside the part": (
        SUMMARY_KEY,
        lambda f: _summary_with(f, _null_index(3)),
        "grid_index 3",
    ),
    "null top index repeated": (
        SUMMARY_KEY,
        lambda f: _summary_with(f, _null_repeat),
        "twice",
    ),
    "null arrays longer than the header says": (SUMMARY_KEY, _extra_bytes, "bytes"),
    "null header format 2": (SUMMARY_KEY, lambda f: _header(f, format=2), "format"),
    "null header reps a bool": (SUMMARY_KEY, lambda f: _header(f, n_configs=True), "n_configs"),
    "null summary missing": (SUMMARY_KEY, lambda f: None, "no null summary"),
    "fold index of another part": (FOLDS_KEY, lambda f: _first_index(f, 0), "grid_index 0"),
    "fold index -1 with a value": (FOLDS_KEY, lambda f: _first_index(f, -1), "-1"),
    "fold value NaN": (
        FOLDS_KEY,
        lambda f: _with_folds(f, value=["nan", *_folds_doc(f)["value"][1:]]),
        "NaN",
    ),
    "fold summary missing": (FOLDS_KEY, lambda f: None, "no fold summary"),
    "fold summary extra key": (FOLDS_KEY, lambda f: _with_folds(f, extra=[]), "keys"),
    "row digest not JSON": (DIGEST_KEY, lambda f: b"{", "row digest"),
    "row digest lanes cut short": (
        DIGEST_KEY,
        lambda f: json.dumps({**json.loads(f[DIGEST_KEY]), "lanes": "AAAA"}).encode(),
        "lanes",
    ),
    "row digest partial digest not hex": (
        DIGEST_KEY,
        lambda f: json.dumps(
            {**json.loads(f[DIGEST_KEY]), "partial_digest": "zz" * 32 * 10}
        ).encode(),
        "partial_digest",
    ),
}


@pytest.mark.parametrize("case", list(MISFITS))
def test_a_footer_that_does_not_fit_its_part_makes_the_part_bad(done_run, tmp_path, case):
    key, make, words = MISFITS[case]
    run, name = _doctored(done_run, tmp_path, key, make(_footer(done_run[0])))
    checks = {c.name: c for c in RunStore(run).verify_parts()}
    assert [n for n, c in checks.items() if not c.ok] == [name]
    reason = checks[name].reason
    assert reason.startswith("footer: ") and words in reason and "\n" not in reason, reason


def test_every_genuine_part_passes_with_failed_configs_and_a_part_of_failures_only(tmp_path):
    """Failed rows are in no summary; a part whose every config failed has no fold summary."""
    doc = _doc(strategy={"name": "tests.strategies_for_tests:Raising"})
    doc["grid"] = {"lookback": [13, 26, 5, 21, 39, 45], "band": [0.0, 0.01]}
    run = tmp_path / "run"
    summary = run_sweep(spec_from_dict(doc), run, batch_size=4, progress=False)
    assert summary.failed == 6
    store = RunStore(run)
    checks = store.verify_parts()
    assert len(checks) == 3 and all(c.ok for c in checks), [c.reason for c in checks]
    footers = [store.read_part_schema(c.name).metadata for c in checks]
    assert sum(FOLDS_KEY not in f for f in footers) == 1  # the part of lookbacks 13 and 26
    # that part has no best config to offer: the others' fold summaries still make the table
    assert len(fold_table(run)) == FOLDS


# --- the check itself, on arrays (what the CLI tests cannot reach) ------------------------
def test_a_summary_index_of_a_failed_row_is_refused(done_run):
    from sweep.store._part_footer import FooterExpectations, check_footer

    footer = _footer(done_run[0])
    index = np.arange(50, 60, dtype=np.int64)
    expect = FooterExpectations(reps=20, top_k=32, folds=FOLDS)
    check_footer(footer, index, lambda: np.ones(10, dtype=bool), expect)  # as written
    # one of the configs the fold summary chose failed (the null summary then counts too many)
    chosen = int(decode_folds(footer[FOLDS_KEY]).index[0])
    failed = index == chosen
    with pytest.raises(RunFolderError, match="counts 10 configs, the part holds 9"):
        check_footer(footer, index, lambda: ~failed, expect)
    folds_only = {FOLDS_KEY: footer[FOLDS_KEY]}
    no_bootstrap = FooterExpectations(reps=0, top_k=32, folds=FOLDS)
    message = f"names grid_index {chosen}, a config of the part that failed"
    with pytest.raises(RunFolderError, match=message):
        check_footer(folds_only, index, lambda: ~failed, no_bootstrap)
    with pytest.raises(RunFolderError, match="none of the part's configs succeeded"):
        check_footer(folds_only, index, lambda: np.zeros(10, dtype=bool), no_bootstrap)


def test_the_run_settings_decide_which_summaries_a_part_carries(done_run):
    from sweep.store._part_footer import FooterExpectations, check_footer

    footer = _footer(done_run[0])
    index = np.arange(50, 60, dtype=np.int64)

    def ok() -> np.ndarray:
        return np.ones(10, dtype=bool)

    with pytest.raises(RunFolderError, match="draws no bootstrap"):
        check_footer(footer, index, ok, FooterExpectations(reps=0, top_k=32, folds=FOLDS))
    with pytest.raises(RunFolderError, match="no validation folds"):
        check_footer(footer, index, ok, FooterExpectations(reps=20, top_k=32, folds=0))
    # the fold count unknown (a manifest without the data's shape): the rest is still checked
    check_footer(footer, index, ok, FooterExpectations(reps=20, top_k=32, folds=None))


# --- the decoders: a RunFolderError naming the field, never a raw error -------------------
@pytest.mark.parametrize(
    "blob",
    [
        b"garbage",
        base64.b64encode(b"not json\n"),
        base64.b64encode(b"[1]\n"),
        base64.b64encode(b'{"format": 1}\n'),
        base64.b64encode(b'{"format":1,"n_configs":-1,"reps":1,"top_k":1}\n' + b"\0" * 40),
        base64.b64encode(b'{"format":1,"n_configs":1,"reps":1,"top_k":1}\n' + b"\0" * 39),
        base64.b64encode(b'{"format":1,"n_configs":1,"reps":1,"top_k":1}'),
        base64.b64encode(b"[" * 50_000 + b"\n"),
        base64.b64encode(b'{"format":1,"n_configs":1,"reps":1e999,"top_k":1}\n'),
    ],
)
def test_decode_summary_refuses_malformed_blobs(blob):
    with pytest.raises(RunFolderError, match="null summary"):
        decode_summary(blob)


@pytest.mark.parametrize(
    "blob",
    [
        b"{",
        b"[]",
        b"[" * 50_000 + b"]" * 50_000,
        b'{"value": ["zz"], "index": [0]}',
        b'{"value": [1.0], "index": [0]}',
        b'{"value": ["0x1p+0"], "index": [1e30]}',
        b'{"value": ["0x1p+0"], "index": [' + b"1" * 30 + b"]}",
        b'{"value": ["0x1p+0"], "index": [' + b"1" * 5000 + b"]}",
        b'{"value": ["0x1p+0"], "index": [true]}',
        b'{"value": ["0x1p+0"], "index": [-2]}',
        b'{"value": ["0x1p+0", "0x1p+0"], "index": [0]}',
        b'{"value": ["nan"], "index": [0]}',
        b'{"value": ["0x1p+0"], "index": [-1]}',
        b"\xff",
    ],
)
def test_decode_folds_refuses_malformed_blobs(blob):
    with pytest.raises(RunFolderError, match="fold summary"):
        decode_folds(blob)


def test_decode_folds_reads_what_encode_folds_writes(done_run):
    blob = _footer(done_run[0])[FOLDS_KEY]
    summary = decode_folds(blob)
    assert summary.value.shape == summary.index.shape == (FOLDS,)
    assert encode_folds(summary) == blob


@pytest.mark.parametrize(
    "blob",
    [
        b"{",
        b"[1]",
        b"[" * 50_000 + b"]" * 50_000,
        b'{"format": 9}',
        b'{"format": true, "versions": {}, "machine": "x86_64"}',
        b'{"format": 1, "versions": ["numpy"], "machine": "x86_64"}',
        b'{"format": 1, "versions": {"numpy": 2}, "machine": "x86_64"}',
        b'{"format": 1, "versions": {"numpy": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"format": 1, "versions": {}, "machine": ["x86_64"]}',
        b'{"format": 1, "versions": {}, "machine": "x", "numpy_simd": {"found": "AVX"}}',
        b'{"format": 1, "versions": {}, "machine": "x", "glibc": 2}',
        b'{"format": 1, "versions": {}, "machine": "' + b"x" * 70_000 + b'"}',
    ],
)
def test_decode_environment_refuses_malformed_records(blob):
    with pytest.raises(RunFolderError, match="environment record"):
        decode_environment(blob)


@pytest.mark.parametrize(
    "blob",
    [
        b"{",
        b"[" * 50_000 + b"]" * 50_000,
        b'{"version": "raysweep-table-v2"}',
    ],
)
def test_decode_digest_refuses_malformed_digests(blob):
    from sweep.store._row_set_hash import decode_digest

    with pytest.raises(RunFolderError, match="row digest"):
        decode_digest(blob)
