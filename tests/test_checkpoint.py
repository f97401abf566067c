"""Resumable fits (`checkpoint_dir`): a fit killed or interrupted mid-run and
started again with the same directory ends with the model of an
uninterrupted fit; a checkpoint of another fit is refused."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

from s5ts import S5Regressor
from s5ts.training import Checkpoints, saved_fingerprint

pytest.importorskip("orbax.checkpoint")

# A tiny model and data: what matters is the state carried between epochs.
# validation_fraction and observation_dropout="auto" make the generator's
# state matter; tol=0.5 makes early stopping count epochs without a real
# gain, so its state matters too.
PARAMS = dict(
    n_layers=1,
    d_model=4,
    state_size=2,
    batch_size=8,
    min_epoch_steps=None,
    validation_fraction=0.25,
    observation_dropout="auto",
    warmup_epochs=1,
    n_iter_no_change=4,
    tol=0.5,
)


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, 10, (n, 10)), axis=1)
    X = np.sin(times)[..., None]
    return X, X[:, -1, 0], times


def _saved_epochs(directory) -> list[int]:
    """The complete checkpoints' epochs (Orbax renames a checkpoint's
    temporary directory to its number once it is written)."""
    if not os.path.isdir(directory):
        return []
    return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


def _assert_same_fit(a, b, X, times):
    np.testing.assert_array_equal(a.predict(X, times=times), b.predict(X, times=times))
    for x, y in zip(jax.tree.leaves(a.model_), jax.tree.leaves(b.model_)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert a.best_epoch_ == b.best_epoch_
    drop = ("seconds", "train_seconds", "compile_seconds")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a.history_] == [
        {k: v for k, v in r.items() if k not in drop} for r in b.history_
    ]
    assert a._rng_.bit_generator.state == b._rng_.bit_generator.state


_CHILD = """
import time
import numpy as np
from s5ts import S5Regressor
from s5ts.training import Checkpoints

save = Checkpoints.save

def slow_save(self, loop):
    save(self, loop)
    time.sleep(0.5)  # a window for the parent's kill; changes nothing computed

