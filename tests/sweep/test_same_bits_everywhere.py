"""Same inputs, same bits, under every CPU dispatch level this machine allows (invariant 8).

Each level runs ``tests/sweep/dispatch_probe.py`` in a child process: numpy's SIMD levels
switched off one by one (``NPY_DISABLE_CPU_FEATURES``: AVX-512, then AVX2/FMA3 too), numba
compiling for a generic x86-64 instead of the host (``NUMBA_CPU_NAME=generic``), glibc's
libm told the CPU has no FMA/AVX2 (``GLIBC_TUNABLES``: its exp/log/pow ifuncs then pick the
SSE2 variants) and OpenBLAS forced to a kernel without FMA (``OPENBLAS_CORETYPE``). The
workloads: the synthetic panel (with and without its open, high, low and volume), the
main job's grid slice with its walk-forward folds, ``sma_cross``, the ``xs_momentum``
position strategy with costs, the joint bootstrap's null summaries, the fixed normal
distribution and the report of one run folder. Every child must print the same digests as
the host.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _levels() -> dict[str, dict[str, str]]:
    from numpy._core._multiarray_umath import __cpu_features__ as features

    levels: dict[str, dict[str, str]] = {"host": {}}
    machine = os.uname().machine
    if machine == "x86_64":
        if features.get("AVX512F"):
            levels["numpy without AVX-512"] = {
                "NPY_DISABLE_CPU_FEATURES": "AVX512_SPR,AVX512_ICL,X86_V4"
            }
        if features.get("AVX2"):
            levels["numpy at its baseline"] = {
                "NPY_DISABLE_CPU_FEATURES": "AVX512_SPR,AVX512_ICL,X86_V4,X86_V3"
            }
        if features.get("FMA3"):
            levels["libm without FMA"] = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4"}
        levels["OpenBLAS Sandybridge kernel"] = {"OPENBLAS_CORETYPE": "Sandybridge"}
    levels["numba generic CPU"] = {"NUMBA_CPU_NAME": "generic"}
    return levels


def _probe(env: dict[str, str], run_dir: Path, cache: Path) -> dict[str, str]:
    child = {**os.environ, **env, "NUMBA_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "tests.sweep.dispatch_probe", str(run_dir)],
        cwd=ROOT,
        env=child,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split(" ", 1) for line in proc.stdout.splitlines() if line.strip()]
    return {name: rest for name, rest in lines}


@pytest.mark.slow
def test_every_dispatch_level_gives_the_hosts_bits(tmp_path):
    from tests.sweep.dispatch_probe import make_run

    run_dir = tmp_path / "run"
    make_run(str(run_dir))
    results = {
        name: _probe(env, run_dir, tmp_path / f"numba-{i}")
        for i, (name, env) in enumerate(_levels().items())
    }
    host = results["host"]
    assert set(host) == {"panel", "momentum", "sma_cross", "xs", "stops", "normal", "report"}
    for name, got in results.items():
        for key in ("panel", "momentum", "sma_cross", "xs", "stops", "normal"):
            assert got[key] == host[key], f"{name}: {key} differs from the host"
        digest, dims = got["report"].split(" ", 1)
        host_digest, host_dims = host["report"].split(" ", 1)
        assert digest == host_digest, f"{name}: the report differs from the host's"
        for field, value in json.loads(dims).items():
            reference = json.loads(host_dims)[field]
            if isinstance(value, float) and isinstance(reference, float):
                assert math.isclose(value, reference, rel_tol=1e-5), (name, field)


_FMA_CHECK = """
import importlib, pkgutil, sys
import numpy as np
import stats, strategies
from sweep import evaluate_batch, resolve, spec_from_dict
sys.path.insert(0, ".")
from tests.sweep.dispatch_probe import MAIN_JOB_SLICE, POSITION, SMA_CROSS, STOPS
for doc in (MAIN_JOB_SLICE, SMA_CROSS, POSITION, STOPS):
    sweep = resolve(spec_from_dict(doc))
    evaluate_batch(sweep, np.arange(len(sweep.grid), dtype=np.int64))
stats.norm_cdf(0.3); stats.norm_ppf(0.3)
checked = 0
for package in (stats, strategies):
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, obj in sorted(vars(module).items()):
            if hasattr(obj, "inspect_asm") and getattr(obj, "signatures", None):
                for asm in obj.inspect_asm().values():
                    if any(op in asm for op in ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub")):
                        print("FMA in", info.name, name)
                checked += 1
print("checked", checked)
"""


def test_no_compiled_kernel_holds_an_fma(tmp_path):
    # LLVM contracts a*b + c into an FMA only under fast-math; no kernel behind a result may
    # hold one even when compiled for a host that has FMA. Compiled fresh (a cached kernel
    # cannot be inspected) after the main job's slice, sma_cross and a position strategy ran.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_CPU_NAME", None)
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _FMA_CHECK],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FMA in" not in proc.stdout, proc.stdout
    checked = int(proc.stdout.split("checked")[-1])
    assert checked >= 10, proc.stdout
