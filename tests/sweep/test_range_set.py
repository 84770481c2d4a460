"""RangeSet: the driver's done set and to-do list as sorted int64 ranges (issue 24, point 2).

Checked against Python sets of the same positions (the oracle), by example and with
hypothesis.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.common._range_set import RangeSet

positions = st.lists(st.integers(min_value=0, max_value=300), max_size=80)


def _set(r: RangeSet) -> set[int]:
    return {p for a, b in r.ranges() for p in range(a, b)}


def test_positions_merge_into_sorted_disjoint_ranges():
    r = RangeSet.from_positions([8, 0, 1, 2, 7, 2, 1])
    assert list(r.ranges()) == [(0, 3), (7, 9)]
    assert len(r) == 5 and r.n_ranges == 2 and (r.first, r.last) == (0, 8)
    # overlapping and adjacent ranges merge; empty ones vanish
    merged = RangeSet.from_ranges([10, 0, 3, 12, 20], [15, 3, 5, 13, 20])
    assert list(merged.ranges()) == [(0, 5), (10, 15)]
    assert RangeSet.from_positions([]) == RangeSet.empty() and not RangeSet.empty()
    assert len(RangeSet.empty()) == 0
    with pytest.raises(IndexError):
        _ = RangeSet.empty().first


def test_union_complement_and_the_to_do_list_of_a_resumed_grid():
    done = RangeSet.union_all(
        [
            RangeSet.from_ranges([0], [100]),
            RangeSet.from_ranges([300], [350]),
            RangeSet.from_ranges([100], [120]),
        ]
    )
    assert list(done.ranges()) == [(0, 120), (300, 350)]
    todo = done.complement(400)
    assert list(todo.ranges()) == [(120, 300), (350, 400)]
    assert len(todo) + len(done) == 400
    assert todo.union(done) == RangeSet.full(400)
    assert todo.intersection(done) == RangeSet.empty()
    assert RangeSet.empty().complement(5) == RangeSet.full(5)
    assert RangeSet.full(5).complement(5) == RangeSet.empty()


def test_the_to_do_list_is_drawn_in_batches_across_ranges():
    todo = RangeSet.from_ranges([5, 9, 20], [7, 12, 21])  # 5 6 | 9 10 11 | 20
    batches = list(todo.batches(2))
    assert [b.tolist() for b in batches] == [[5, 6], [9, 10], [11, 20]]
    assert all(b.dtype == np.int64 for b in batches)
    assert [b.tolist() for b in todo.batches(10)] == [[5, 6, 9, 10, 11, 20]]
    assert todo.take(1, 4).tolist() == [6, 9, 10]
    assert todo.take(4, 99).tolist() == [11, 20] and todo.take(7, 9).tolist() == []
    assert list(todo.drop(3).ranges()) == [(10, 12), (20, 21)]
    assert todo.drop(0) == todo and todo.drop(6) == RangeSet.empty()
    assert todo.at_ranks([0, 2, 5]).tolist() == [5, 9, 20]
    with pytest.raises(IndexError):
        todo.at_ranks([6])
    with pytest.raises(ValueError, match="size"):
        next(todo.batches(0))


def test_a_huge_to_do_list_costs_its_ranges_not_its_positions():
    todo = RangeSet.from_ranges([0], [1 << 50]).difference(RangeSet.from_ranges([10], [20]))
    assert len(todo) == (1 << 50) - 10 and todo.n_ranges == 2
    first = next(todo.batches(16))
    assert first.tolist() == [*range(10), *range(20, 26)]
    assert todo.take((1 << 50) - 12, 1 << 60).tolist() == [(1 << 50) - 2, (1 << 50) - 1]
    assert todo.contains(np.array([9, 10, 19, 20, (1 << 50) - 1, 1 << 50])).tolist() == [
        True,
        False,
        False,
        True,
        True,
        False,
    ]


@settings(max_examples=200, deadline=None)
@given(positions, positions, st.integers(min_value=0, max_value=320))
def test_set_algebra_matches_python_sets(a, b, n):
    ra, rb = RangeSet.from_positions(a), RangeSet.from_positions(b)
    assert _set(ra) == set(a) and len(ra) == len(set(a))
    assert _set(ra.union(rb)) == set(a) | set(b)
    assert _set(ra.intersection(rb)) == set(a) & set(b)
    assert _set(ra.difference(rb)) == set(a) - set(b)
    assert _set(ra.complement(n)) == set(range(n)) - set(a)
    assert ra.contains(np.arange(310)).tolist() == [p in set(a) for p in range(310)]
    # ranges stay sorted, disjoint and non-adjacent
    assert np.all(ra.starts[1:] > ra.stops[:-1]) and np.all(ra.stops > ra.starts)


@settings(max_examples=100, deadline=None)
@given(positions, st.integers(min_value=1, max_value=17), st.integers(min_value=0, max_value=90))
def test_batches_take_and_drop_walk_the_sorted_positions(a, size, k):
    r = RangeSet.from_positions(a)
    ordered = sorted(set(a))
    drawn = list(r.batches(size))
    assert [p for batch in drawn for p in batch.tolist()] == ordered
    assert all(len(batch) == size for batch in drawn[:-1])
    assert r.take(k, k + size).tolist() == ordered[k : k + size]
    assert _set(r.drop(k)) == set(ordered[k:])
    ranks = np.arange(len(ordered))
    assert r.at_ranks(ranks).tolist() == ordered