Checkpoints.save = slow_save
rng = np.random.default_rng(0)
times = np.sort(rng.uniform(0, 10, (24, 10)), axis=1)
X = np.sin(times)[..., None]
S5Regressor(checkpoint_dir={directory!r}, max_epochs=8, n_iter_no_change=None, **{params!r}).fit(
    X, X[:, -1, 0], times=times
)
"""


def test_a_fit_killed_by_sigkill_and_restarted_ends_as_an_uninterrupted_one(tmp_path, monkeypatch):
    directory = str(tmp_path / "run")
    params = {k: v for k, v in PARAMS.items() if k != "n_iter_no_change"}
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_CHILD.format(directory=directory, params=params))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    try:
        while not any(e >= 2 for e in _saved_epochs(directory)):
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint of epoch 2 within 240 s"
            time.sleep(0.05)
        time.sleep(0.3)  # into the pause after a save or the next epoch
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stderr.close()
    assert 2 <= max(_saved_epochs(directory)) < 8  # killed mid-run
    seed = saved_fingerprint(directory)["seed"]

    # random_state=None: the restarted fit must take the checkpoint's seed.
    X, y, times = _data()
    resumed = S5Regressor(checkpoint_dir=directory, max_epochs=8, n_iter_no_change=None, **params)
    resumed.fit(X, y, times=times)
    assert len(resumed.history_) == 8 and max(_saved_epochs(directory)) == 8

    # The reference: the same seed, no checkpoints, never interrupted.
    class Seeded:
        def randint(self, high):
            return seed

    monkeypatch.setattr("s5ts.estimators._base.check_random_state", lambda _: Seeded())
    reference = S5Regressor(max_epochs=8, n_iter_no_change=None, **params).fit(X, y, times=times)
    _assert_same_fit(resumed, reference, X, times)


class _Stop(Exception):
    pass


def test_a_fit_stopped_after_a_checkpoint_continues_exactly_with_its_early_stopping(tmp_path, monkeypatch):
    X, y, times = _data()
    reference = S5Regressor(max_epochs=12, random_state=0, **PARAMS).fit(X, y, times=times)
    assert 4 < len(reference.history_) < 12  # early stopping ends it, after the interruption

    save = Checkpoints.save

    def save_then_fail(self, loop):
        save(self, loop)
        if loop.epochs_done == 3:
            raise _Stop

    monkeypatch.setattr(Checkpoints, "save", save_then_fail)
    directory = tmp_path / "run"
    model = S5Regressor(max_epochs=12, random_state=0, checkpoint_dir=directory, **PARAMS)
    with pytest.raises(_Stop):
        model.fit(X, y, times=times)
    assert not hasattr(model, "model_")  # the fit transaction holds
    assert _saved_epochs(directory) == [2, 3]  # max_to_keep
    monkeypatch.setattr(Checkpoints, "save", save)

    model.fit(X, y, times=times)  # continues from epoch 3
    _assert_same_fit(model, reference, X, times)
    assert max(_saved_epochs(directory)) == len(reference.history_)

    # A finished fit's checkpoint is restored without training.
    monkeypatch.setattr("s5ts.training._loop.train_step", None)  # any training step would fail
    again = S5Regressor(max_epochs=12, random_state=0, checkpoint_dir=directory, **PARAMS).fit(X, y, times=times)
    _assert_same_fit(again, reference, X, times)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt") / "run"
    X, y, times = _data()
    S5Regressor(max_epochs=1, random_state=0, checkpoint_dir=directory, **PARAMS).fit(X, y, times=times)
    return directory


@pytest.mark.parametrize(
    "change, message",
    [
        ({"learning_rate": 0.02}, "learning_rate was 0.01 there, 0.02 now"),
        ({"max_epochs": 2}, "max_epochs was 1 there, 2 now"),
        ({"random_state": 1}, "the seed drawn from random_state was"),
    ],
)
def test_a_checkpoint_of_other_parameters_is_refused(finished_run, change, message):
    X, y, times = _data()
    model = S5Regressor(**{"max_epochs": 1, "random_state": 0, "checkpoint_dir": finished_run, **PARAMS, **change})
    with pytest.raises(ValueError, match=f"holds a checkpoint of another training: .*{message}.*delete"):
        model.fit(X, y, times=times)
    assert not hasattr(model, "model_")


def test_a_checkpoint_of_other_data_is_refused(finished_run):
    X, y, times = _data()
    model = S5Regressor(max_epochs=1, random_state=0, checkpoint_dir=finished_run, **PARAMS)
    with pytest.raises(ValueError, match=r"training data \(X, y, sample_weight or validation_data\) differs"):
        model.fit(X, y[::-1], times=times)
    with pytest.raises(ValueError, match="n_series was 24 there, 23 now"):
        model.fit(X[:-1], y[:-1], times=times[:-1])
    assert not hasattr(model, "model_")


def test_settings_that_change_nothing_computed_may_differ(finished_run):
    X, y, times = _data()
    model = S5Regressor(max_epochs=1, random_state=0, checkpoint_dir=finished_run, checkpoint_every=3, **PARAMS)
    assert len(model.fit(X, y, times=times).history_) == 1


def test_checkpoints_do_not_continue_a_warm_start_or_partial_fit(tmp_path, finished_run):
    X, y, times = _data()
    with pytest.raises(ValueError, match="cannot continue partial_fit"):
        S5Regressor(checkpoint_dir=tmp_path, **PARAMS).partial_fit(X, y, times=times)
    model = S5Regressor(max_epochs=1, random_state=0, warm_start=True, checkpoint_dir=finished_run, **PARAMS)
    model.fit(X, y, times=times)  # the first fit of a warm_start estimator is a fit
    history = model.history_
    with pytest.raises(ValueError, match="cannot continue a warm start of a fitted estimator"):
        model.fit(X, y, times=times)
    assert model.history_ is history


def test_a_checkpoint_dir_without_orbax_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "orbax", None)
    monkeypatch.setitem(sys.modules, "orbax.checkpoint", None)
    X, y, times = _data()
    model = S5Regressor(checkpoint_dir=tmp_path / "run", **PARAMS)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[scale\]" in the s5ts checkout'):
        model.fit(X, y, times=times)
    assert not hasattr(model, "model_")
    assert not (tmp_path / "run").exists()
