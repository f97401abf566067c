"""S5Regressor: sequence-level or per-step regression on irregular series."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..data import is_parquet_source
from ..nn import GaussianHead
from ._base import S5Estimator, SequenceEstimator, with_shared_parameters
from ._task import REGRESSION_LOSSES, Regression


class SequenceRegressor(RegressorMixin, SequenceEstimator):
    """The scikit-learn surface of a sequence regressor (`S5Regressor`,
    `CRURegressor`): `predict(return_std=)` in the targets' units, R²
    `score`, `partial_fit`; the task is a `Regression` (`_task`). Abstract."""

    def partial_fit(self, X, y, sample_weight=None, *, times=None):
        """One epoch over (X, y), continuing from the current model (no
        validation split; the optimiser state is kept between calls; the
        learning rate warms up over the first `warmup_epochs` calls, then
        stays at `learning_rate`).

        **Returns:** `self`.
        """
        return self._fit(X, y, times, sample_weight=sample_weight, partial=True)

    def predict(self, X, *, times=None, return_std=False, as_frame=False):
        """Predicted means: (n,) / (n, k) per series, or a list of (L_i,) /
        (L_i, k) arrays for per-step models. With `return_std=True`
        (`loss="gaussian_nll"` only) also the predictive standard deviations,
        in the same layout. With `as_frame=True`, pandas objects instead: a
        Series (1-D targets) or DataFrame (k targets, named as y's columns)
        indexed by the series ids, or for per-step models by `(series,
        time)`. A Parquet data set (a path or a `pyarrow.dataset.Dataset`,
        read with `id_col` / `time_col`) is streamed, and the result is
        always pandas, indexed by its ids in file order (for per-step
        models by `(id, time)`)."""
        check_is_fitted(self, "model_")
        # The fitted network's loss (a later `set_params` does not change its head).
        if return_std and self._architecture_.get("loss", self._task().loss) != "gaussian_nll":
            raise ValueError("return_std=True needs a Gaussian head: fit with loss='gaussian_nll'")
        panel, outputs, _, _ = self._predicted(X, times)
        means, stds = self._task().predictions(outputs, self._target_state, self.per_step_)
        if as_frame or is_parquet_source(X):
            columns = self._target_state.columns
            means = self._as_frame(means, panel, columns)
            stds = None if stds is None else self._as_frame(stds, panel, columns)
        return (means, stds) if return_std else means

    def score(self, X, y, sample_weight=None, *, times=None):
        """R² of the predictions. `y` is aligned with X as in `fit`; for
        per-step models R² is over all observations (a series' weight in
        `sample_weight` applies to each of its steps). A Parquet data set X
        is streamed, with `y` in any form `fit` takes (docs/scaling.md); a
        per-step model takes per-step targets."""
        panel, outputs, truth, sample_weight = self._predicted(X, times, y, sample_weight)
        prediction, _ = self._task().predictions(outputs, self._target_state, self.per_step_)
        if self.per_step_:
            if sample_weight is not None:
                sample_weight = np.repeat(np.asarray(sample_weight, np.float64), panel.lengths)
            truth, prediction = np.concatenate(truth), np.concatenate(prediction)
        return r2_score(truth, prediction, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class S5Regressor(SequenceRegressor, S5Estimator):
    r"""S5 regression on ragged, irregularly sampled series (scikit-learn API).

    Each series is a sequence of observations at strictly increasing times;
    the gap before each observation (in units of the median gap seen in
    `fit`) becomes that step's discretisation interval,
    $\bar\Lambda_k = e^{\Lambda\Delta g_k}$.

    **Inputs** (`fit`, `predict`): any format of `s5ts.data.to_panel` — a
    list of n DataFrames (L_i, d) indexed by time, a (series, time)
    MultiIndex frame, a long frame, a 3-D array (n, L, d) with `times=`
    (n, L), or a 2-D array (n, L). NaN in features means "not observed": the
    model sees scaled values (NaN → 0) plus an observed-channel mask.
    `standardize`: "global" (or True: every feature by the mean and standard
    deviation of all training values), "series" (each series by its own,
    plus its level and log-scale as two more channels per feature), False
    (as they are), or "auto" (the default: "series" when most of a
    feature's variance lies between series, in their levels or scales, else
    "global"; `preprocessing_.scaling` says which was used).

    **Targets:** one per series, `y` (n,) or (n, k) → `predict` returns
    (n,) or (n, k); or one per observation (a list of (L_i,) / (L_i, k)
    arrays, a MultiIndex Series/DataFrame aligned with X) → `predict`
    returns a list of n arrays (L_i,) / (L_i, k). Targets are standardised
    internally.

    **Main parameters:**

    - Architecture: `n_layers`, `d_model` (H), `state_size` (P complex
      states), `blocks` (J HiPPO-N blocks), `init` ("hippo" | "s4d_lin" |
      "s4d_inv" | "s4d_real": the initial Λ), `selective` (None | "scaled" |
      "split": each step's Δ selected from its input, with the real gap),
      `discretization` ("zoh" |
      "bilinear"), `bidirectional`, `activation` ("gelu" | "glu" |
      "half_glu" | "half_glu2"), `prenorm`, `dropout`, `dt_min`/`dt_max` (initial
      timescales), `encoder` ("identity" | "pendulum_cnn"), `pooling`
      ("max_mean" | "max" | "mean" | "last", for sequence-level targets).
    - Time: `time_handling` = "gaps" (S5) | "drop" (every gap 1: S5-drop) |
      "append" (gap 1 and the real gap appended as a feature: S5-append);
      `first_gap`, the interval before the first observation; `hold_ends`
      (each series read over the training window, its first and last
      observations held to the window's ends; one target per series);
      `input_hold`
      = "gap" (an observation's input is held over the gap before it: S5's
      ZOH) | "unit" (every observation weighs as after a unit gap: for
      event-like inputs) | "mixed" (half the states each).
    - Training: `loss` ("mse" | "gaussian_nll"), `max_epochs`, `batch_size`,
      `learning_rate`, `ssm_learning_rate` (Λ, B̃, log Δ: no weight decay),
      `weight_decay`, `warmup_epochs` (then cosine decay), `grad_clip`,
      `validation_fraction` and `n_iter_no_change` (early stopping on
      validation MSE, best parameters kept; "auto": 0.2 of the series
      from 100 training series on, none below), `min_epoch_steps` (an epoch
      makes this many optimiser steps, or one pass if that is more: a
      smaller data set is passed over until then, the last pass cut
      short; None: one pass), `observation_dropout` (each training batch drops
      each observation with this probability, its gap added to the next
      one's: augmentation for irregular series; "auto": 0.3, and series
      longer than about 180 observations thinned to about 128 and
      predicted as the mean over 8 such thinned copies, or 0 under
      `time_handling="drop"`), `time_warp` (σ of smooth random stretches
      of the training batches' gaps, never of predictions; "auto": 0.2
      under `time_handling="gaps"` where the training series have a
      median of at least 20 steps, else 0), `random_state`, `verbose`
      (progress bar), `warm_start`, `scan`.
    - Resumable fits: `checkpoint_dir` (None: no checkpoints; a directory:
      the fit saves its state there every `checkpoint_every` epochs, and a
      fit started again with it continues: see `fit`).
    - Very long series: `chunk_length` (None: whole series; an int ≥ 8,
      with per-step targets of a causal network: each batch is trained
      in consecutive chunks of that many steps, the states carried from
      one chunk to the next and the gradient stopped there (truncated
      back-propagation through time), one optimiser step per chunk, so
      memory is set by the chunk; `predict` runs the same chunks, with
      the same outputs as on whole series).

    **Fitted attributes:** `model_` (the Equinox network, best epoch),
    `history_` (per-epoch losses and validation scores), `best_epoch_`,
    `interrupted_` (stopped by Ctrl-C), `n_features_in_`,
    `feature_names_in_` (the feature columns seen in fit: "0", "1", … for
    arrays), `time_scale_` (median training gap; seconds for datetimes),
    `preprocessing_`, `per_step_`, `n_model_inputs_`, `n_parameters_`.

    A fit that fails leaves the estimator as it was; a non-finite loss
    raises `FloatingPointError` and keeps the best finished epoch; Ctrl-C
    keeps the best model so far with a warning. See `docs/estimators.md`.

    >>> import numpy as np
    >>> from s5ts import S5Regressor
    >>> rng = np.random.default_rng(0)
    >>> times = np.sort(rng.uniform(0, 10, (20, 12)), axis=1)
    >>> X = np.sin(times)[..., None]
    >>> y = X[:, -1, 0]
    >>> model = S5Regressor(d_model=8, state_size=4, max_epochs=2, random_state=0)
    >>> model.fit(X, y, times=times).predict(X, times=times).shape
    (20,)
    """

    _architecture_names = (*S5Estimator._architecture_names, "loss")

    @with_shared_parameters
    def __init__(self, *, loss="mse", **shared):
        super().__init__(**shared)
        self.loss = loss

    _parameter_constraints = {**S5Estimator._parameter_constraints, "loss": [StrOptions(set(REGRESSION_LOSSES))]}

    def _task(self) -> Regression:
        return Regression(self.loss)

    def _make_head(self, n_in, n_outputs, key):
        if self.loss == "gaussian_nll":
            return GaussianHead(n_in, n_outputs, self.d_model, key=key)
        return super()._make_head(n_in, n_outputs, key)
