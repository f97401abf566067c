"""Very long series in chunks with carried states (`s5ts.training._backprop`):
the chunked forward pass equals the whole one, a fit whose chunks hold whole
series equals the unchunked fit, a chunked fit of a long series learns, and
what cannot be chunked says so."""

import equinox as eqx
import jax
import numpy as np
import pytest

from s5ts import S5Regressor
from s5ts.nn import SequenceNetwork, make_blocks, make_encoder
from s5ts.training import Sequences, TruncatedBackprop, predict_outputs

TINY = dict(n_layers=1, d_model=8, state_size=4, random_state=0, min_epoch_steps=None)


def _network(scan, key):
    k_enc, k_blocks, k_head, k_proj = jax.random.split(key, 4)
    blocks = make_blocks(2, 8, 4, 1, "zoh", False, scan, 0.01, 1.0, "half_glu", 0.0, False, "gap", key=k_blocks)
    return SequenceNetwork(make_encoder("identity", 3, key=k_enc), blocks, eqx.nn.Linear(8, 2, key=k_head), key=k_proj)


@pytest.mark.parametrize("scan", ["associative", "sequential"])
def test_chunked_forward_equals_whole_sequence(scan, getkey):
    """Rows of different lengths, none a multiple of the chunk (and one
    shorter than a chunk): per-step outputs over chunks with the states
    carried equal the whole-sequence outputs."""
    rng = np.random.default_rng(1)
    lengths = (203, 37, 150, 5)
    data = Sequences(
        inputs=tuple(rng.normal(size=(n, 3)).astype(np.float32) for n in lengths),
        gaps=tuple(rng.exponential(size=n).astype(np.float32) for n in lengths),
        per_step=True,
    )
    model = _network(scan, getkey())
    whole = predict_outputs(model, data, batch_size=4)
    chunked = predict_outputs(model, data, batch_size=4, backprop=TruncatedBackprop(16))
    for n, w, c in zip(lengths, whole, chunked):
        assert w.shape == c.shape == (n, 2)
        np.testing.assert_allclose(c, w, rtol=1e-4, atol=1e-5)
    # The states matter: restarting every chunk from zero would differ.
    assert np.abs(whole[0][16:32]).max() > 0


def _series(lengths, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(n, 2)) for n in lengths]
    times = [np.cumsum(rng.exponential(size=n)) for n in lengths]
    y = [0.2 * np.cumsum(x[:, 0]) / np.sqrt(np.arange(1, len(x) + 1)) for x in X]
    return X, y, times


def test_chunks_longer_than_every_series_fit_as_without_chunks():
    """With chunk_length ≥ the longest series every batch is one chunk
    starting from zero states: the same fit, parameter for parameter
    (observation dropout on: the same random draws), to float32 rounding:
    the whole fit cuts its thinned batches short (`cut_batch`), so its sums
    run over fewer padded steps; chunks keep their planned length."""
    X, y, times = _series((120, 64, 90, 33))
    kw = dict(TINY, max_epochs=3, batch_size=2)
    plain = S5Regressor(**kw).fit(X, y, times=times)
    chunked = S5Regressor(chunk_length=128, **kw).fit(X, y, times=times)
    for a, b in zip(
        jax.tree.leaves(eqx.filter(plain.model_, eqx.is_array)), jax.tree.leaves(eqx.filter(chunked.model_, eqx.is_array))
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        [r["train_loss"] for r in plain.history_], [r["train_loss"] for r in chunked.history_], rtol=1e-5
    )


def test_chunked_fit_of_a_long_series_learns_and_predicts_as_whole():
    """One 5,000-step irregular series in chunks of 256: the training loss
    falls, and predict (over chunks) equals the whole-sequence forward pass."""
    rng = np.random.default_rng(3)
    n = 5000
    times = np.cumsum(rng.exponential(size=n))
    x = rng.normal(size=(n, 1))
    target = np.zeros(n)
    for k in range(1, n):  # an irregularly sampled exponential smoothing of the input
        decay = np.exp(-(times[k] - times[k - 1]) / 5.0)
        target[k] = decay * target[k - 1] + (1 - decay) * x[k, 0]
    model = S5Regressor(chunk_length=256, max_epochs=4, warmup_epochs=0, learning_rate=1e-2, **TINY)
    model.fit([x], [target], times=[times])
    losses = [r["train_loss"] for r in model.history_]
    assert losses[-1] < 0.7 * losses[0], losses
    chunked = model.predict([x], times=[times])
    model.set_params(chunk_length=None)
    whole = model.predict([x], times=[times])
    np.testing.assert_allclose(np.asarray(chunked), np.asarray(whole), rtol=1e-4, atol=1e-5)


def test_what_cannot_be_chunked_raises_naming_chunk_length():
    X, y, times = _series((40, 30))
    per_series = np.array([0.0, 1.0])
    with pytest.raises(ValueError, match="chunk_length needs per-step targets"):
        S5Regressor(chunk_length=16, max_epochs=1, **TINY).fit(X, per_series, times=times)
    with pytest.raises(ValueError, match="chunk_length.*bidirectional"):
        S5Regressor(chunk_length=16, bidirectional=True, max_epochs=1, **TINY).fit(X, y, times=times)
    with pytest.raises(ValueError, match="chunk_length"):
        S5Regressor(chunk_length=4, max_epochs=1, **TINY).fit(X, y, times=times)
    failed = S5Regressor(chunk_length=16, max_epochs=1, **TINY)
    with pytest.raises(ValueError):
        failed.fit(X, per_series, times=times)
    assert not hasattr(failed, "model_")  # a refused fit leaves the estimator unfitted


def test_a_chunked_fit_from_parquet_equals_the_same_fit_in_memory(tmp_path):
    """Truncated back-propagation over streamed data: the chunks of the
    same batches (every series in one batch), so the same losses and
    predictions as in memory, to float32 rounding."""
    pytest.importorskip("pyarrow")
    from test_parquet import SMALL, long_frame, write

    df = long_frame()
    df["v"] = 2.0 * df["a"] + 0.1 * df["time"]  # a per-step target
    X, y = df.drop(columns=["y", "v"]), df.set_index(["id", "time"])["v"]
    path = write(X, tmp_path, files=3, row_group_size=11)
    kw = dict(SMALL, max_epochs=3, chunk_length=8, min_epoch_steps=None)
    streamed = S5Regressor(**kw).fit(path, y)
    memory = S5Regressor(**kw).fit(X, y)
    assert streamed.per_step_ and memory.per_step_
    assert len(streamed.history_) == 3
    assert [r["train_loss"] for r in streamed.history_] == pytest.approx([r["train_loss"] for r in memory.history_], rel=1e-4)
    np.testing.assert_allclose(
        streamed.predict(path).to_numpy(), memory.predict(X, as_frame=True).to_numpy(), rtol=1e-3, atol=1e-3
    )
