"""s5ts: S5 state-space models for irregularly sampled, ragged time series.

`import s5ts` is light: it imports neither sktime nor matplotlib.
"""

__version__ = "0.1.0"
