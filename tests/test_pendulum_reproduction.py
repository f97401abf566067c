"""The pendulum reproduction: summary arithmetic, the command line, and the
notebook executed end to end on the tiny preset."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from s5ts.baselines import DSSRegressor
from s5ts.cli import main
from s5ts.experiments.pendulum import (
    PRESETS,
    S5_PAPER_CONFIG,
    VARIANTS,
    make_model,
    merge_results,
    mse,
    results_markdown,
    summarise,
)

ROOT = Path(__file__).resolve().parents[1]


def test_mse_over_all_steps_and_outputs():
    prediction = [np.zeros((2, 2)), np.ones((1, 2))]
    truth = [np.ones((2, 2)), np.ones((1, 2))]
    assert mse(prediction, truth) == pytest.approx(4 / 6)


def test_summary_mean_std_and_speed():
    runs = [
        {"model": "S5", "seed": s, "test_mse": v, "epoch_seconds": [9.0, 1.0, 3.0], "n_parameters": 10, "n_train_sequences": 4}
        for s, v in enumerate([0.003, 0.005])
    ] + [{"model": "CRU", "seed": 0, "test_mse": 0.004, "epoch_seconds": [50.0, 20.0], "n_parameters": 9, "n_train_sequences": 2}]
    summary = summarise(runs)
    assert summary["S5"]["test_mse_e3_mean"] == pytest.approx(4.0)
    assert summary["S5"]["test_mse_e3_std"] == pytest.approx(np.std([3.0, 5.0], ddof=1))
    assert summary["S5"]["seconds_per_epoch"] == pytest.approx(2.0)  # first (compiling) epoch excluded
    assert summary["CRU"]["test_mse_e3_std"] == 0.0
    table = results_markdown(summary, "tiny", PRESETS["tiny"])
    assert "| S5 | 4.00 ± 1.41 (n=2) | 3.41 ± 0.27 |" in table
    # per sequence: CRU 20 s for 2 sequences vs S5 2 s for 4 sequences
    assert "CRU is 20.0× slower" in table
    # merged runs were timed apart: no speed ratio claimed
    merged = results_markdown(summary, "tiny", PRESETS["tiny"], merged=True)
    assert "slower" not in merged and "not a side-by-side speed comparison" in merged


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_lineage_row_is_s5_with_its_one_option_changed(name):
    model = make_model(name, PRESETS["tiny"], seed=3)
    (option, value), = VARIANTS[name].items()
    reference = make_model("S5", PRESETS["tiny"], seed=3)
    differing = {k for k, v in model.get_params().items() if v != reference.get_params()[k]}
    assert getattr(model, option) == value and differing == {option}


def test_the_dss_row_shares_s5s_setting_where_it_has_it():
    model = make_model("DSS", PRESETS["tiny"], seed=0)
    assert isinstance(model, DSSRegressor)
    shared = {k: v for k, v in S5_PAPER_CONFIG.items() if k not in ("blocks", "discretization", "time_warp")}
    assert all(model.get_params()[k] == v for k, v in shared.items())
    with pytest.raises(ValueError, match="S4D-Lin"):
        make_model("S6", PRESETS["tiny"], seed=0)


def test_cli_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["pendulum", "--preset", "huge"])
    assert main(["pendulum", "--seeds", "0"]) == 2
    assert main(["pendulum", "--first-seed", "-1"]) == 2
    with pytest.raises(ValueError, match="unknown models"):
        main(["pendulum", "--preset", "tiny", "--models", "LSTM"])


def test_cli_tiny_run_writes_results(tmp_path):
    out = tmp_path / "out"
    assert main(["pendulum", "--preset", "tiny", "--models", "S5", "S5-drop", "--seeds", "2",
                 "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--quiet"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert set(result["summary"]) == {"S5", "S5-drop"}
    assert len(result["runs"]) == 4
    for run in result["runs"]:
        assert np.isfinite(run["test_mse"]) and run["test_mse"] > 0
        assert run["n_parameters"] == 15820  # the paper's ~15.8 k
    assert (out / "results.csv").read_text().count("\n") == 5
    assert "S5-drop" in (out / "results.md").read_text()

    # Another seed run elsewhere, then merged into one table.
    more = tmp_path / "more"
    assert main(["pendulum", "--preset", "tiny", "--models", "S5", "--first-seed", "2", "--seeds", "1",
                 "--out", str(more), "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--quiet"]) == 0
    assert [r["seed"] for r in json.loads((more / "results.json").read_text())["runs"]] == [2]
    merged_dir = tmp_path / "merged"
    assert main(["pendulum-merge", str(more), str(out), "--out", str(merged_dir), "--no-plots"]) == 0
    merged = json.loads((merged_dir / "results.json").read_text())
    assert [(r["model"], r["seed"]) for r in merged["runs"]] == [
        ("S5", 0), ("S5", 1), ("S5", 2), ("S5-drop", 0), ("S5-drop", 1)]
    scores = [r["test_mse"] * 1e3 for r in merged["runs"] if r["model"] == "S5"]
    assert merged["summary"]["S5"]["test_mse_e3_mean"] == pytest.approx(np.mean(scores))
    assert "(n=3)" in (merged_dir / "results.md").read_text()
    with pytest.raises(ValueError, match="S5 seed 2 is in both"):
        merge_results([more, more], tmp_path / "twice", plots=False)
    with pytest.raises(ValueError, match="no results.json"):
        merge_results([tmp_path / "cache"], tmp_path / "none", plots=False)
    # S5 seeds trained with another configuration do not merge into one mean.
    other = json.loads((more / "results.json").read_text())
    other["s5_config"] = {**other["s5_config"], "activation": "gelu"}
    other["runs"][0]["seed"] = 7
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="different s5_config"):
        merge_results([out, tmp_path / "other"], tmp_path / "mixed", plots=False)


def test_notebook_runs_on_tiny_preset(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(ROOT / "notebooks" / "pendulum_regression.ipynb", as_version=4)
    env = {"S5TS_NOTEBOOK_PRESET": "tiny", "S5TS_DATA_DIR": str(tmp_path / "cache")}
    previous = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nbclient.NotebookClient(notebook, timeout=900, resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in previous.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = "".join(
        str(out.get("data", {}).get("text/plain", "")) + out.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    )
    assert "S5-drop" in outputs and "published" in outputs
    assert (tmp_path / "results" / "pendulum-notebook-tiny" / "predictions.png").exists()
