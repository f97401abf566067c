"""Data parallelism over local devices (`s5ts.training._devices`).

The test process has one CPU device; a subprocess started with
`JAX_NUM_CPU_DEVICES=2` trains the same estimators with every batch split
over two devices, and its predictions must match this process's."""

import os
import re
import subprocess
import sys
import textwrap

import jax
import numpy as np

from s5ts.training import Placement, placement_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The data and estimators both processes build (the script runs this too).
SETUP = textwrap.dedent(
    """
    import numpy as np
    from s5ts import S5Regressor
    from s5ts.baselines import CRURegressor

    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 30, size=24)
    times = [np.cumsum(rng.exponential(1.0, n)) for n in lengths]
    X = [np.column_stack([np.sin(t), rng.normal(size=n)]).astype(np.float32) for t, n in zip(times, lengths)]
    per_series = np.array([x[:, 0].mean() for x in X])
    targets = {
        "S5Regressor": per_series,
        "S5Regressor, dropout": per_series,
        "S5Regressor, packed": per_series,
        "CRURegressor": [np.sin(t + 0.5)[:, None] for t in times],  # per step
        "S5Regressor, chunked": [np.sin(t + 0.5) for t in times],  # per step
    }
    common = dict(max_epochs=2, batch_size=8, random_state=0, validation_fraction=0.25)
    estimators = {
        "S5Regressor": S5Regressor(n_layers=1, d_model=8, state_size=4, **common),
        # each row keeps its dropout key when the rows are split (`_loop._loss_and_grads`)
        "S5Regressor, dropout": S5Regressor(n_layers=1, d_model=8, state_size=4, dropout=0.2, **common),
        "CRURegressor": CRURegressor(encoder="identity", latent_obs_size=3, hidden_size=8, **common),
        # truncated back-propagation through the same data-parallel step (`_backprop`)
        "S5Regressor, chunked": S5Regressor(n_layers=1, d_model=8, state_size=4, chunk_length=8, **common),
        # series packed end to end, a batch's rows split over the devices (`PackedSequences`)
        "S5Regressor, packed": S5Regressor(n_layers=1, d_model=8, state_size=4, packing=True, dropout=0.2, **common),
    }


    def fit_predict(name):
        est = estimators[name].fit(X, targets[name], times=times)
        if name in ("CRURegressor", "S5Regressor, chunked"):
            return est, np.concatenate(est.predict(X, times=times))
        return est, est.predict(X, times=times)
    """
)

TWO_DEVICES = SETUP + textwrap.dedent(
    """
    import pickle, sys
    import jax
    from s5ts.training import placement_for

    assert len(jax.devices()) == 2, jax.devices()
    assert placement_for(8).n_devices == 2
    batch = placement_for(8).put_batch({"u": np.zeros((8, 5, 2), np.float32)})
    assert len(batch["u"].sharding.device_set) == 2
    assert placement_for(1).n_devices == 1 and placement_for(3).n_devices == 1
    out = {}
    for name in estimators:
        est, out[name] = fit_predict(name)
        # fitted parameters live on one device, like any user's arrays
        leaves = [l for l in jax.tree.leaves(getattr(est, "model_", None)) if isinstance(l, jax.Array)]
        assert leaves and all(len(l.devices()) == 1 for l in leaves), name
        pickle.loads(pickle.dumps(est))
    np.savez(sys.argv[1], **out)
    """
)


def test_one_device_places_nothing():
    assert len(jax.devices()) == 1
    placement = placement_for(32)
    assert placement == Placement() and placement.n_devices == 1
    batch = {"u": np.zeros((32, 4, 2), np.float32)}
    assert placement.put_batch(batch) is batch


def _all_reduces(hlo: str) -> list[str]:
    """The operand lists of the all-reduces of an optimised HLO module."""
    return re.findall(r"all-reduce(?:-start)?\(([^)]*)\)", hlo)


def test_two_devices_train_and_predict_as_one(tmp_path):
    """The same fits with batches split over two CPU devices: each device
    takes the gradient of its rows and the sums are added across devices
    (`shard_map`), so the results agree up to float32 rounding.

    The compiled training steps (dumped by XLA) sum across devices once, one
    flat vector: XLA's CPU collectives make one round trip per operand, so
    an all-reduce of every gradient array took 13.6-106 ms across two
    processes against 1.9 ms (`_loop._loss_and_grads`)."""
    out = tmp_path / "two_devices.npz"
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2")
    dump = tmp_path / "hlo"
    env["S5TS_COMPILATION_CACHE"] = "0"  # programs read from the cache are not dumped
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + f" --xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*train_step.*"
    )
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES, str(out)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    steps = sorted(dump.glob("*jit_train_step*after_optimizations.txt"))
    assert steps, sorted(p.name for p in dump.iterdir())[:20]
    for path in steps:
        reduces = _all_reduces(path.read_text())
        assert len(reduces) == 1 and "," not in reduces[0], (path.name, reduces)
    two = np.load(out)
    namespace: dict = {}
    exec(SETUP, namespace)
    for name in namespace["estimators"]:
        _, one = namespace["fit_predict"](name)
        np.testing.assert_allclose(two[name], one, rtol=1e-5, atol=1e-6, err_msg=name)
