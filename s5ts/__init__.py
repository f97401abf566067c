"""s5ts: S5 state-space models for irregularly sampled, ragged time series.

`import s5ts` is light on optional parts: it imports neither sktime nor
matplotlib.
"""

from .estimators import S5Classifier, S5Regressor

__version__ = "0.1.0"
__all__ = ["S5Classifier", "S5Regressor", "__version__"]
