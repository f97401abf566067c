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
    # long series, most past the rate of observation_dropout="auto"'s budget (more than
    # 128 / 0.7 observations): thinned to it in training, validated and predicted from copies
    long_rng = np.random.default_rng(1)
    long_times = [np.cumsum(long_rng.exponential(1.0, n)) for n in long_rng.integers(150, 320, size=12)]
    X_long = [np.sin(t * (1 + i % 2))[:, None] + long_rng.normal(size=(len(t), 1)) for i, t in enumerate(long_times)]


    def parameters(est):
        leaves = jax.tree.leaves(eqx.filter(est.model_, eqx.is_inexact_array))
        return np.concatenate([np.ravel(np.asarray(leaf)) for leaf in leaves])


    def fit_predict(name):
        if name == "S5Regressor":
            est = S5Regressor(**common).fit(X, y, times=times)
            return est, est.predict(X, times=times)
        if name == "S5Classifier":
            est = S5Classifier(observation_dropout=0.3, **common).fit(X, y > np.median(y), times=times)
            return est, est.predict_proba(X, times=times)
        est = S5Classifier(**common).fit(X_long, np.arange(12) % 2, times=long_times)
        return est, est.predict_proba(X_long, times=long_times)
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


def _launch(tmp_path, script: str, *args, timeout=600, devices=None):
    """`script args` as two processes, each of `devices` CPU devices (JAX's default, one, for None)."""
    path = tmp_path / "script.py"
    path.write_text(script)
    env = _environment()
    if devices is not None:
        env["JAX_NUM_CPU_DEVICES"] = str(devices)
    return subprocess.run(
        [sys.executable, "-m", "s5ts.distributed", "--processes", "2", str(path), *args],
        capture_output=True,
        text=True,
        env=env,
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


@pytest.mark.slow
def test_two_processes_fit_and_predict_long_series_from_copies_as_one(tmp_path):
    """Under the budget, every process thins alike in training and runs the
    same copies in validation and prediction."""
    _fit_as_one(tmp_path, ["S5ClassifierLong"])


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


# Parquet data across processes: 22 series in 4 files, each process reading its own.
PARQUET_DATA = textwrap.dedent(
    """
    import os
    import numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq

    def write_parquet(folder, bad=None):
        rng = np.random.default_rng(0)
        frames = []
        for i in range(22):
            L = int(rng.integers(4, 30))
            t = np.cumsum(rng.exponential(1.0, L))
            frames.append(pd.DataFrame({"id": f"s{i:02d}", "time": t, "a": np.sin(t), "b": rng.normal(size=L),
                                        "y": float(np.sin(t).mean())}))
        df = pd.concat(frames, ignore_index=True)
        if bad is not None:  # a time repeated in series `bad`
            rows = (df["id"] == bad).to_numpy().nonzero()[0]
            df.loc[rows[1], "time"] = df.loc[rows[0], "time"]
        os.makedirs(folder, exist_ok=True)
        for k, part in enumerate(np.array_split(df["id"].unique(), 4)):
            table = pa.Table.from_pandas(df[df["id"].isin(part)], preserve_index=False)
            pq.write_table(table, os.path.join(folder, f"part{k}.parquet"), row_group_size=50)
        return df

    def write_vitals(folder):  # vitals of 10 patients every 2 h or so, to forecast, in 5 files
        rng = np.random.default_rng(1)
        frames = []
        for i in range(10):
            h = np.cumsum(rng.exponential(2.0, int(rng.integers(40, 120))))
            frames.append(pd.DataFrame({"id": f"u{i}", "time": pd.Timestamp("2024-03-01") + pd.to_timedelta(h, unit="h"),
                                        "hr": 70 + 5 * np.sin(h / 12 + i), "temp": rng.normal(size=len(h))}))
        df = pd.concat(frames, ignore_index=True)
        os.makedirs(folder, exist_ok=True)
        for k, part in enumerate(np.array_split(df["id"].unique(), 5)):
            table = pa.Table.from_pandas(df[df["id"].isin(part)], preserve_index=False)
            pq.write_table(table, os.path.join(folder, f"part{k}.parquet"), row_group_size=40)
        return df
    """
)
FORECASTER = "dict(id_col='id', time_col='time', n_layers=1, d_model=8, state_size=4, max_epochs=2, random_state=0)"
PARQUET_COMMON = (
    "dict(n_layers=1, d_model=8, state_size=4, max_epochs=2, batch_size=32, random_state=0, "
    "validation_fraction=0.25, id_col='id', time_col='time', observation_dropout=0.0)"
)

PARQUET = PARQUET_DATA + textwrap.dedent(
    f"""
    import sys
    import equinox as eqx
    import jax
    from s5ts import S5Regressor
    from s5ts.data import ParquetSeries

    from s5ts.forecasting import Forecaster

    out, folder, other, bad, vitals = sys.argv[1:6]
    read = set()  # the files this process reads, by index
    plain_read, plain_lengths = ParquetSeries.read, ParquetSeries.series_lengths

    def reading(self, *args, **kwargs):
        for chunk in plain_read(self, *args, **kwargs):
            read.add(chunk.fragment)
            yield chunk

    def lengths(self, files=None):
        read.update(range(len(self.fragments)) if files is None else [int(f) for f in files])
        return plain_lengths(self, files)

    ParquetSeries.read, ParquetSeries.series_lengths = reading, lengths
    est = S5Regressor(**{PARQUET_COMMON}).fit(folder, "y")
    pred, score = est.predict(folder), est.score(folder, "y")
    estimator_read = sorted(read)
    parameters = np.concatenate(
        [np.ravel(np.asarray(l)) for l in jax.tree.leaves(eqx.filter(est.model_, eqx.is_inexact_array))]
    )
    messages = []
    for given in (other if jax.process_index() == 1 else folder, bad):  # other files on process 1; a bad series
        try:
            S5Regressor(**{PARQUET_COMMON}).fit(given, "y")
            messages.append("")
        except ValueError as error:
            messages.append(str(error))
    read.clear()
    forecaster = Forecaster(**{FORECASTER}).fit(vitals, X=["temp"])
    when = pd.DatetimeIndex([pd.Timestamp("2024-03-12"), pd.Timestamp("2024-03-13")])
    future = pd.DataFrame({{"temp": 0.0}}, index=pd.MultiIndex.from_product([list(forecaster.series_), when]))
    forecast = forecaster.predict(when, future).to_numpy()
    np.savez(f"{{out}}.{{jax.process_index()}}.npz", parameters=parameters, pred=pred.to_numpy(), score=score,
             ids=np.array(pred.index, dtype=str), read=np.array(estimator_read), messages=np.array(messages),
             forecast=forecast, forecast_read=np.array(sorted(read)),
             forecast_ids=np.array(list(forecaster.series_), dtype=str),
             forecast_losses=np.array([h["train_loss"] for h in forecaster.history_]),
             calibration=np.array(repr(forecaster.calibration_)),
             scales=np.array([forecaster.time_scale_, forecaster.horizon_.total_seconds()]))
    """
)


def test_two_processes_stream_parquet_each_reading_its_own_files(tmp_path):
    """Two processes fit, predict and score from a Parquet data set, each
    reading only its own files (the statistics, every epoch, the
    validation split and prediction), to the model one process fits from
    the same files (each bucket one batch here, so the same batches); a
    process given other files, or a bad series in one process's files,
    makes both raise the same ValueError. The forecaster fits from files
    too, each process reading its own: both processes the same forecaster,
    with one process's statistics (its batches differ: at least four an
    epoch)."""
    namespace: dict = {}
    exec(SETUP + PARQUET_DATA, namespace)
    folder, other, bad, vitals = (str(tmp_path / name) for name in ("data", "other", "bad", "vitals"))
    namespace["write_parquet"](folder)
    namespace["write_parquet"](other)
    os.remove(os.path.join(other, "part3.parquet"))
    namespace["write_parquet"](bad, bad="s20")  # in the last file
    namespace["write_vitals"](vitals)
    result = _launch(tmp_path, PARQUET, str(tmp_path / "out"), folder, other, bad, vitals)
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = (np.load(tmp_path / f"out.{i}.npz") for i in range(2))
    for key in ("parameters", "pred", "score", "ids"):
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    # each file read by one process alone
    assert set(first["read"]).isdisjoint(second["read"]) and set(first["read"]) | set(second["read"]) == {0, 1, 2, 3}
    for out in (first, second):
        assert "process 1 sees other files of" in str(out["messages"][0])
        assert "series 's20'" in str(out["messages"][1]) and "part3.parquet" in str(out["messages"][1])
    one = namespace["S5Regressor"](**eval(PARQUET_COMMON)).fit(folder, "y")
    pred = one.predict(folder)
    np.testing.assert_array_equal(first["ids"], np.array(pred.index, dtype=str))
    np.testing.assert_allclose(first["pred"], pred.to_numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first["score"], one.score(folder, "y"), rtol=1e-5)
    np.testing.assert_allclose(first["parameters"], namespace["parameters"](one), rtol=1e-5, atol=1e-6)
    # the forecaster
    for key in ("forecast", "forecast_ids", "forecast_losses", "calibration", "scales"):
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    assert set(first["forecast_read"]).isdisjoint(second["forecast_read"])
    assert set(first["forecast_read"]) | set(second["forecast_read"]) == set(range(5))
    from s5ts.forecasting import Forecaster

    alone = Forecaster(**eval(FORECASTER)).fit(vitals, X=["temp"])
    assert first["forecast_ids"].tolist() == list(alone.series_)
    np.testing.assert_array_equal(first["scales"], [alone.time_scale_, alone.horizon_.total_seconds()])
    assert np.isfinite(first["forecast"]).all() and first["forecast_losses"].shape == (2,)


DEVICES = SETUP + PARQUET_DATA + textwrap.dedent(
    f"""
    import sys
    from s5ts.training import placement_for

    out, folder = sys.argv[1:3]
    placement = placement_for(8)
    assert placement.n_devices == 4 and [(b.start, b.stop) for b in placement.process_rows] == [(0, 4), (4, 8)]
    est, pred = fit_predict("S5Regressor")
    streamed = S5Regressor(**{PARQUET_COMMON}).fit(folder, "y")
    np.savez(f"{{out}}.{{jax.process_index()}}.npz", pred=pred, parameters=parameters(est),
             streamed=streamed.predict(folder).to_numpy())
    """
)


def test_two_processes_of_two_devices_each(tmp_path):
    """Processes of several devices each (a host with several GPUs) supply
    the block of rows of all their devices, in memory and streamed: the
    models are one process's, up to float32 rounding."""
    namespace: dict = {}
    exec(SETUP + PARQUET_DATA, namespace)
    folder = str(tmp_path / "data")
    namespace["write_parquet"](folder)
    result = _launch(tmp_path, DEVICES, str(tmp_path / "out"), folder, devices=2)
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = (np.load(tmp_path / f"out.{i}.npz") for i in range(2))
    est, pred = namespace["fit_predict"]("S5Regressor")
    streamed = namespace["S5Regressor"](**eval(PARQUET_COMMON)).fit(folder, "y").predict(folder).to_numpy()
    for key, reference in (("pred", pred), ("parameters", namespace["parameters"](est)), ("streamed", streamed)):
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
        np.testing.assert_allclose(first[key], reference, rtol=1e-5, atol=1e-6, err_msg=key)


PARQUET_SLOW = PARQUET_DATA + textwrap.dedent(
    """
    import sys
    import jax
    from s5ts import S5Classifier
    from s5ts.training import _loop

    out, folder, checkpoints = sys.argv[1:4]
    steps, step = [0], _loop.train_step

    def counted(*args):
        steps[0] += 1
        return step(*args)

    _loop.train_step = counted
    small = dict(n_layers=1, d_model=8, state_size=4, max_epochs=2, batch_size=4, validation_fraction=0.25,
                 id_col="id", time_col="time", observation_dropout=0.3)
    df = write_parquet(folder)
    df["label"] = np.where(df["y"] > df["y"].median(), "up", "down")
    for k, part in enumerate(np.array_split(df["id"].unique(), 4)):
        pq.write_table(pa.Table.from_pandas(df[df["id"].isin(part)].drop(columns="y"), preserve_index=False),
                       os.path.join(folder, f"part{k}.parquet"), row_group_size=7)
    clf = S5Classifier(random_state=None, **small).fit(folder, "label")
    trained = steps[0]
    first = S5Classifier(random_state=0, checkpoint_dir=checkpoints, **small).fit(folder, "label")
    steps[0] = 0
    again = S5Classifier(random_state=0, checkpoint_dir=checkpoints, **small).fit(folder, "label")
    np.savez(f"{out}.{jax.process_index()}.npz", proba=clf.predict_proba(folder).to_numpy(), steps=trained,
             restored_steps=steps[0], first=first.predict_proba(folder).to_numpy(),
             again=again.predict_proba(folder).to_numpy())
    """
)


@pytest.mark.slow
def test_two_processes_stream_several_batches_with_dropout_and_checkpoints(tmp_path):
    """Several global batches per bucket (batch 4: two rows a process),
    observation dropout drawn over the whole batch, `random_state=None`
    and a checkpoint directory, streamed from files read by one process
    each: both processes train the same classifier, as many steps, and
    restore the finished checkpoint without a step."""
    result = _launch(tmp_path, PARQUET_SLOW, str(tmp_path / "out"), str(tmp_path / "data"), str(tmp_path / "ck"))
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = (np.load(tmp_path / f"out.{i}.npz") for i in range(2))
    for key in ("proba", "steps", "first", "again"):
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    assert int(first["steps"]) >= 2 * 17 // 4  # 17 training series, 4 rows a step, 2 epochs
    for out in (first, second):
        assert int(out["restored_steps"]) == 0
        np.testing.assert_array_equal(out["again"], out["first"])


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

    buckets = plan_buckets(data.lengths)
    padded = assign_buckets(data.lengths, buckets)
    for indices in make_batches(data.lengths, 4, shuffle=True, rng=rng, buckets=buckets):
        expected = thin_observations(padded_batch(data, indices, 4, int(padded[indices[0]])), 0.4, rng)
        got_indices, batch = got.pop(0)
        np.testing.assert_array_equal(got_indices, indices)
        for key in expected:
            np.testing.assert_array_equal(batch[key], expected[key], err_msg=key)
    assert not got
