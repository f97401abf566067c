"""DSSRegressor: the DSS baseline behind the same scikit-learn interface as
S5Regressor: a final class over `SequenceRegressor` (inputs, preprocessing,
fit transaction, persistence, predictions) whose network is a `DSSNetwork`,
with the S5 network's parameters that DSS shares and two of its own,
`kernel` and `loss`."""

from __future__ import annotations

import equinox as eqx
import jax
from sklearn.utils._param_validation import StrOptions

from ..estimators import (
    S5_PARAMETERS,
    TRAINING_CONSTRAINTS,
    Regression,
    S5Regressor,
    SequenceRegressor,
    SharedParameters,
    time_handling_for,
)
from ..nn import GaussianHead, make_encoder, pooled_width
from ..training import TrainingConfig
from ._dss import DSS_KERNELS, DSSBlock, DSSNetwork

#: The S5 network's parameters that mean the same for DSS (with `state_size`
#: the N complex eigenvalues of each channel), and the training ones.
_DSS_NETWORK = (
    "n_layers", "d_model", "state_size", "init", "activation", "prenorm", "dt_min", "dt_max", "dropout",
    "pooling", "time_handling", "ssm_learning_rate", "min_epoch_steps", "observation_dropout", "scan",
)
_PARAMETERS = SharedParameters(
    tuple(p.name for p in S5_PARAMETERS if p.name in TRAINING_CONSTRAINTS or p.name in _DSS_NETWORK)
)


class DSSRegressor(SequenceRegressor):
    r"""Regression with a DSS network (Gupta et al., 2022: H independent
    diagonal state spaces per layer) in place of S5's, for comparison with
    `S5Regressor`: the same inputs, targets (one per series or per step),
    preprocessing, training (`observation_dropout="auto"` too: long series
    thinned to a budget, in training and, as the mean over thinned copies,
    in prediction) and persistence.

    **Parameters:** `kernel` ("exp": DSS-EXP; "softmax": DSS-softmax),
    `loss` ("mse" | "gaussian_nll"), and those of `S5Regressor` that DSS
    shares: `n_layers`, `d_model` (H channels), `state_size` (N complex
    eigenvalues per channel), `init`, `activation`, `prenorm`, `dropout`,
    `dt_min`/`dt_max`, `encoder`, `pooling`, `time_handling`, `first_gap`,
    `hold_ends`, `standardize`, `scan`, and the training, checkpoint and input ones
    (`ssm_learning_rate` is λ's and log Δ's).

    `time_handling` decides how the layers run: `"gaps"` (default) runs the
    DSS-EXP recurrence over each step's gap; `"drop"` (every gap 1) and
    `"append"` (every gap 1, the real gap appended as an input) run the
    layers as FFT convolutions over the steps. DSS-softmax exists on a
    regular grid only, so `kernel="softmax"` needs `"drop"` or `"append"`.

    >>> import numpy as np
    >>> from s5ts.baselines import DSSRegressor
    >>> rng = np.random.default_rng(0)
    >>> times = np.sort(rng.uniform(0, 10, (20, 12)), axis=1)
    >>> X = np.sin(times)[..., None]
    >>> model = DSSRegressor(d_model=8, state_size=4, max_epochs=2, random_state=0)
    >>> model.fit(X, X[:, -1, 0], times=times).predict(X, times=times).shape
    (20,)
    """

    _parameter_constraints = {
        **_PARAMETERS.constraints(),
        "kernel": [StrOptions(set(DSS_KERNELS))],
        "loss": S5Regressor._parameter_constraints["loss"],
    }
    # What a warm start must not change (it would silently keep the old network).
    _architecture_names = (
        "kernel", "loss", "n_layers", "d_model", "state_size", "init", "activation", "prenorm", "dropout",
        "encoder", "pooling", "time_handling", "first_gap", "hold_ends", "standardize", "scan",
    )

    @_PARAMETERS
    def __init__(self, *, kernel="exp", loss="mse", **shared):
        self.kernel = kernel
        self.loss = loss
        _PARAMETERS.assign(self, shared)

    @property
    def _time_handling(self) -> str:
        return self.time_handling

    def _task(self) -> Regression:
        return Regression(self.loss)

    def _config(self, lengths=None) -> TrainingConfig:
        return TrainingConfig.from_estimator(self, **time_handling_for(self.time_handling).thinning(self.observation_dropout))

    def _check_relations(self) -> None:
        if self.dt_min > self.dt_max:
            raise ValueError(f"dt_min must be <= dt_max, got {self.dt_min!r} > {self.dt_max!r}")
        if not DSS_KERNELS[self.kernel].has_recurrence and self.time_handling == "gaps":
            raise ValueError(
                f"kernel={self.kernel!r} runs on regular grids only (its softmax normalises over all the "
                "steps), so it cannot step over the gaps: set time_handling='drop' or 'append', or kernel='exp'"
            )

    def build_network(self, n_inputs, per_step, n_outputs, key) -> DSSNetwork:
        k_enc, k_proj, k_head, k_blocks = jax.random.split(key, 4)
        blocks = [
            DSSBlock(
                self.d_model, self.state_size, self.kernel, self.init, self.dt_min, self.dt_max, self.scan,
                self.activation, self.dropout, self.prenorm, key=k,
            )
            for k in jax.random.split(k_blocks, self.n_layers)
        ]
        pooling = "none" if per_step else self.pooling
        n_in = pooled_width(pooling, self.d_model)
        if self.loss == "gaussian_nll":
            head = GaussianHead(n_in, n_outputs, self.d_model, key=k_head)
        else:
            head = eqx.nn.Linear(n_in, n_outputs, key=k_head)
        time_handling = time_handling_for(self.time_handling)
        return DSSNetwork(
            make_encoder(self.encoder, n_inputs, key=k_enc),
            blocks,
            head,
            regular=time_handling.name != "gaps",
            n_extra=time_handling.n_extra,
            pooling=pooling,
            key=k_proj,
        )
