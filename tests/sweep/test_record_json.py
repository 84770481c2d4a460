"""The run record, status, preflight and forecast serialise by the one rule (common._serial).

Recorded documents (sessions as raysweep-run-v1 and -v2 folders hold them) read back and
write again byte for byte; a damaged one is refused naming where; and the few hand-written
serialisations are listed, each with the reason its format needs it.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from sweep.common._serial import JSONRecord, RecordFormatError, from_json
from sweep.errors import RunFolderError
from sweep.plan._forecast import Scaling, WallPrediction
from sweep.plan._preflight import AxisSize, Measured, Prediction, SweepPlan
from sweep.runner._status import LiveRate, RunStatus, Verification
from sweep.spec._provenance import DataOrigin, Provenance, StrategyOrigin
from sweep.store._record import (
    ExecutorChoice,
    ExecutorInfo,
    LockInfo,
    Manifest,
    PartInfo,
    PilotTask,
    Plan,
    Session,
)

ROOT = Path(__file__).resolve().parents[2]

#: A session as a raysweep-run-v1 manifest records it (a main-job run, in-process).
LOCAL_SESSION = {
    "id": 1,
    "start": "2026-12-02T20:31:42.781+00:00",
    "end": "2026-12-02T20:31:49.063+00:00",
    "host": "vm",
    "pid": 16594,
    "engine_version": "0.1.0",
    "executor": "auto",
    "environment": {"git_commit": None, "versions": {"python": "3.11.7"}, "platform": "Linux"},
    "status": "completed",
    "took_over_lock": None,
    "executor_choice": {
        "requested": "auto",
        "chosen": "local",
        "reason": "predicted 2.99 s in-process vs 13.6 s on a local Ray cluster of 2 workers",
        "configs": 9327,
        "local_seconds": 2.994943778906596,
        "ray_seconds": 13.555134813199036,
        "ray_workers": 2,
        "crossover_configs": 76895,
        "assumptions": ["linear scaling up to 2 workers"],
    },
    "plan": {
        "batch_size": 2332,
        "source": "auto (amortization law)",
        "overhead_seconds": 0.028831461872869113,
        "transport_seconds": 6.423987360903993e-05,
        "probe_seconds": 7.0540900014748335e-06,
        "fixed_in_task_seconds": 0.0,
        "driver_write_seconds": 0.028767221999260073,
        "per_config_seconds": 0.00030873999479094237,
        "target_efficiency": 0.99,
        "law_batch": 9245.043640513068,
        "clamps": ["load balance: at most 2332 configs so 9327 configs make at least 4 tasks"],
        "warmup_configs": 1,
        "pilot": [
            {
                "configs": 32.0,
                "compute_seconds": 0.01158577400019567,
                "round_trip_overhead_seconds": 3.951591679651756e-05,
                "write_seconds": 0.0061300180004764115,
            }
        ],
        "planning_seconds": 0.2901634429999831,
    },
    "executor_info": {"kind": "local", "workers": 1, "nodes": 1, "host": "vm"},
    "configs_computed": 10000,
    "configs_failed": 0,
    "quarantined": [],
    "wall_seconds": 6.2,
    "table_hash": "7b1ba54a3318df06e00021eeb17332a4486e8761c1506a32f87e93b6c139d420",
}

#: A Ray session that has no pilot (a small sweep): NaN floats recorded as null.
RAY_SESSION = {
    "id": 2,
    "start": "2026-12-02T20:31:20.221+00:00",
    "end": None,
    "host": "vm",
    "pid": 16594,
    "engine_version": "0.1.0",
    "executor": "ray",
    "environment": {},
    "status": "running",
    "took_over_lock": {"pid": 12, "host": "vm", "since": "2026-12-02T20:30:00+00:00"},
    "plan": {
        "batch_size": 8,
        "source": "small sweep (no pilot)",
        "overhead_seconds": None,
        "transport_seconds": None,
        "probe_seconds": None,
        "fixed_in_task_seconds": None,
        "driver_write_seconds": None,
        "per_config_seconds": None,
        "target_efficiency": None,
        "law_batch": None,
        "clamps": [],
        "warmup_configs": 0,
        "pilot": [],
        "planning_seconds": 8.387399975617882e-05,
    },
    "executor_info": {
        "kind": "ray",
        "workers": 2,
        "nodes": 1,
        "node_addresses": ["127.0.0.1"],
        "address": "local",
        "ray_version": "2.60.0",
    },
}


@pytest.mark.parametrize("doc", [LOCAL_SESSION, RAY_SESSION], ids=["local", "ray"])
def test_a_recorded_session_reads_and_writes_back_byte_for_byte(doc):
    session = Session.from_json(doc)
    assert json.dumps(session.to_json(), indent=2) == json.dumps(doc, indent=2)
    assert isinstance(session.executor_info, ExecutorInfo) and isinstance(session.plan, Plan)


def test_nan_is_written_as_null_and_read_back_as_nan():
    session = Session.from_json(RAY_SESSION)
    assert session.plan is not None and math.isnan(session.plan.per_config_seconds)
    assert session.to_json()["plan"]["per_config_seconds"] is None
    assert session.executor_choice is None and "executor_choice" not in session.to_json()


def test_a_pilot_task_is_recorded_with_float_counts():
    assert PilotTask(64, 1, 0, 0).to_json() == {
        "configs": 64.0,
        "compute_seconds": 1.0,
        "round_trip_overhead_seconds": 0.0,
        "write_seconds": 0.0,
    }
    assert json.dumps(PilotTask(64, 1, 0, 0).to_json()).startswith('{"configs": 64.0,')


def test_provenance_and_lock_keep_their_keys():
    prov = Provenance(
        DataOrigin("memory", None, "in-memory DataFrame", "data/panel.parquet"),
        StrategyOrigin("mine", "1", None, "__main__:Mine"),
    )
    assert list(prov.to_json()["data"]) == ["kind", "location", "description", "copy"]
    assert Provenance.from_json(prov.to_json()) == prov
    lock = LockInfo(pid=3, host="h", token="t")
    assert lock.to_bytes() == b'{"pid": 3, "host": "h", "token": "t"}'
    assert LockInfo.from_bytes(lock.to_bytes()) == lock
    assert PartInfo("p", False, "bad", 3).to_json() == {"name": "p", "reason": "bad"}


def _manifest_doc() -> dict:
    return {
        "format": "raysweep-run-v1",
        "engine_version": "0.1.0",
        "created": "2026-12-02T20:31:20.221+00:00",
        "identity": {"spec_hash": "a" * 64, "data_fingerprint": "b" * 64},
        "spec": {"name": "x"},
        "data": {},
        "grid": {"size": 1, "axes": [{"name": "lookback", "size": 1}]},
        "sessions": [json.loads(json.dumps(LOCAL_SESSION))],
    }


def test_a_manifest_records_its_table_hash_version_where_it_has_one():
    old = _manifest_doc()
    assert Manifest.from_json(old).hash_version == "raysweep-table-v1"
    assert "table_hash_version" not in Manifest.from_json(old).to_json()
    new = {k: v for k, v in old.items() if k != "sessions"}
    new["results_schema"] = [["config_id", "string"]]
    new["table_hash_version"] = "raysweep-table-v2"
    new["sessions"] = old["sessions"]
    manifest = Manifest.from_json(new)
    assert manifest.hash_version == "raysweep-table-v2"
    assert json.dumps(manifest.to_json()) == json.dumps(new)  # keys in their recorded order


def test_a_manifest_with_a_damaged_session_is_refused_naming_where():
    doc = _manifest_doc()
    assert Manifest.from_json(doc).to_json() == doc
    doc["sessions"][0]["plan"]["batch_size"] = "many"
    with pytest.raises(RunFolderError, match=r"sessions\[0\]\.plan\.batch_size: expected int"):
        Manifest.from_json(doc, "runs/x")
    doc = _manifest_doc()
    doc["provenance"] = {"data": {"kind": "tape"}, "strategy": {}}
    with pytest.raises(RunFolderError, match=r"runs/x: manifest.json's provenance\.data"):
        Manifest.from_json(doc, "runs/x")


def test_status_verify_and_plan_documents():
    live = LiveRate(2, "ray", 10, 1.5, math.nan, math.inf)
    assert live.to_json() == {
        "session": 2,
        "executor": "ray",
        "configs": 10,
        "seconds": 1.5,
        "configs_per_second": None,
        "seconds_left": None,
    }
    status = RunStatus(
        "r", "n", "h", 2, 1, 0, 1, 1, [PartInfo("p", False, "bad")], (), None, None, None, live
    )
    doc = status.to_json()
    assert list(doc)[-6:] == [
        "table_hash",
        "lock",
        "live",
        "environments",
        "table_hash_version",
        "recorded",
    ]
    assert doc["bad_parts"][0]["name"] == "p"
    verify = Verification(1, [], [PartInfo("t", False, "x")], 1, 2, None, None)
    assert verify.to_json()["bad_telemetry"] == [{"name": "t", "reason": "x"}]
    assert list(verify.to_json())[-5:] == [
        "environments",
        "table_hash_version",
        "digest_mismatches",
        "fold_summary_hash",
        "recorded",
    ]
    wall = WallPrediction(10, 1, 10, 1, 0.5, 1.0, 0.5)
    plan = Plan(10, "auto")
    info = ExecutorInfo("local", 1, 1, host="vm")
    measured = Measured("local", 1, 0.0, 0.01, math.nan, 10, 10, plan, info)
    sweep_plan = SweepPlan(
        name="n",
        configs=10,
        axes=(AxisSize("lookback", 10),),
        local=measured,
        cluster=None,
        cluster_note="not measured (--executor local)",
        scaling=Scaling(),
        predictions=(Prediction("local", wall),),
        crossover_configs=None,
        choice=ExecutorChoice("auto", "local", "why"),
        assumptions=("a",),
    )
    doc = sweep_plan.to_json()
    assert list(doc)[:4] == ["format", "name", "configs", "axes"]
    assert doc["format"] == "raysweep-plan-v2" and doc["axes"] == [{"name": "lookback", "size": 10}]
    assert doc["local"]["overhead_seconds"] is None and doc["local"]["describe"] == info.to_json()
    assert doc["predictions"] == [{"executor": "local", **wall.to_json()}]
    assert doc["scaling"] == {"sigma": 0.0, "kappa": 0.0, "source": Scaling().source}


def test_a_wrong_type_is_refused_naming_the_record():
    with pytest.raises(RecordFormatError, match=r"ExecutorInfo\.workers: expected int"):
        ExecutorInfo.from_json({"kind": "local", "workers": "one", "nodes": 1})
    assert from_json(ExecutorInfo, {"kind": "local", "workers": 1, "nodes": 1}).host is None


# --- the hand-written serialisations, each with its reason --------------------------------
HAND_WRITTEN = {
    "sweep/store/_record.py": {
        "RunKey": {"to_json", "from_json"},
        "GridRecord": {"to_json", "from_json"},
        "Manifest": {"to_json", "from_json", "from_bytes"},
        "LockInfo": {"from_bytes"},
    },
    "sweep/report/_build.py": {"Report": {"to_json"}},
    "sweep/store/_part_environment.py": {
        "PartEnvironment": {"to_json", "from_json"},
        "EnvironmentUse": {"to_json", "from_json"},
    },
    "sweep/runner/_environment_check.py": {"EnvironmentChange": {"to_json"}},
}
_METHODS = {"to_json", "from_json", "from_bytes"}


def _hand_written() -> dict[str, dict[str, set[str]]]:
    found: dict[str, dict[str, set[str]]] = {}
    for path in sorted((ROOT / "sweep").rglob("*.py")):
        if path.name == "_serial.py":  # the rule itself (JSONRecord's methods)
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in _METHODS:
                    rel = str(path.relative_to(ROOT))
                    found.setdefault(rel, {}).setdefault(node.name, set()).add(item.name)
    return found


def _reason_above(path: Path, cls: str) -> list[str]:
    """The ``# Hand-written:`` comments inside class ``cls``."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls)
    body = text.splitlines()[node.lineno - 1 : node.end_lineno]
    return [line.strip() for line in body if line.strip().startswith("# Hand-written:")]


def test_only_these_records_have_a_hand_written_serialisation():
    assert _hand_written() == HAND_WRITTEN


@pytest.mark.parametrize(
    ("path", "cls"), [(p, c) for p, classes in HAND_WRITTEN.items() for c in classes]
)
def test_each_hand_written_serialisation_says_why(path, cls):
    reasons = _reason_above(ROOT / path, cls)
    assert reasons and all(len(r) > len("# Hand-written: ") + 20 for r in reasons), (path, cls)


def test_the_rule_records_are_json_records():
    for cls in (Session, Plan, ExecutorChoice, ExecutorInfo, PilotTask, LockInfo, PartInfo):
        assert issubclass(cls, JSONRecord), cls
    for cls in (Provenance, DataOrigin, StrategyOrigin, RunStatus, Verification, SweepPlan):
        assert issubclass(cls, JSONRecord), cls
