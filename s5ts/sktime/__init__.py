"""sktime adapters for s5ts (an optional extra: ``pip install -e ".[sktime]" in the s5ts checkout``).

- `S5TimeSeriesRegressor`, `S5TimeSeriesClassifier`: sktime `BaseRegressor`
  / `BaseClassifier` wrappers of `s5ts.S5Regressor` / `s5ts.S5Classifier`
  for panels of unequal-length, irregularly sampled, multivariate series
  with missing values.
- `S5Forecaster`: a causal S5 network as an sktime `BaseForecaster` that
  forecasts irregularly sampled series at arbitrary future times, with
  Gaussian prediction intervals and state-advancing `update`.

`import s5ts` never imports this package; importing it without sktime
raises an `ImportError` naming the extra to install.
"""

try:
    import sktime as _sktime  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        's5ts.sktime needs sktime, an optional dependency of s5ts: pip install -e ".[sktime]" in the s5ts checkout'
    ) from error

from ._classification import S5TimeSeriesClassifier
from ._forecasting import S5Forecaster
from ._regression import S5TimeSeriesRegressor

__all__ = ["S5Forecaster", "S5TimeSeriesClassifier", "S5TimeSeriesRegressor"]
