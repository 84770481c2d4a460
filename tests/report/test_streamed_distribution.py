"""The streamed distribution summary equals numpy's in-memory one, whatever the chunking.

References: ``np.quantile`` (method "linear") and ``np.histogram(values, bins=40)`` of numpy
2.x on the concatenated finite values; the exact mean and std from ``fractions.Fraction``.
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.errors import SweepError
from sweep.report._streamed_distribution import (
    MAX_CANDIDATES,
    QUANTILE_LEVELS,
    PassPlan,
    StreamedSummary,
    keys_of,
    merge,
    reduce_chunk,
    scaled_sum,
    streamed_summary,
    value_of,
)

LEVELS = list(QUANTILE_LEVELS)
TINY = 5e-324  # the smallest subnormal


def cut(values, parts, seed):
    """``values`` in ``parts`` uneven chunks (some empty)."""
    rng = np.random.default_rng(seed)
    points = np.sort(rng.integers(0, values.size + 1, size=parts - 1))
    return np.split(values, points)


def summarise(chunks, **options):
    return streamed_summary(lambda: iter(chunks), **options)


def fingerprint(s: StreamedSummary):
    """Every field, floats by their bits (so ``-0.0`` and ``0.0`` differ)."""
    hexed = [None if x is None else float.hex(x) for x in (s.mean, s.std, s.min, s.max)]
    return (
        s.count,
        hexed,
        [float.hex(q) for q in s.quantiles],
        s.histogram_counts.dtype,
        s.histogram_counts.tobytes(),
        s.histogram_edges.tobytes(),
    )


def assert_matches_numpy(values, s: StreamedSummary, bins=40):
    finite = values[np.isfinite(values)]
    assert s.count == finite.size
    assert s.min == finite.min()
    assert s.max == finite.max()
    assert s.quantiles == tuple(np.quantile(finite, LEVELS).tolist())
    counts, edges = np.histogram(finite, bins=bins)
    assert s.histogram_counts.dtype == np.int64
    np.testing.assert_array_equal(s.histogram_counts, counts)
    np.testing.assert_array_equal(s.histogram_edges, edges)


def exact_mean_std(finite):
    """The definition: mean = exact sum / n rounded once; std from float64 d*d summed exactly."""
    n = finite.size
    mean = float(sum(map(Fraction, finite.tolist())) / n)
    if n < 2:
        return mean, None
    with np.errstate(over="ignore"):
        d = finite - mean
        squares = d * d
    if not np.isfinite(squares).all():
        return mean, math.inf
    return mean, math.sqrt(float(sum(map(Fraction, squares.tolist())) / (n - 1)))


def _edges_data(rng):
    edges = np.linspace(-1.0, 3.0, 41)
    near = np.concatenate([np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    return rng.permutation(np.concatenate([edges, edges, rng.choice(edges, 500), near]))


def _data(name):
    rng = np.random.default_rng(7)
    return {
        "normal": lambda: rng.normal(size=20_000),
        "ties": lambda: rng.integers(-3, 4, size=30_000).astype(np.float64),
        "on-edges": lambda: _edges_data(rng),
        "all-equal": lambda: np.full(1_000, 2.5),
        "one": lambda: np.array([7.0]),
        "two": lambda: np.array([1.0, -1.0]),
        "negative-zeros": lambda: rng.choice([-0.0, 0.0, -0.0, 1.0, -1.0], 3_000),
        "subnormals": lambda: rng.permutation(
            np.r_[TINY, -TINY, 1e-310, -3e-320, 2.2e-308, 0.0, -0.0, 1e-300, rng.normal(size=50)]
        ),
        "huge-range": lambda: (
            rng.choice([-1.0, 1.0], 5_000) * 10.0 ** rng.uniform(-300, 300, 5_000)
        ),
        "extremes": lambda: np.r_[1e-300, 1e300, -1e300, 1e300, 0.0],
        "cancellation": lambda: np.r_[1e20, rng.normal(size=999), -1e20],
        "non-finite": lambda: np.where(
            rng.random(10_000) < 0.1,
            rng.choice([np.nan, np.inf, -np.inf], 10_000),
            rng.normal(size=10_000),
        ),
    }[name]()


DATA = [
    "normal",
    "ties",
    "on-edges",
    "all-equal",
    "one",
    "two",
    "negative-zeros",
    "subnormals",
    "huge-range",
    "extremes",
    "cancellation",
    "non-finite",
]


@pytest.mark.parametrize("name", DATA)
def test_equals_numpy_and_does_not_depend_on_chunking(name):
    values = _data(name)
    splits = [cut(values, 1, 0), cut(values, 7, 1), cut(values, 50, 2)]
    rng = np.random.default_rng(3)
    shuffled = [splits[1][i] for i in rng.permutation(len(splits[1]))]
    results = [summarise(chunks) for chunks in [*splits, shuffled]]
    assert len({repr(fingerprint(s)) for s in results}) == 1
    assert_matches_numpy(values, results[0])


@pytest.mark.parametrize("name", DATA)
def test_mean_and_std_are_correctly_rounded(name):
    values = _data(name)
    finite = values[np.isfinite(values)]
    s = summarise(cut(values, 9, 4))
    mean, std = exact_mean_std(finite)
    assert s.mean == mean
    assert (s.std, std) == (None, None) or s.std == std
    # numpy's float sums overflow (huge ranges) or cancel (1e20 - 1e20) on the others
    if name not in {"huge-range", "extremes", "cancellation"}:
        assert s.mean == pytest.approx(np.mean(finite), rel=1e-12, abs=1e-300)
    if finite.size > 1 and name not in {"huge-range", "extremes", "cancellation"}:
        assert s.std == pytest.approx(np.std(finite, ddof=1), rel=1e-12, abs=1e-300)


def test_cancellation_mean_is_exact_where_float_sums_are_not():
    values = np.r_[1e20, 1.0, -1e20, 2.0]
    s = summarise([values[:1], values[1:]])
    assert s.mean == 0.75
    assert math.fsum(values) / 4 == s.mean  # math.fsum is correctly rounded too


def test_million_values_in_a_thousand_uneven_chunks():
    rng = np.random.default_rng(11)
    values = rng.standard_t(3, size=1_000_000)
    values[rng.integers(0, values.size, 1_000)] = np.nan
    first = summarise(cut(values, 1_000, 5))
    assert_matches_numpy(values, first)
    assert repr(fingerprint(summarise(cut(values, 333, 6)[::-1]))) == repr(fingerprint(first))
    finite = values[np.isfinite(values)]
    assert first.mean == pytest.approx(np.mean(finite), rel=1e-12)
    assert first.std == pytest.approx(np.std(finite, ddof=1), rel=1e-12)


def test_empty_column():
    for chunks in ([], [np.empty(0)], [np.array([np.nan, np.inf]), np.empty(0)]):
        s = summarise(chunks)
        assert (s.count, s.mean, s.std, s.min, s.max, s.quantiles) == (
            0,
            None,
            None,
            None,
            None,
            (),
        )
        assert s.histogram_counts.size == 0
        assert s.histogram_edges.size == 0


def test_passes_typical_and_worst_case():
    values = np.random.default_rng(2).normal(size=200_000)
    chunks = cut(values, 20, 3)
    calls = []

    def counting():
        calls.append(1)
        return iter(chunks)

    for most, passes in [(MAX_CANDIDATES, 2), (100, 3), (0, 4)]:
        calls.clear()
        s = streamed_summary(counting, max_candidates=most)
        assert len(calls) == passes
        assert_matches_numpy(values, s)


def test_heavy_ties_settle_by_digits_alone():
    values = np.random.default_rng(4).choice([-2.0, 0.5, 3.0], 200_000)
    assert_matches_numpy(values, summarise(cut(values, 30, 8)))


def test_other_levels_and_bins():
    values = np.random.default_rng(5).normal(size=3_001)
    levels = [0.0, 0.001, 1 / 3, 0.5, 0.999, 1.0]
    s = summarise(cut(values, 10, 9), bins=7, levels=levels)
    assert s.quantiles == tuple(np.quantile(values, levels).tolist())
    counts, edges = np.histogram(values, bins=7)
    np.testing.assert_array_equal(s.histogram_counts, counts)
    np.testing.assert_array_equal(s.histogram_edges, edges)
    assert summarise([values], levels=[]).quantiles == ()


def test_partials_pickle_and_merge_in_any_grouping():
    values = np.random.default_rng(6).normal(size=5_000)
    chunks = cut(values, 12, 10)
    plan = PassPlan(40, moments=True, value_range=(-5.0, 5.0), mean=0.1, digit_groups=((0, 0),))
    partials = [pickle.loads(pickle.dumps(reduce_chunk(c, plan))) for c in chunks]
    whole = merge(partials)
    nested = merge([merge(partials[:5]), merge(partials[5:][::-1])])
    for a, b in [(whole, nested)]:
        assert (a.count, a.low, a.high, a.scaled_sum, a.scaled_squares) == (
            b.count,
            b.low,
            b.high,
            b.scaled_sum,
            b.scaled_squares,
        )
        np.testing.assert_array_equal(a.histogram, b.histogram)
        np.testing.assert_array_equal(a.digit_codes, b.digit_codes)
        np.testing.assert_array_equal(a.digit_counts, b.digit_counts)
    assert whole.count == values.size
    assert whole.scaled_sum == sum(Fraction(x) for x in values.tolist()) * 2**1074


def test_keys_order_like_the_floats():
    values = np.array([-np.inf, -1e300, -1.0, -TINY, -0.0, 0.0, TINY, 1.0, 1e300, np.inf])
    keys = keys_of(values)
    assert (np.diff(keys.astype(object)) > 0).all()
    assert [float.hex(value_of(int(k))) for k in keys] == [float.hex(x) for x in values]


def test_scaled_sum_is_exact():
    values = np.r_[TINY, -TINY, 3 * TINY, 1e308, 1e308, -1.5, 2.2250738585072014e-308]
    assert scaled_sum(values) == sum(Fraction(x) for x in values.tolist()) * 2**1074


def test_chunks_that_change_between_passes_are_refused():
    values = np.random.default_rng(7).normal(size=1_000)
    calls = []

    def shrinking():
        calls.append(1)
        return iter([values[: -len(calls)]])

    with pytest.raises(SweepError, match="changed between passes"):
        streamed_summary(shrinking)


def test_too_narrow_a_range_raises_like_numpy():
    values = np.array([TINY, 2 * TINY])
    with pytest.raises(ValueError, match="Too many bins") as numpy_error:
        np.histogram(values, bins=40)
    with pytest.raises(ValueError, match="Too many bins") as ours:
        summarise([values])
    assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("options", [{"bins": 0}, {"levels": [0.5, 1.5]}, {"levels": [-0.1]}])
def test_bad_options(options):
    with pytest.raises(SweepError, match="levels in"):
        summarise([np.ones(3)], **options)


FLOATS = st.one_of(
    st.floats(min_value=-1e300, max_value=1e300),
    st.sampled_from([0.0, -0.0, TINY, -TINY, 1.0, np.nan, np.inf, -np.inf]),
)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(FLOATS, max_size=300),
    points=st.lists(st.integers(0, 300), max_size=6),
    most=st.sampled_from([0, 1, 7, MAX_CANDIDATES]),
)
def test_any_floats_any_chunking(values, points, most):
    array = np.array(values, dtype=np.float64)
    chunks = np.split(array, sorted(min(p, array.size) for p in points))
    finite = array[np.isfinite(array)]
    try:
        np.histogram(finite, bins=40)
    except ValueError as numpy_error:  # a range too narrow for 40 bins
        with pytest.raises(ValueError, match="Too many bins") as ours:
            summarise(chunks, max_candidates=most)
        assert str(ours.value) == str(numpy_error)
        return
    s = summarise(chunks, max_candidates=most)
    if finite.size == 0:
        assert s.count == 0
        return
    assert_matches_numpy(array, s)
    assert (s.mean, s.std) == exact_mean_std(finite)
    assert repr(fingerprint(summarise(chunks[::-1], max_candidates=most))) == repr(fingerprint(s))
