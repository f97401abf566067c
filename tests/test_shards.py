"""Series streamed across processes, each reading its own files
(`s5ts.training._shards`), checked in this one process: the plan of global
steps against what it must hold, one process's plan against the batches
one process streams alone, the statistics of shares merged against one
pass over the whole data set, and the merge of median gaps."""

import numpy as np
import pytest

from s5ts.data import MedianGap, assign_buckets, plan_buckets
from s5ts.data._median_gap import RELATIVE_ERROR
from s5ts.training import (
    FileShares,
    Sequences,
    StreamedSequences,
    allgather_objects,
    gather_results,
    iterate_batches,
    shard_plan,
    share_files,
    steps_per_epoch,
)


def _files(seed=0, n_files=7):
    """Series of mixed lengths in files of 0-15 series each."""
    rng = np.random.default_rng(seed)
    per_file = rng.integers(0, 16, n_files)
    parts = np.repeat(np.arange(n_files), per_file)
    lengths = np.where(rng.random(len(parts)) < 0.7, rng.integers(2, 9, len(parts)), rng.integers(30, 70, len(parts)))
    return lengths, parts


def test_share_files_balances_rows_and_is_deterministic():
    rows = np.array([5, 100, 40, 40, 30, 1, 60])
    owners = share_files(rows, 3)
    assert owners.tolist() == share_files(rows, 3).tolist()
    load = np.bincount(owners, weights=rows, minlength=3)
    assert load.max() - load.min() <= rows.max() and set(owners) == {0, 1, 2}
    assert share_files(rows, 1).tolist() == [0] * len(rows)
    with pytest.raises(ValueError, match="processes"):
        share_files(rows, 0)


@pytest.mark.parametrize("processes", [2, 3])
@pytest.mark.parametrize("shuffled", [False, True])
def test_plan_holds_every_series_once_in_its_own_process(processes, shuffled):
    lengths, parts = _files()
    padded = assign_buckets(lengths, plan_buckets(lengths))
    shares = FileShares(parts, share_files(np.bincount(parts, minlength=7), processes))
    order = np.random.default_rng(1).permutation(7) if shuffled else None
    local = 4
    plan = shard_plan(padded, shares, order, local, processes)
    seen = []
    for step in plan:
        assert len(step.rows) == processes
        for p, rows in enumerate(step.rows):
            assert len(rows) <= local
            assert (shares.owners[parts[rows]] == p).all()  # a process supplies only series of its files
            assert (padded[rows] == step.length).all()  # one bucket per global step
            seen.extend(rows.tolist())
    assert sorted(seen) == list(range(len(lengths)))
    # as many steps as the fullest process needs in each bucket
    expected = 0
    for length in np.unique(padded):
        counts = [np.sum((padded == length) & (shares.owners[parts] == p)) for p in range(processes)]
        expected += max(-(-c // local) for c in counts)
    assert len(plan) == expected
    # each process's rows come in its reading order, bucket by bucket
    for p in range(processes):
        read = list(shares.read_order(p, order))
        for length in np.unique(padded):
            mine = [q for step in plan if step.length == length for q in step.rows[p]]
            assert mine == [q for q in read if padded[q] == length]


def _streamed(lengths, parts, shares):
    data = Sequences(
        inputs=tuple(np.full((L, 1), i, np.float32) for i, L in enumerate(lengths)),
        gaps=tuple(np.ones(L, np.float32) for L in lengths),
        targets=np.arange(len(lengths), dtype=np.float32)[:, None],
    )
    n_files = int(parts.max()) + 1

    def chunks(rng):
        order = range(n_files) if rng is None else rng.permutation(n_files)
        for f in order:
            positions = np.flatnonzero(parts == f)
            for piece in np.array_split(positions, 2):  # two chunks a file
                if len(piece):
                    yield piece, data.subset(piece)

    return StreamedSequences(lengths=np.asarray(lengths), chunks=chunks, shares=shares)


@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_one_process_plan_is_what_one_process_streams(dropout):
    """With one process, the batches of the plan are exactly those the
    stream gives without shares: the same series, padding and draws."""
    lengths, parts = _files(seed=2)
    alone = _streamed(lengths, parts, None)
    shares = FileShares(parts, np.zeros(7, np.int64))
    sharded = _streamed(lengths, parts, shares)
    assert steps_per_epoch(sharded, 4) == steps_per_epoch(alone, 4)
    for shuffle in (False, True):
        rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
        got = list(iterate_batches(sharded, 4, shuffle=shuffle, rng=rng_a, observation_dropout=dropout))
        want = list(iterate_batches(alone, 4, shuffle=shuffle, rng=rng_b, observation_dropout=dropout))
        assert len(got) == len(want) == steps_per_epoch(alone, 4)
        for (gi, gb), (wi, wb) in zip(got, want):
            np.testing.assert_array_equal(gi[gi >= 0], wi)
            for key in wb:
                np.testing.assert_array_equal(np.asarray(gb[key]), np.asarray(wb[key]), err_msg=key)
        assert rng_a.random() == rng_b.random()  # the same draws, in number too
    # the validation split's subset keeps each series' file
    keep = np.array([0, 3, 5, 9, 20])
    assert sharded.subset(keep).shares.parts.tolist() == parts[keep].tolist()


def test_median_gap_merged_is_the_median_of_all():
    rng = np.random.default_rng(0)
    gaps = rng.lognormal(0.0, 2.0, 3001)  # an odd count: np.median is one of the gaps
    true = np.median(gaps)
    # exact in all (each share 1001 gaps); histogram once merged; histograms merged
    for limit, exact in ((10_000, True), (2000, False), (10, False)):
        whole, shares = MedianGap(limit), [MedianGap(limit) for _ in range(3)]
        for k, part in enumerate(np.array_split(gaps, 9)):
            whole.add(part)
            shares[k % 3].add(part)
        merged = MedianGap(limit)
        for share in shares:
            merged.merge(share)
        assert merged.exact == whole.exact == exact, limit
        assert all(share.exact == (limit >= 1001) for share in shares), limit  # shares of 1001, 1000, 1000 gaps
        assert merged.median() == whole.median(), limit
        if exact:  # the very median of every gap, as time_scale_from (np.median) computes it in memory
            assert merged.median() == true
        else:  # the histogram's: within its stated relative error, and not exact by chance
            assert abs(merged.median() / true - 1) <= RELATIVE_ERROR, limit
            assert merged.median() != true
    assert RELATIVE_ERROR < 3.4e-4  # 2^(1/2048) - 1, as docs/scaling.md states
    assert MedianGap().median() == 1.0


def test_gathering_in_one_process():
    assert allgather_objects({"a": 1}) == [{"a": 1}]
    assert gather_results(lambda: 3) == [3]
    with pytest.raises(KeyError):
        gather_results(lambda: {}["x"])
