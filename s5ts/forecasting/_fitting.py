"""What the forecaster's fits in memory and from Parquet compute alike
from its parameters: the horizon in seconds, the plan of training windows,
the training of the network, and the fitted attributes. Each takes the
forecaster's settings as arguments (the two fits call no method of the
forecaster's)."""

from __future__ import annotations

import math
from numbers import Real

import jax
import numpy as np
import pandas as pd

from ..training import NetworkSpec, Sequences, TrainingConfig, check_same_data, data_digest, is_distributed, train
from ._network import query_nll
from ._steps import StepLayout
from ._windows import WindowPlan, copies_for


def horizon_seconds(value, spans, time_kind: str, time_scale: float) -> float:
    """The longest lead trained for, in seconds (model time for numeric
    times): `value` (a Timedelta for datetime or timedelta times, a
    positive number for numeric ones), or, when None, a quarter of the
    median span of the series (ten median gaps when none spans any time).
    A `ValueError` names the horizon of the wrong kind."""
    if value is None:
        spans = spans[spans > 0]
        span = float(np.median(spans)) if len(spans) else 0.0
        return span / 4 if span > 0 else 10.0 * time_scale
    if isinstance(value, pd.Timedelta) or isinstance(value, np.timedelta64):
        if time_kind == "numeric":
            raise ValueError(f"horizon {value!r} is a Timedelta, but y is indexed by numbers: give a number")
        return pd.Timedelta(value).total_seconds()
    if time_kind != "numeric":
        raise ValueError(f"horizon {value!r}: y is indexed by {time_kind}s, so give the horizon as a Timedelta")
    if not (isinstance(value, Real) and math.isfinite(value) and value > 0):
        raise ValueError(f"horizon must be positive, got {value!r}")
    return float(value)


def window_plan(forecaster, lead: float, stops, seed: int) -> WindowPlan:
    """The training windows of `forecaster`'s `window_length`, `n_queries`
    and `batch_size` for leads up to `lead`, each series' windows ending
    before its held-out start (`stops`)."""
    length = int(forecaster.window_length)
    return WindowPlan(length, int(forecaster.n_queries), lead, copies_for(stops, length, forecaster.batch_size), seed)


def train_network(forecaster, layout: StepLayout, train_data, valid_data, seed: int):
    """(the trained `MultiHorizonNetwork`, the history) from examples
    (`Sequences` or `StreamedSequences`), with `forecaster`'s training
    settings and network (`NetworkSpec`). Across processes every one must
    hold the same examples in memory (checked)."""
    if is_distributed() and isinstance(train_data, Sequences):
        check_same_data(data_digest(train_data, valid_data))
    rng = np.random.default_rng(seed)
    config = TrainingConfig.from_estimator(forecaster)
    result = train(
        config.initial_state(NetworkSpec.of(forecaster, layout.n_inputs, layout.d), jax.random.key(seed)),
        train_data,
        valid_data,
        query_nll,
        query_nll,  # early stopping on the held-out likelihood: means and intervals
        config,
        rng=rng,
        key=jax.random.key(int(rng.integers(2**31 - 1))),
        metric_name="nll",
    )
    return result.model, list(result.state.history)


def fitted_attributes(model, history, layout, lead, calibration, states, meta, default_scale, x_mean, x_std) -> dict:
    """The forecaster's fitted attributes, assigned together at the end of `fit`."""
    return {
        "network_": model,
        "history_": history,
        "time_scale_": layout.time_scale,
        "horizon_": lead,
        "cycles_": layout.cycles,
        "calibration_": calibration,
        "series_": states,
        "_layout": layout,
        "_meta": meta,
        "_default_scale": default_scale,
        "_x_mean": x_mean,
        "_x_std": x_std,
    }
