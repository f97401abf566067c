"""Training batches packed with resets (`PackedSequences`, `packed_for`):
when packing applies, that every series is seen once an epoch with its own
target and weight, that the summed loss and its gradient equal those of
the length buckets for the same network, that observation dropout in a
packed row equals dropout of each series alone, and that the estimators
train on packed batches where their buckets would pad much more."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import s5ts.training._sequences as sequences
from s5ts import S5Classifier, S5Regressor
from s5ts.training import (
    PACK_MIN_LENGTH,
    PackedSequences,
    Sequences,
    TruncatedBackprop,
    WholeSequences,
    cross_entropy_loss,
    iterate_batches,
    packed_for,
)
from s5ts.training._loop import _summed_loss
from s5ts.training._thinning import keep_observations

MIXED = [3, 40, 5, 7, 33, 2, 64, 9, 12, 4, 6, 18, 3, 8, 5, 61, 2, 7]


def ragged(lengths, seed=0, weights=False):
    rng = np.random.default_rng(seed)
    n = len(lengths)
    return Sequences(
        inputs=tuple(rng.normal(size=(L, 2)).astype(np.float32) for L in lengths),
        gaps=tuple(rng.exponential(1.0, size=L).astype(np.float32) for L in lengths),
        targets=rng.integers(0, 3, size=n).astype(np.int32),
        weights=rng.uniform(0.5, 2.0, n).astype(np.float32) if weights else None,
    )


def network(key=0, pooling="max"):
    return S5Classifier(d_model=8, state_size=4, n_layers=2, pooling=pooling).build_network(
        2, False, 3, jax.random.key(key)
    )


def test_which_data_pack():
    """packing=True packs mixed lengths; "auto" only where the longest
    series is long (`PACK_MIN_LENGTH`) and the buckets would pad much;
    False never; rows of one series each never."""
    data = ragged(MIXED)
    packed = packed_for(data, network(), 8, WholeSequences(), True)
    assert isinstance(packed, PackedSequences)
    assert packed.row_length == max(MIXED)
    assert packed_for(data, network(), 8, WholeSequences()) is data  # "auto": short series
    long = ragged(MIXED + [PACK_MIN_LENGTH])
    assert isinstance(packed_for(long, network(), 8, WholeSequences()), PackedSequences)
    assert packed_for(long, network(), 8, WholeSequences(), False) is long
    # one series a row: nothing packed (fewer padded rows alone are no reason)
    equal = ragged([300] * 20)
    assert packed_for(equal, network(), 32, WholeSequences(), True) is equal


@pytest.mark.parametrize(
    "why",
    ["per_step", "chunks", "no pooling", "not a packing model"],
)
def test_no_packing_where_it_cannot(why):
    data, model, backprop = ragged(MIXED), network(), WholeSequences()
    if why == "per_step":
        data = Sequences(inputs=data.inputs, gaps=data.gaps, targets=tuple(np.zeros((len(g), 1)) for g in data.gaps),
                         per_step=True)
    elif why == "chunks":
        backprop = TruncatedBackprop(16)
    elif why == "no pooling":
        model = network(pooling="none")
    else:
        model = object()
    assert packed_for(data, model, 8, backprop, True) is data


def test_an_epoch_sees_every_series_once_with_its_own_target_and_weight():
    data = ragged(MIXED, weights=True)
    packed = packed_for(data, network(), 8, WholeSequences(), True)
    seen = []
    batches = list(packed.iterate_batches(8, shuffle=True, rng=np.random.default_rng(0)))
    assert len(batches) == packed.steps_per_epoch(8)
    for indices, batch in batches:
        assert batch["u"].shape == (packed.rows, packed.row_length, 2)
        assert batch["weights"].shape == batch["y"].shape == (packed.rows, packed.slots)
        at_slot = 0
        for r in range(packed.rows):
            numbers = np.unique(batch["segments"][r][batch["mask"][r]])
            for k in numbers:  # each series' steps, in order, under its slot in its row
                i = indices[at_slot]
                at = batch["mask"][r] & (batch["segments"][r] == k)
                np.testing.assert_array_equal(batch["u"][r][at], data.inputs[i])
                np.testing.assert_array_equal(batch["gaps"][r][at], data.gaps[i])
                assert batch["y"][r, k] == data.targets[i] and batch["weights"][r, k] == data.weights[i]
                at_slot += 1
            assert np.all(batch["weights"][r, len(numbers):] == 0)
        assert at_slot == len(indices)
        seen.extend(indices.tolist())
    assert sorted(seen) == list(range(len(MIXED)))


def test_the_summed_loss_and_gradient_equal_those_of_the_length_buckets():
    data = ragged(MIXED, weights=True)
    model = network(3)
    packed = packed_for(data, model, 8, WholeSequences(), True)

    def epoch(batches):
        def loss(model):
            total = 0.0
            for _, batch in batches:
                batch = {k: jnp.asarray(v) for k, v in batch.items()}
                total = total + _summed_loss(model, batch, None, None, cross_entropy_loss)[0]
            return total

        return eqx.filter_value_and_grad(loss)(model)

    value, grads = epoch(list(packed.iterate_batches(8, shuffle=False)))
    expected, expected_grads = epoch(list(data.iterate_batches(8, shuffle=False, place=False)))
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(expected_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


def test_observation_dropout_in_a_packed_row_is_dropout_of_each_series_alone():
    data = ragged(MIXED)
    packed = packed_for(data, network(), 8, WholeSequences(), True)
    rng = np.random.default_rng(4)
    (indices, batch), *_ = packed.iterate_batches(8, shuffle=False)
    kept = sequences.draw_kept(batch["mask"], 0.6, rng, batch["segments"])
    thinned = keep_observations(batch, kept, elapsed=("gaps",))
    places = [(r, k) for r in range(packed.rows) for k in np.unique(batch["segments"][r][batch["mask"][r]])]
    assert len(places) == len(indices)
    for (r, k), i in zip(places, indices):
        at = batch["mask"][r] & (batch["segments"][r] == k)
        assert kept[r][at].any()  # at least one observation of every series
        alone = {"u": batch["u"][r][at][None], "gaps": batch["gaps"][r][at][None], "mask": np.ones((1, at.sum()), bool)}
        expected = keep_observations(alone, kept[r][at][None], elapsed=("gaps",))
        now = thinned["mask"][r] & (thinned["segments"][r] == k)
        np.testing.assert_array_equal(thinned["u"][r][now], expected["u"][expected["mask"]])
        np.testing.assert_allclose(thinned["gaps"][r][now], expected["gaps"][expected["mask"]], rtol=1e-6)
        assert thinned["gaps"][r][now][0] == data.gaps[i][0]  # its own first gap, never the series before's time


@pytest.mark.parametrize("estimator", [S5Classifier, S5Regressor])
def test_estimators_train_on_packed_batches_when_asked(monkeypatch, estimator):
    built = []
    original = sequences.packed_for

    def spy(*args):
        out = original(*args)
        built.append(type(out).__name__)
        return out

    monkeypatch.setattr("s5ts.training._loop.packed_for", spy)
    rng = np.random.default_rng(5)
    X = [pd.DataFrame({"v": rng.normal(size=L)}, index=np.sort(rng.uniform(0, 50, L))) for L in MIXED * 2]
    y = np.arange(len(X)) % 2 if estimator is S5Classifier else rng.normal(size=len(X))
    model = estimator(d_model=8, state_size=4, max_epochs=3, random_state=0, packing=True).fit(X, y)
    assert built == ["PackedSequences"]
    assert np.all(np.isfinite(np.asarray(model.predict(X), dtype=float)))


def test_cut_packed_batches_drop_only_padding_and_keep_the_loss():
    """Thinned packed rows cut short (`cut_batch`): the same draws uncut,
    the steps cut off are padding, and the summed loss is the same."""
    data = ragged([300, 20, 250, 40, 280, 10, 260, 30] * 2)
    model = network(1)
    packed = packed_for(data, model, 8, WholeSequences(), True)
    assert isinstance(packed, PackedSequences)

    def batches(cut):
        return list(iterate_batches(packed, 8, shuffle=True, rng=np.random.default_rng(3), observation_dropout=0.4,
                                    observation_budget=100, place=False, cut=cut))

    for (i, whole), (j, cut) in zip(batches(False), batches(True)):
        np.testing.assert_array_equal(i, j)
        length = cut["mask"].shape[1]
        assert length < whole["mask"].shape[1]
        assert not whole["mask"][:, length:].any()
        for key in ("u", "gaps", "mask", "segments"):
            np.testing.assert_array_equal(cut[key], whole[key][:, :length])
        losses = [
            _summed_loss(model, {k: jnp.asarray(v) for k, v in b.items()}, None, None, cross_entropy_loss)[0]
            for b in (cut, whole)
        ]
        np.testing.assert_allclose(*losses, rtol=1e-5)
