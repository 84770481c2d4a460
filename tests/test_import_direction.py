"""Imports run one way: ``sweep`` uses ``strategies`` and ``stats``; they never import it."""

import subprocess
import sys
import textwrap

import pytest

# A meta-path finder that refuses ``sweep`` and its submodules, installed before anything
# else is imported, then the package is imported and used a little.
_BLOCKED = textwrap.dedent(
    """
    import sys

    class BlockSweep:
        def find_spec(self, name, path=None, target=None):
            if name == "sweep" or name.startswith("sweep."):
                raise ImportError(f"blocked: {name} imported")
            return None

    sys.meta_path.insert(0, BlockSweep())
    """
)

_USE = {
    "stats": """
        import numpy as np
        import stats
        from stats import _validation
        x = np.random.default_rng(0).standard_normal((4, 50))
        assert stats.effective_number_of_trials(x).n == 4
        try:
            stats.holm_adjust(np.array([0.01, np.nan]))
        except stats.StatsInputError as exc:
            assert isinstance(exc, ValueError)
        else:
            raise AssertionError("no StatsInputError")
    """,
    "strategies": """
        import numpy as np
        import strategies
        from strategies import mean_reversion, momentum, sma_cross, trend_filter, wma_trend
        from strategies import xs_momentum
        for name in strategies.available_strategies():
            strategies.get_strategy(name)
        try:
            strategies.get_strategy("momentun")
        except strategies.StrategyError as exc:
            assert "Did you mean 'momentum'" in str(exc)
        else:
            raise AssertionError("no StrategyError")
        panel = strategies.Panel(
            np.arange(3).astype("datetime64[D]").astype("datetime64[ns]"),
            ("A",),
            np.ones((3, 1)),
        )
        assert len(strategies.panel_fingerprint(panel)) == 64
        close = np.exp(np.cumsum(np.random.default_rng(0).normal(0, 0.01, (80, 3)), axis=0))
        dates = np.arange(80).astype("datetime64[D]").astype("datetime64[ns]")
        panel = strategies.Panel(dates, ("A", "B", "C"), close)
        report = strategies.check_lookahead(trend_filter.trend_filter, panel, {"window": 5})
        assert report.clean
    """,
}


@pytest.mark.parametrize("package", sorted(_USE))
def test_package_imports_and_runs_with_sweep_blocked(package):
    code = _BLOCKED + textwrap.dedent(_USE[package]) + "\nassert 'sweep' not in sys.modules\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("package", sorted(_USE))
def test_no_module_of_the_package_names_sweep(package):
    # Also catches imports the run above cannot see (under TYPE_CHECKING, inside functions).
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / package
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n == "sweep" or n.startswith("sweep.") for n in names), (
                f"{path.relative_to(root.parent)}:{node.lineno} imports {names}"
            )


def test_the_blocker_blocks():
    code = _BLOCKED + "import sweep.errors\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "blocked: sweep" in proc.stderr


def test_engine_errors_are_the_packages_errors():
    import stats
    import strategies
    import sweep.data._panels
    from sweep import errors

    assert errors.StatsInputError is stats.StatsInputError
    assert errors.StrategyError is strategies.StrategyError
    assert errors.close_matches is strategies.close_matches
    assert sweep.data._panels.Panel is strategies.Panel
    assert sweep.data._panels.panel_fingerprint is strategies.panel_fingerprint
    assert issubclass(errors.UntrustedStrategyError, errors.SweepError)
    assert issubclass(errors.UntrustedStrategyError, strategies.StrategyError)
    assert issubclass(errors.StrategySpecError, errors.SpecError)
    assert issubclass(errors.StrategySpecError, strategies.StrategyError)
    assert set(errors.USER_ERRORS) == {
        errors.SweepError,
        strategies.StrategyError,
        stats.StatsInputError,
    }
    assert errors.exit_code(stats.StatsInputError("x")) == 2
    assert errors.exit_code(strategies.StrategyError("x")) == 2
    assert errors.exit_code(errors.ExecutionError("x")) == 1
    assert errors.exit_code(errors.SpecError("x")) == 2


def test_an_unknown_strategy_is_a_spec_error_and_a_strategy_error():
    from sweep import resolve, spec_from_dict
    from sweep.errors import SpecError, StrategyError
    from tests.helpers import small_spec_dict

    spec = spec_from_dict(small_spec_dict(strategy={"name": "momentun"}))
    with pytest.raises(SpecError, match="Did you mean 'momentum'") as info:
        resolve(spec)
    assert isinstance(info.value, StrategyError)
