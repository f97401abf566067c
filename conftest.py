"""Collection settings for the whole repository (doctests included), and
JAX's strict checks for every test: no implicit dtype promotion (float32
with float64, ints with floats) and no implicit rank promotion, as in
Equinox's own tests. The jaxtyping annotations of s5ts are checked at run
time by pytest's `--jaxtyping-packages` option (pyproject.toml)."""

import importlib.util

import jax

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

# The sktime adapters are an optional extra: without sktime their modules
# cannot be imported, so their doctests are skipped rather than failing.
collect_ignore_glob = [] if importlib.util.find_spec("sktime") else ["s5ts/sktime/*.py", "docs/sktime.md"]
