"""S5Regressor / S5Classifier in the scikit-learn ecosystem: the estimator
checks (with every expected failure and its reason), clone/get_params,
Pipeline, GridSearchCV, cross_val_score, cross_val_predict."""

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from s5ts import S5Classifier, S5Regressor
from s5ts.data import frames_from_multiindex

FAST = dict(n_layers=1, d_model=8, state_size=4, batch_size=16, validation_fraction=0.0, random_state=0)

# scikit-learn's checks feed 2-D arrays (n_samples, n_features). s5ts reads a
# 2-D array as n univariate series of length L = n_features (its documented
# meaning), so checks that assume tabular columns cannot pass; each is listed
# with the reason. The list is strict: a check listed here that passes fails
# the test suite, so the list stays true.
_TABULAR = (
    "a 2-D array (n, L) is n univariate series of length L, so n_features_in_ is 1, "
    "not the number of columns"
)
EXPECTED_FAILURES = {
    "check_n_features_in": _TABULAR,
    "check_n_features_in_after_fitting": _TABULAR,
    "check_estimators_partial_fit_n_features": (
        "dropping a column of a 2-D array shortens every series by one step: valid input, "
        "not a change in the number of features"
    ),
    "check_fit2d_predict1d": (
        "a 1-D X raises ValueError suggesting [x] for one series, not sklearn's 'Reshape "
        "your data' wording"
    ),
    "check_sample_weights_pandas_series": (
        "X is a plain DataFrame (one row per sample), which s5ts rejects (see "
        "check_*_data_not_an_array); a pandas Series sample_weight itself is accepted"
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "shuffled minibatches: a weight of 2 equals a duplicate only in expectation, since "
        "the duplicate lands in another batch; tests/test_estimators.py checks the equality "
        "within one batch"
    ),
}
REGRESSOR_FAILURES = {
    **EXPECTED_FAILURES,
    "check_regressor_data_not_an_array": (
        "a plain DataFrame (one row per sample) is rejected: s5ts reads a DataFrame only "
        "as a (series, time) MultiIndex frame or a long frame with id_col"
    ),
    "check_regressors_train": (
        "R² > 0.5 on make_regression's 10 columns read as one length-10 series needs more "
        "epochs than the fast settings used here (max_epochs=2)"
    ),
}
CLASSIFIER_FAILURES = {
    **EXPECTED_FAILURES,
    "check_classifier_data_not_an_array": REGRESSOR_FAILURES["check_regressor_data_not_an_array"],
    "check_classifiers_train": (
        "accuracy > 0.83 needs more epochs than max_epochs=2; and predict(X.T) is valid "
        "input here (n_features series of length n_samples), so it cannot raise as the "
        "check expects"
    ),
}


def _expected_failures(estimator):
    return REGRESSOR_FAILURES if isinstance(estimator, S5Regressor) else CLASSIFIER_FAILURES


