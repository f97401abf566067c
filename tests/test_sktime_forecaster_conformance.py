"""sktime's conformance suite for S5Forecaster, in a file of its own so that
pytest-xdist (`--dist loadfile`) runs it beside the other adapters' checks
(tests/test_sktime_adapters.py): about 3.5 minutes (213 s) on one core of the
2-core machine (docs/sktime.md)."""

import pytest

pytest.importorskip("sktime")

from conftest import assert_passes_check_estimator  # noqa: E402
from s5ts.sktime import S5Forecaster  # noqa: E402


def test_sktime_check_estimator_forecaster(own_persistent_cache):
    assert_passes_check_estimator(S5Forecaster)
