"""Several processes, one fit (`s5ts.distributed`, `jax.distributed`).

Two local processes of one CPU device each, started by `python -m
s5ts.distributed` with gloo collectives, fit the same estimator on the same
data as this single process does: their models and predictions must equal
this process's up to float32 rounding, and each other's exactly. A process
that dies makes the other fail (JAX's heartbeats), not hang."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from s5ts.distributed import initialize, is_distributed, is_primary, launch_local, process_environment
from s5ts.training import Sequences, iterate_batches, padded_batch, placement_for, saved_fingerprint, thin_observations
from s5ts.training._distributed import COORDINATOR, NUM_PROCESSES, PROCESS_ID

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The data and the fits, for this process and the launched ones.
SETUP = textwrap.dedent(
    """
    import equinox as eqx
    import jax
    import numpy as np
    from s5ts import S5Classifier, S5Regressor

    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 30, size=22)  # 16 + 6 series: short last batches
    times = [np.cumsum(rng.exponential(1.0, n)) for n in lengths]
    X = [np.column_stack([np.sin(t), rng.normal(size=n)]).astype(np.float32) for t, n in zip(times, lengths)]
    y = np.array([x[:, 0].mean() for x in X])
    common = dict(n_layers=1, d_model=8, state_size=4, max_epochs=2, batch_size=8, random_state=0,
                  validation_fraction=0.25)


    def parameters(est):
        leaves = jax.tree.leaves(eqx.filter(est.model_, eqx.is_inexact_array))
        return np.concatenate([np.ravel(np.asarray(leaf)) for leaf in leaves])


    def fit_predict(name):
        if name == "S5Regressor":
            est = S5Regressor(**common).fit(X, y, times=times)
            return est, est.predict(X, times=times)
        est = S5Classifier(observation_dropout=0.3, **common).fit(X, y > np.median(y), times=times)
        return est, est.predict_proba(X, times=times)
    """
)

PROCESS = SETUP + textwrap.dedent(
    """
    import pickle, sys
    from s5ts.distributed import is_primary
    from s5ts.training import placement_for

    assert jax.process_count() == 2 and len(jax.local_devices()) == 1, jax.devices()
    assert is_primary() == (jax.process_index() == 0)
    assert placement_for(8).n_devices == 2 and placement_for(8).local_rows.stop - placement_for(8).local_rows.start == 4
    out = {}
    for name in sys.argv[2:]:
        est, out[name] = fit_predict(name)
        out[name + " parameters"] = parameters(est)
        # each process keeps its model on its own device, like any user's arrays
        leaves = [l for l in jax.tree.leaves(est.model_) if isinstance(l, jax.Array)]
        assert leaves and all(l.is_fully_addressable and len(l.devices()) == 1 for l in leaves), name
        pickle.loads(pickle.dumps(est))
    np.savez(f"{sys.argv[1]}.{jax.process_index()}.npz", **out)
    """
)


def _environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for name in (COORDINATOR, NUM_PROCESSES, PROCESS_ID, "JAX_NUM_CPU_DEVICES"):
        env.pop(name, None)
    return env


def _launch(tmp_path, script: str, *args, timeout=600):
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run(
        [sys.executable, "-m", "s5ts.distributed", "--processes", "2", str(path), *args],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=tmp_path,
        timeout=timeout,
    )


def _fit_as_one(tmp_path, names):
    result = _launch(tmp_path, PROCESS, str(tmp_path / "out"), *names)
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = (np.load(tmp_path / f"out.{i}.npz") for i in range(2))
    namespace: dict = {}
    exec(SETUP, namespace)
    for name in names:
        est, one = namespace["fit_predict"](name)
        for key, reference in ((name, one), (name + " parameters", namespace["parameters"](est))):
            # both processes hold the same model, bit for bit
            np.testing.assert_array_equal(first[key], second[key], err_msg=key)
            # and it is the one-process model: gradients summed over processes
            np.testing.assert_allclose(first[key], reference, rtol=1e-5, atol=1e-6, err_msg=key)


def test_two_processes_fit_as_one(tmp_path):
    _fit_as_one(tmp_path, ["S5Regressor"])


@pytest.mark.slow
def test_two_processes_fit_as_one_with_observation_dropout(tmp_path):
    """Dropped observations are drawn over the whole batch by every process."""
    _fit_as_one(tmp_path, ["S5Classifier"])


AGREE = SETUP + textwrap.dedent(
    """
    import sys
    from s5ts import S5Regressor

    out, folder = sys.argv[1], sys.argv[2]
    small = dict(n_layers=1, d_model=8, state_size=4, max_epochs=2, batch_size=8, validation_fraction=0.25)
    # random_state=None: process 0's seed on both (each would draw its own)
    free = S5Regressor(random_state=None, **small).fit(X, y, times=times)
    # checkpoints across processes: written once, restored by both
    first = S5Regressor(random_state=None, checkpoint_dir=folder, **small).fit(X, y, times=times)
    again = S5Regressor(random_state=None, checkpoint_dir=folder, **small).fit(X, y, times=times)
    # other data on process 1: a ValueError on both, not a silent mixture
    other = y + jax.process_index()
    try:
        S5Regressor(random_state=0, **small).fit(X, np.sin(other), times=times)
        message = ""
    except ValueError as error:
        message = str(error)
    np.savez(f"{out}.{jax.process_index()}.npz", free=parameters(free), first=first.predict(X, times=times),
             again=again.predict(X, times=times), epochs=len(again.history_), message=message)
    """
)


def test_two_processes_agree_on_seed_data_and_checkpoints(tmp_path):
    result = _launch(tmp_path, AGREE, str(tmp_path / "out"), str(tmp_path / "checkpoints"))
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = (np.load(tmp_path / f"out.{i}.npz") for i in range(2))
    np.testing.assert_array_equal(first["free"], second["free"])
    for out in (first, second):
        np.testing.assert_array_equal(out["again"], out["first"])  # restored, not trained again
        assert int(out["epochs"]) == 2
        assert "process 1 was given other training data than process 0" in str(out["message"])
    np.testing.assert_array_equal(first["first"], second["first"])


DIES = textwrap.dedent(
    """
    import os, signal, sys, threading
    import jax
    import numpy as np
    from s5ts import S5Regressor

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(20, 2)).astype(np.float32) for _ in range(16)]
    y = rng.normal(size=16)
    if jax.process_index() == int(sys.argv[1]):
        threading.Timer(15.0, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    S5Regressor(n_layers=1, d_model=8, state_size=4, max_epochs=10**6, n_iter_no_change=None,
                batch_size=8, random_state=0).fit(X, y)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("dead", [0, 1])
def test_a_dead_process_fails_the_other(tmp_path, dead):
    """Process `dead` is killed mid-training (its fit would run for hours):
    the job ends within the subprocess timeout, non-zero, and the survivor
    says why (JAX's coordination service: missing heartbeats, or the
    coordinator gone)."""
    result = _launch(tmp_path, DIES, str(dead), timeout=240)
    assert result.returncode != 0
    assert "Terminating process because the JAX distributed service detected fatal errors" in result.stderr
    assert result.stderr.count("Terminating process") == 1, result.stderr[-4000:]


RESUME = SETUP + textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from s5ts import S5Regressor

    out, folder, kill = sys.argv[1], sys.argv[2], sys.argv[3] == "kill"
    if kill and jax.process_index() == 1:
        def watch():  # killed once the directory holds epoch 2's checkpoint
            while not os.path.isdir(os.path.join(folder, "2")):
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=watch, daemon=True).start()
    from s5ts.training import _loop
    steps, step = [0], _loop.train_step

    def counted(*args):  # optimiser steps this run takes
        steps[0] += 1
        return step(*args)

    _loop.train_step = counted
    est = S5Regressor(n_layers=1, d_model=8, state_size=4, max_epochs=6, batch_size=8, validation_fraction=0.25,
                      random_state=0, checkpoint_dir=folder).fit(X, y, times=times)
    np.savez(f"{out}.{jax.process_index()}.npz", parameters=parameters(est), epochs=len(est.history_),
             steps=steps[0])
    """
)


@pytest.mark.slow
def test_two_processes_resume_a_killed_fit(tmp_path):
    """Process 1 is SIGKILLed after the checkpoint of epoch 2; the job fails
    (heartbeats), and the same two-process job started again continues from
    the directory to the model of an uninterrupted two-process fit."""
    killed = _launch(tmp_path, RESUME, str(tmp_path / "x"), str(tmp_path / "ck"), "kill", timeout=240)
    assert killed.returncode != 0
    resumed = _launch(tmp_path, RESUME, str(tmp_path / "resumed"), str(tmp_path / "ck"), "run")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert saved_fingerprint(str(tmp_path / "ck")) is not None
    whole = _launch(tmp_path, RESUME, str(tmp_path / "whole"), str(tmp_path / "ck2"), "run")  # uninterrupted
    assert whole.returncode == 0, whole.stderr[-4000:]
    for i in range(2):
        a, b = np.load(tmp_path / f"resumed.{i}.npz"), np.load(tmp_path / f"whole.{i}.npz")
        assert int(a["epochs"]) == int(b["epochs"]) == 6
        assert 0 < int(a["steps"]) <= 4 / 6 * int(b["steps"])  # epochs 3-6 only: resumed, not redone
        np.testing.assert_array_equal(a["parameters"], b["parameters"])


# ----- in this process: one process, nothing distributed -----


def test_one_process_is_primary_and_not_distributed(monkeypatch):
    for name in (COORDINATOR, NUM_PROCESSES, PROCESS_ID):
        monkeypatch.delenv(name, raising=False)
    assert is_primary() and not is_distributed()
    assert initialize() is False  # nothing configured: left single-process
    assert placement_for(8).local_rows is None


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(coordinator_address="127.0.0.1:1234", num_processes=2), PROCESS_ID),
        (dict(num_processes=2, process_id=0), COORDINATOR),
        (dict(coordinator_address="127.0.0.1", num_processes=2, process_id=0), "host:port"),
        (dict(coordinator_address="127.0.0.1:1234", num_processes=2, process_id=2), r"process_id must be in \[0, 1\]"),
        (dict(coordinator_address="127.0.0.1:1234", num_processes=2, process_id=0, heartbeat_timeout=0),
         "heartbeat_timeout"),
    ],
)
def test_initialize_names_what_is_wrong(monkeypatch, arguments, message):
    for name in (COORDINATOR, NUM_PROCESSES, PROCESS_ID):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=message):
        initialize(**arguments)
    assert not jax.distributed.is_initialized()


def test_initialize_reads_the_environment(monkeypatch):
    monkeypatch.setenv(COORDINATOR, "127.0.0.1:1234")
    monkeypatch.setenv(NUM_PROCESSES, "two")
    with pytest.raises(ValueError, match=NUM_PROCESSES):
        initialize()


def test_launcher_environment_and_bad_script(tmp_path):
    env = process_environment(1, 2, 4321, base={"PATH": "/bin"})
    assert env[COORDINATOR] == "127.0.0.1:4321" and env["JAX_COORDINATOR_BIND_ADDRESS"] == "127.0.0.1:4321"
    assert (env[NUM_PROCESSES], env[PROCESS_ID], env["PATH"]) == ("2", "1", "/bin")
    with pytest.raises(ValueError, match="missing.py"):
        launch_local(str(tmp_path / "missing.py"))
    with pytest.raises(ValueError, match="processes"):
        launch_local(__file__, processes=0)


def _sequences(n=11):
    rng = np.random.default_rng(1)
    lengths = rng.integers(3, 12, size=n)
    return Sequences(
        inputs=tuple(rng.normal(size=(k, 2)).astype(np.float32) for k in lengths),
        gaps=tuple(rng.exponential(1.0, k).astype(np.float32) for k in lengths),
        targets=rng.normal(size=(n, 1)).astype(np.float32),
    )


def test_empty_share_of_a_batch_is_padding():
    """A process whose rows of a short last batch hold no series pads them."""
    batch = padded_batch(_sequences(), np.array([], np.int64), 4, 8)
    assert batch["u"].shape == (4, 8, 2) and not batch["mask"].any() and not batch["weights"].any()


def test_observation_dropout_drawn_as_before():
    """Thinning drawn over the batch's mask from the lengths is the same as
    thinning the padded batch (`thin_observations`), so one-process fits
    draw what they drew before."""
    data = _sequences()
    got = list(iterate_batches(data, 4, shuffle=True, rng=np.random.default_rng(3), observation_dropout=0.4))
    rng = np.random.default_rng(3)
    from s5ts.data import assign_buckets, make_batches, plan_buckets

    buckets = plan_buckets(data.lengths, cap=True)
    padded = assign_buckets(data.lengths, buckets)
    for indices in make_batches(data.lengths, 4, shuffle=True, rng=rng, buckets=buckets):
        expected = thin_observations(padded_batch(data, indices, 4, int(padded[indices[0]])), 0.4, rng)
        got_indices, batch = got.pop(0)
        np.testing.assert_array_equal(got_indices, indices)
        for key in expected:
            np.testing.assert_array_equal(batch[key], expected[key], err_msg=key)
    assert not got