@parametrize_with_checks(
    [S5Regressor(**FAST, max_epochs=2), S5Classifier(**FAST, max_epochs=2)],
    expected_failed_checks=_expected_failures,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------
# parameters and clone


@pytest.mark.parametrize("cls", [S5Regressor, S5Classifier])
def test_get_params_lists_every_constructor_argument(cls):
    params = cls().get_params()
    assert set(params) == set(inspect.signature(cls).parameters)
    assert params["time_handling"] == "gaps" and params["warm_start"] is False
    assert ("loss" in params) == (cls is S5Regressor)
    for name in (
        "n_layers", "d_model", "state_size", "blocks", "discretization", "bidirectional", "dt_min",
        "dt_max", "dropout", "max_epochs", "batch_size", "learning_rate", "ssm_learning_rate",
        "weight_decay", "validation_fraction", "n_iter_no_change", "random_state", "verbose",
    ):
        assert name in params
    model = cls()
    assert model.set_params(d_model=12, time_handling="drop") is model
    assert model.d_model == 12 and model.get_params()["time_handling"] == "drop"


def frames(n=24, seed=0):
    """Univariate series of 3..8 irregular observations; y is the last value
    plus the duration; labels split y at its median."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        t = np.cumsum(rng.uniform(0.1, 1.0, int(rng.integers(3, 9))))
        values = rng.normal(size=t.shape)
        X.append(pd.DataFrame({"v": values}, index=pd.Index(t, name="time")))
        y.append(values[-1] + t[-1] - t[0])
    y = np.array(y)
    return X, y, np.where(y > np.median(y), "up", "down")


@pytest.fixture(scope="module")
def data():
    return frames()


def test_clone_of_a_fitted_estimator_is_unfitted(data):
    X, y, _ = data
    model = S5Regressor(**FAST, max_epochs=1).fit(X, y)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "model_") and not hasattr(copy, "history_")
    np.testing.assert_array_equal(copy.fit(X, y).predict(X), model.predict(X))


# --------------------------------------------------------------------------
# Pipeline and model selection with the list-of-DataFrames format


def double(frames):
    """A per-series transformation that a Pipeline step can apply to a list."""
    return [2.0 * f for f in frames]


def test_pipeline_with_a_list_transformer(data):
    X, y, _ = data
    pipe = make_pipeline(FunctionTransformer(double), S5Regressor(**FAST, max_epochs=2)).fit(X, y)
    direct = S5Regressor(**FAST, max_epochs=2).fit(double(X), y)
    np.testing.assert_array_equal(pipe.predict(X), direct.predict(double(X)))
    assert pipe.score(X, y) == pytest.approx(direct.score(double(X), y))


def test_grid_search(data):
    X, y, _ = data
    search = GridSearchCV(
        S5Regressor(**FAST, max_epochs=2),
        {"time_handling": ["gaps", "drop"], "learning_rate": [1e-3, 1e-2]},
        cv=KFold(2),
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_params_["time_handling"] in ("gaps", "drop")
    assert search.best_estimator_.get_params()["time_handling"] == search.best_params_["time_handling"]
    assert search.predict(X).shape == (len(X),)


def test_cross_val_score_and_predict(data):
    X, y, labels = data
    scores = cross_val_score(S5Classifier(**FAST, max_epochs=2), X, labels, cv=3)
    assert scores.shape == (3,) and ((0 <= scores) & (scores <= 1)).all()
    proba = cross_val_predict(S5Classifier(**FAST, max_epochs=2), X, labels, cv=3, method="predict_proba")
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    prediction = cross_val_predict(S5Regressor(**FAST, max_epochs=2), X, y, cv=KFold(3))
    assert prediction.shape == y.shape and np.isfinite(prediction).all()
    # each out-of-fold prediction comes from a model that did not see the series
    fold_model = S5Regressor(**FAST, max_epochs=2).fit(X[8:], y[8:])
    np.testing.assert_allclose(prediction[:8], fold_model.predict(X[:8]), rtol=1e-5, atol=1e-6)


def test_multiindex_frames_need_the_converter_for_splitters(data):
    X, y, _ = data
    ids = [f"id{i}" for i in range(len(X))]
    multi = pd.concat(X, keys=ids, names=["series", "time"])
    # sklearn's splitters count rows: a MultiIndex frame has one row per observation
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        cross_val_score(S5Regressor(**FAST, max_epochs=1), multi, y, cv=KFold(2))
    listed = frames_from_multiindex(multi)
    assert len(listed) == len(X)
    scores = cross_val_score(S5Regressor(**FAST, max_epochs=1), listed, y, cv=KFold(2))
    assert np.isfinite(scores).all()


def test_tags():
    from sklearn.utils import get_tags

    regressor, classifier = get_tags(S5Regressor()), get_tags(S5Classifier())
    for tags in (regressor, classifier):
        assert tags.input_tags.allow_nan and tags.input_tags.three_d_array
        assert not tags.input_tags.sparse and not tags.non_deterministic
        assert tags.requires_fit and tags.target_tags.required
    assert regressor.estimator_type == "regressor" and regressor.target_tags.multi_output
    assert classifier.estimator_type == "classifier" and classifier.classifier_tags.multi_class


def test_voting_ensembles_over_seeds(data):
    """scikit-learn's voting ensembles take the ragged list as it is: the soft
    vote is the mean of the members' probabilities, the regressor's the mean
    of their predictions (the recipe of docs/estimators.md, "Several seeds")."""
    from sklearn.ensemble import VotingClassifier, VotingRegressor

    X, y, labels = data
    settings = {**FAST, "max_epochs": 2}
    seeds = (0, 1)

    def members(cls):
        return [(f"seed{k}", cls(**{**settings, "random_state": k})) for k in seeds]

    vote = VotingClassifier(members(S5Classifier), voting="soft").fit(X, labels)
    alone = [S5Classifier(**{**settings, "random_state": k}).fit(X, labels).predict_proba(X) for k in seeds]
    assert not np.allclose(alone[0], alone[1])  # the seeds make different members
    np.testing.assert_allclose(vote.predict_proba(X), np.mean(alone, axis=0), rtol=1e-6)
    assert list(vote.classes_) == ["down", "up"]
    assert set(vote.predict(X)) <= {"down", "up"}

    vote = VotingRegressor(members(S5Regressor)).fit(X, y)
    alone = [S5Regressor(**{**settings, "random_state": k}).fit(X, y).predict(X) for k in seeds]
    np.testing.assert_allclose(vote.predict(X), np.mean(alone, axis=0), rtol=1e-6)
