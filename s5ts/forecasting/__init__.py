"""Forecasting irregularly sampled series at any future times, on pandas
alone: `Forecaster` (the sktime `s5ts.sktime.S5Forecaster` adapts it), its
step inputs, calendar features and multi-horizon network."""

from ._calendar import Cycle, calendar_features, choose_cycles
from ._forecaster import PARAMETERS, Forecaster, SeriesState, split_series
from ._network import MultiHorizonNetwork, advance, forecast, query_nll, query_squared_error, states_after_each_step
from ._steps import SeriesScale, StepLayout, draw_queries, last_values, observation_steps, query_examples, query_steps, spread

__all__ = [
    "Cycle",
    "Forecaster",
    "MultiHorizonNetwork",
    "PARAMETERS",
    "SeriesScale",
    "SeriesState",
    "StepLayout",
    "advance",
    "calendar_features",
    "choose_cycles",
    "draw_queries",
    "forecast",
    "last_values",
    "observation_steps",
    "query_examples",
    "query_nll",
    "query_squared_error",
    "query_steps",
    "spread",
    "split_series",
    "states_after_each_step",
]
