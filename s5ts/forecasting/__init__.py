"""Forecasting irregularly sampled series at any future times, on pandas
alone: `Forecaster` (the sktime `s5ts.sktime.S5Forecaster` adapts it),
`ForecasterEnsemble` (copies of one that differ in their seed), its
step inputs, calendar features and multi-horizon network."""

from ._calendar import Cycle, calendar_features, choose_cycles
from ._calibration import (
    CALIBRATED_COVERAGES,
    LeadCalibration,
    calibration_factor,
    coverage_factors,
    interval_ratio,
    lead_calibration,
)
from ._ensemble import ForecasterEnsemble
from ._forecaster import PARAMETERS, Forecaster, gaussian_quantiles
from ._network import MultiHorizonNetwork, advance, forecast, query_nll, states_after_each_step
from ._series import SeriesState, split_series
from ._steps import (
    PRIOR_CHANGES,
    SeriesScale,
    StepCarry,
    StepLayout,
    draw_queries,
    last_values,
    local_spreads,
    observation_steps,
    query_examples,
    query_steps,
    spread,
    step_carry,
)
from ._windows import VALIDATION_QUERIES, WindowPlan

__all__ = [
    "CALIBRATED_COVERAGES",
    "Cycle",
    "Forecaster",
    "ForecasterEnsemble",
    "LeadCalibration",
    "MultiHorizonNetwork",
    "PRIOR_CHANGES",
    "PARAMETERS",
    "SeriesScale",
    "SeriesState",
    "StepCarry",
    "StepLayout",
    "VALIDATION_QUERIES",
    "WindowPlan",
    "advance",
    "calendar_features",
    "calibration_factor",
    "coverage_factors",
    "interval_ratio",
    "choose_cycles",
    "draw_queries",
    "forecast",
    "gaussian_quantiles",
    "last_values",
    "lead_calibration",
    "local_spreads",
    "observation_steps",
    "query_examples",
    "query_nll",
    "query_steps",
    "spread",
    "split_series",
    "states_after_each_step",
    "step_carry",
]
