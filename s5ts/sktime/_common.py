"""What the sktime panel adapters share: the s5ts parameters they expose,
their capability tags and fast test settings."""

from __future__ import annotations

from ..estimators import SharedParameters

#: `S5Regressor` / `S5Classifier` parameters the panel adapters expose, with
#: their defaults (not exposed: `warm_start`, which sktime's `fit` reset
#: contradicts, and `scan`, an implementation detail).
PANEL_PARAMETERS = SharedParameters(exclude=("scan", "warm_start"))

#: sktime tags true of both panel adapters. s5ts reads any pd-multiindex
#: panel directly: every series keeps its own (irregular) time stamps, so
#: unequal length and unequal spacing need no resampling (sktime has no tag
#: for unequal spacing; its `capability:unequal_length` is the closest).
PANEL_TAGS = {
    "authors": ["s5ts developers"],
    "maintainers": ["s5ts developers"],
    "X_inner_mtype": "pd-multiindex",
    "y_inner_mtype": "numpy1D",
    "capability:multivariate": True,
    "capability:unequal_length": True,
    "capability:missing_values": True,
    "capability:categorical_in_X": False,
    "capability:random_state": True,
    "property:randomness": "derandomized",
}

#: A tiny network and two epochs: sktime's checks fit dozens of times.
FAST_PARAMETERS = {
    "n_layers": 1,
    "d_model": 4,
    "state_size": 2,
    "max_epochs": 2,
    "batch_size": 8,
    "validation_fraction": 0.0,
    "min_epoch_steps": None,
    "random_state": 0,
}
