"""The parameter table (`s5ts/estimators/_parameters.py`): every list of
parameters derives from it, and every default satisfies its constraints."""

import inspect

import pytest
from sklearn.utils._param_validation import validate_parameter_constraints

from s5ts import S5Classifier, S5Regressor
from s5ts.baselines import CRURegressor, DSSRegressor
from s5ts.estimators import S5_PARAMETERS, Parameter
from s5ts.estimators._parameters import INPUT_PARAMETERS, NETWORK_PARAMETERS, RUN_PARAMETERS
from s5ts.forecasting import Forecaster


def test_the_constructors_are_the_table_in_order_with_its_defaults():
    for cls, own in ((S5Regressor, ["loss"]), (S5Classifier, ["class_weight"])):
        signature = inspect.signature(cls)
        assert list(signature.parameters) == own + [p.name for p in S5_PARAMETERS]
        for p in S5_PARAMETERS:
            assert signature.parameters[p.name].default == p.default, (cls.__name__, p.name)
        assert set(cls._parameter_constraints) == set(signature.parameters)


@pytest.mark.parametrize("parameter", S5_PARAMETERS, ids=lambda p: p.name)
def test_every_default_satisfies_its_constraints(parameter):
    validate_parameter_constraints(
        {parameter.name: list(parameter.constraints)}, {parameter.name: parameter.default}, caller_name="table"
    )


def test_the_role_lists_derive_from_the_table():
    assert INPUT_PARAMETERS == ("id_col", "time_col", "layout")
    assert RUN_PARAMETERS == ("random_state", "verbose", "warm_start", "checkpoint_dir", "checkpoint_every")
    assert {"n_layers", "encoder", "time_handling", "standardize", "scan"} <= set(NETWORK_PARAMETERS)
    assert not {"max_epochs", "learning_rate", "chunk_length"} & set(NETWORK_PARAMETERS)
    assert S5Regressor()._architecture_names == (*NETWORK_PARAMETERS, "loss")
    with pytest.raises(ValueError, match="unknown roles"):
        Parameter("x", 1, (), frozenset({"nonsense"}))


def test_borrowed_lists_take_the_tables_constraints():
    for cls in (Forecaster, CRURegressor, DSSRegressor):
        shared = [name for name in inspect.signature(cls).parameters if name in {p.name for p in S5_PARAMETERS}]
        assert shared, cls.__name__
        table = {p.name: list(p.constraints) for p in S5_PARAMETERS}
        for name in shared:
            if cls is CRURegressor and name == "encoder":
                continue  # CRU's own encoders
            if cls is Forecaster and name == "validation_fraction":
                continue  # a share of each series' time span: no "auto" (below)
            assert cls._parameter_constraints[name] == table[name], (cls.__name__, name)
    forecaster = {"validation_fraction": Forecaster._parameter_constraints["validation_fraction"]}
    validate_parameter_constraints(forecaster, {"validation_fraction": 0.15}, caller_name="Forecaster")
    with pytest.raises(ValueError, match="validation_fraction"):
        validate_parameter_constraints(forecaster, {"validation_fraction": "auto"}, caller_name="Forecaster")


def test_every_training_setting_is_a_parameter_of_the_table():
    """`TrainingConfig.from_estimator` reads the estimator's parameters of
    the same names: a setting the table does not have would silently keep
    its default."""
    import dataclasses

    from s5ts.training import TrainingConfig

    table = {p.name for p in S5_PARAMETERS}
    # backprop from chunk_length, observation_budget from observation_dropout="auto"
    settings = {f.name for f in dataclasses.fields(TrainingConfig)} - {"backprop", "observation_budget"}
    assert settings <= table, sorted(settings - table)
    assert S5Regressor(chunk_length=64)._config().backprop.chunk_length == 64
