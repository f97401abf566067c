"""CRURegressor: the CRU baseline behind the same scikit-learn interface as
S5Regressor: a final class over `SequenceRegressor` (inputs, preprocessing,
fit transaction, persistence, Gaussian predictions) with the task
`Regression("gaussian_nll")`, its own network and its own validated
parameters."""

from __future__ import annotations

from numbers import Integral

from jaxtyping import Array, Bool, Float, PRNGKeyArray
from sklearn.utils._param_validation import Interval, StrOptions

from ..estimators import TRAINING_CONSTRAINTS, Regression, SequenceRegressor, SharedParameters
from ..nn import AbstractSequenceModel
from ._cru import CRU


class CRUNetwork(AbstractSequenceModel):
    """Gives a `CRU` the call signature of `SequenceNetwork`, so the shared
    training loop can drive it (CRU has no dropout and no extra inputs)."""

    cru: CRU

    def __call__(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> tuple[Float[Array, "L K"], Float[Array, "L K"]]:
        return self.cru(u, gaps, mask)


#: The parameters every sequence estimator has (`TRAINING_CONSTRAINTS`: not
#: the S5 network's) but the S5 encoder, with CRU's published training
#: settings as defaults (Adam 1e-3, batch 50, no warm-up or clipping).
_TRAINING_PARAMETERS = SharedParameters(
    tuple(TRAINING_CONSTRAINTS),
    exclude=("encoder",),
    max_epochs=100,
    batch_size=50,
    learning_rate=1e-3,
    warmup_epochs=0,
    validation_fraction=0.1,
    grad_clip=None,
    standardize=False,
)


class CRURegressor(SequenceRegressor):
    """Per-step Gaussian regression with a Continuous Recurrent Unit
    (Schirmer et al., 2022), for comparison with `S5Regressor`.

    Inputs and targets are those of `S5Regressor` with per-step targets
    (a list of (L_i, k) arrays or DataFrames aligned with X); `predict(X,
    return_std=True)` gives per-step means and standard deviations.

    **Parameters:** `encoder` ("pendulum_cnn" | "identity"),
    `latent_obs_size` (m; the latent state has 2m), `num_basis` (K),
    `bandwidth`, `hidden_size`; and those of `S5Regressor` that are not
    the S5 network's (training, checkpoints, how X is read), with CRU's
    published training settings as defaults. The loss is always the
    Gaussian negative log-likelihood.
    """

    _parameter_constraints = {
        **_TRAINING_PARAMETERS.constraints(),
        "encoder": [StrOptions({"pendulum_cnn", "identity"})],
        "latent_obs_size": [Interval(Integral, 1, None, closed="left")],
        "num_basis": [Interval(Integral, 1, None, closed="left")],
        "bandwidth": [Interval(Integral, 1, None, closed="left")],
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
    }
    # What a warm start must not change (it would silently keep the old network).
    _architecture_names = (
        "encoder", "latent_obs_size", "num_basis", "bandwidth", "hidden_size", "first_gap", "hold_ends", "standardize",
    )

    @_TRAINING_PARAMETERS
    def __init__(
        self, *, encoder="pendulum_cnn", latent_obs_size=15, num_basis=15, bandwidth=3, hidden_size=30, **shared
    ):
        self.encoder = encoder
        self.latent_obs_size = latent_obs_size
        self.num_basis = num_basis
        self.bandwidth = bandwidth
        self.hidden_size = hidden_size
        _TRAINING_PARAMETERS.assign(self, shared)

    def _task(self) -> Regression:
        return Regression("gaussian_nll")

    def _nonfinite_reason(self, panel, i, step):
        times = panel.times[i]
        if step is None or step == 0:
            return super()._nonfinite_reason(panel, i, step)
        gap = (times[step] - times[step - 1]) / self.preprocessing_.time_scale
        return (
            f"the gap before step {step} is {gap:.4g} times the median gap seen in fit, and CRU's "
            "prediction over a gap is NaN beyond the range of its matrix exponential "
            "(||M dt||_1 > 1024, M the Van Loan matrix of the learnt dynamics); split the series "
            "at that gap"
        )

    def build_network(self, n_inputs, per_step, n_outputs, key):
        if not per_step:
            raise ValueError("CRURegressor predicts per observation: y needs one target per step")
        return CRUNetwork(
            CRU(
                n_inputs,
                n_outputs,
                encoder=self.encoder,
                latent_obs_size=self.latent_obs_size,
                num_basis=self.num_basis,
                bandwidth=self.bandwidth,
                hidden_size=self.hidden_size,
                key=key,
            )
        )
