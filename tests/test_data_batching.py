"""s5ts.data._batching: length buckets, batches, padding."""

import math

import numpy as np
import pytest

from s5ts.data import (
    CapAtLongest,
    CapOnGrid,
    PowersOfTwo,
    bucket_length,
    grid_length,
    make_batches,
    pad_batch,
    plan_buckets,
)


def _naive_bucket(L, min_length=8):
    b = 1
    while b < L:
        b *= 2
    return max(b, min_length)


def test_bucket_length_matches_naive():
    for L in range(1, 5000):
        assert bucket_length(L) == _naive_bucket(L)
    assert bucket_length(3, min_length=1) == 4
    assert bucket_length(1, min_length=1) == 1
    with pytest.raises(ValueError):
        bucket_length(0)


def _naive_grid(L, min_length=8):
    # the lengths 5, 6, 7, 8 times every power of two: four per octave
    grid = sorted({m * 2**j for j in range(16) for m in (5, 6, 7, 8)} | {min_length})
    return next(g for g in grid if g >= max(L, min_length))


def test_grid_length_matches_naive():
    for L in range(1, 5000):
        g = grid_length(L)
        assert g == _naive_grid(L)
        assert L <= g <= bucket_length(L) and (L <= 8 or g < 1.25 * L)
    assert grid_length(3, min_length=1) == 3 and grid_length(37, min_length=64) == 64
    assert sorted({grid_length(L) for L in range(33, 65)}) == [40, 48, 56, 64]
    with pytest.raises(ValueError):
        grid_length(0)


def test_grid_cap_on_the_longest_bucket_alone():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lengths = rng.integers(1, 3000, rng.integers(1, 30))
        grid = plan_buckets(lengths, budget=0, cap=CapOnGrid())
        powers = plan_buckets(lengths, budget=0, cap=PowersOfTwo())
        exact = plan_buckets(lengths, budget=0, cap=CapAtLongest())
        longest = int(lengths.max())
        assert grid[-1] == grid_length(longest) and exact[-1] == longest
        # below the longest bucket, the three are the same powers of two
        np.testing.assert_array_equal(grid[:-1], powers[:-1])
        np.testing.assert_array_equal(exact[:-1], powers[:-1])
    assert PowersOfTwo().limit(37) is None and CapAtLongest().limit(37) == 37 and CapOnGrid().limit(37) == 40
    # a forward pass alone: data capped at its longest pads to powers of two,
    # data on the grid keeps it
    assert CapAtLongest().forward == PowersOfTwo() and CapOnGrid().forward == CapOnGrid()
    with pytest.raises(TypeError, match="cap"):  # a bool, as before LengthCap
        plan_buckets([5, 9], cap=True)


def _check_partition(batches, n):
    flat = np.concatenate(batches)
    assert flat.dtype == np.int64
    np.testing.assert_array_equal(np.sort(flat), np.arange(n))  # each index exactly once


@pytest.mark.parametrize("shuffle", [False, True])
def test_buckets_for_lengths_5_to_5000(shuffle):
    lengths = np.arange(5, 5001)
    batches = make_batches(lengths, 32, shuffle=shuffle, rng=np.random.default_rng(0))
    _check_partition(batches, lengths.shape[0])
    shapes = set()
    for b in batches:
        buckets = {bucket_length(L) for L in lengths[b]}
        assert len(buckets) == 1  # one padded length per batch
        assert 1 <= len(b) <= 32
        shapes |= buckets
    assert shapes == {2**k for k in range(3, 14)}  # 8 .. 8192: 11 compiled lengths
    assert len(shapes) <= math.log2(5000 / 5) + 2


def test_no_shuffle_keeps_input_order_and_last_partial_batch():
    lengths = [3, 20, 4, 5, 30, 6, 7, 1]
    batches = make_batches(lengths, 2, shuffle=False)
    got = [b.tolist() for b in batches]
    # bucket 8: 0, 2, 3, 5, 6, 7 (input order); bucket 32: 1, 4
    assert got == [[0, 2], [3, 5], [6, 7], [1, 4]]
    batches = make_batches([3, 4, 5], 2, shuffle=False)
    assert [b.tolist() for b in batches] == [[0, 1], [2]]  # partial batch kept


def test_shuffle_is_seeded_and_mixes():
    lengths = np.full(100, 10)
    a = make_batches(lengths, 10, shuffle=True, rng=np.random.default_rng(1))
    b = make_batches(lengths, 10, shuffle=True, rng=np.random.default_rng(1))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    _check_partition(a, 100)
    assert not np.array_equal(np.concatenate(a), np.arange(100))


def test_make_batches_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        make_batches([1, 2], 0, shuffle=False)


def test_pad_batch_matches_loop():
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(L, 3)) for L in (5, 1, 8)]
    padded, mask = pad_batch(arrays, 8, fill=-1.0)
    assert padded.shape == (3, 8, 3) and mask.shape == (3, 8) and mask.dtype == bool
    for i, a in enumerate(arrays):
        for k in range(8):
            if k < a.shape[0]:
                assert mask[i, k]
                np.testing.assert_array_equal(padded[i, k], a[k])
            else:
                assert not mask[i, k]
                np.testing.assert_array_equal(padded[i, k], [-1.0] * 3)


def test_pad_batch_pads_rows_to_batch_size():
    arrays = [np.array([1, 2, 3]), np.array([4])]
    padded, mask = pad_batch(arrays, 4, batch_size=5)
    assert padded.shape == (5, 4) and padded.dtype == arrays[0].dtype
    assert not mask[2:].any() and (padded[2:] == 0).all()
    np.testing.assert_array_equal(mask.sum(axis=1), [3, 1, 0, 0, 0])


def test_pad_batch_errors():
    with pytest.raises(ValueError, match="length 5 > padded length 4"):
        pad_batch([np.zeros(5)], 4)
    with pytest.raises(ValueError, match="do not fit"):
        pad_batch([np.zeros(2)] * 3, 4, batch_size=2)
    with pytest.raises(ValueError, match=r"array 1 has shape \(2, 3\)"):
        pad_batch([np.zeros((2, 2)), np.zeros((2, 3))], 4)
