"""Collection settings for the whole repository (doctests included)."""

import importlib.util

# The sktime adapters are an optional extra: without sktime their modules
# cannot be imported, so their doctests are skipped rather than failing.
collect_ignore_glob = [] if importlib.util.find_spec("sktime") else ["s5ts/sktime/*.py", "docs/sktime.md"]
