"""What per-step gaps cost: the S5 layer's forward+backward with a gap per
observation against a fixed-step implementation, side by side.

Variants (all batched with `jax.vmap`, loss = mean(y²), gradients with
respect to every parameter of the SSM and to the input u):

- fixed step: the baseline. Λ̄ and the input weight are computed once, shape
  (P,), from the S5SSM's own parameters and one gap, and broadcast over the
  L steps; then `linear_scan`. This is what a regular-time S5 does.
- per-step gaps: `S5SSM(u, gaps, mask)` with irregular gaps (exponential,
  mean 1). The input is projected once, B̃u (L, P); with the sequential scan
  Λ̄_k and the weight are computed inside the loop (`irregular_scan`, fused),
  with the associative scan they are (L, P) arrays.
- constant gaps through S5SSM: the same layer fed gaps that are all 1
  (for information: it pays the per-step discretisation all the same).
- per-step, unfused: the same maths with Λ̄_k and the weight materialised as
  (L, P) arrays, then `linear_scan` (the layer's path before the fused scan,
  and still its path with the associative scan).
- per-step, plain autodiff: the unfused variant with its scan differentiated
  by JAX instead of the custom VJP (for information).
- per-step, naive (L,P,H): B̄_k = w_k ⊙ B̃ materialised as an (L, P, H) array
  and applied to u_k, as the reference variable-step code does. Compiled and
  sized always; run only if its memory fits in `--max-gib`.
- per-step gaps, selective "scaled" / "split": `S5SSM(selective=...)`, the
  same layer with each step's Δ selected from its input
  (Δˢᵉˡ_k = softplus(W_Δ u_k + softplus⁻¹(Δ)), W_Δ (P, H) random), combined
  with the gap (`docs/s5-layer.md#selective-steps-on-real-gaps`); the
  ratio printed is against "per-step gaps (S5SSM)" (goal <= 1.3x).
- fixed step / per-step gaps, batch over N devices: the first two variants
  with the batch's rows split over N CPU devices (`--devices`, default one
  per core), placed as the estimators place their batches. XLA runs a
  sequential scan's loop on one thread per device, so on a multi-core CPU
  this is how the loop uses every core. The target compares the faster
  placement of each variant.

    python3 benchmarks/ssm_gaps.py                  # B=8, L=4096, H=128, P=128
    python3 benchmarks/ssm_gaps.py --length 512     # small enough to run the naive variant
    python3 benchmarks/ssm_gaps.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Callable

import _timing as T
import equinox as eqx
import jax
import jax.numpy as jnp

from s5ts.nn import S5SSM, _scan, _ssm
from s5ts.nn._scan import linear_scan
from s5ts.training import placement_for


def project_in(ssm: S5SSM, u):
    """B̃u for every step, (L, P) complex, from the stored real parts."""
    return jax.lax.complex(u @ ssm.B_re.T, u @ ssm.B_im.T)


def project_out(ssm: S5SSM, x, u):
    """y = 2·Re(C̃x) + D ⊙ u, (L, H)."""
    return 2.0 * (jnp.real(x) @ ssm.C_re.T - jnp.imag(x) @ ssm.C_im.T) + ssm.D * u


def fixed_step(ssm: S5SSM, u, gaps):
    """A regular-time S5 with step `gaps[0]`: Λ̄ and the weight once, (P,)."""
    lam_bar, weight = ssm.discretise(gaps[0])
    b = weight * project_in(ssm, u)
    x = linear_scan(jnp.broadcast_to(lam_bar, b.shape), b, ssm.scan)
    return project_out(ssm, x, u)


def per_step(ssm: S5SSM, u, gaps):
    """The layer itself, with a mask (all True) as in a padded batch."""
    y, _ = ssm(u, gaps, jnp.ones(gaps.shape, dtype=bool))
    return y


def unfused_per_step(ssm: S5SSM, u, gaps):
    """Per-step gaps with Λ̄_k, w_k as (L, P) arrays, then `linear_scan`
    (looked up on `_ssm` so that `plain_autodiff` can swap it)."""
    mask = jnp.ones(gaps.shape, dtype=bool)
    lam_bar, weight = ssm.discretise(gaps)
    lam_bar = jnp.where(mask[:, None], lam_bar, 1.0)
    b = jnp.where(mask[:, None], weight * project_in(ssm, u), 0.0)
    x = _ssm.linear_scan(lam_bar, b, ssm.scan)
    return project_out(ssm, x, u)


def naive_per_step(ssm: S5SSM, u, gaps):
    """Per-step gaps the reference way: B̄_k (L, P, H) materialised."""
    lam_bar, weight = ssm.discretise(gaps)
    b_tilde = jax.lax.complex(ssm.B_re, ssm.B_im)
    b_bar = weight[:, :, None] * b_tilde[None]
    b = jnp.einsum("lph,lh->lp", b_bar, u.astype(b_bar.dtype))
    x = linear_scan(lam_bar, b, ssm.scan)
    return project_out(ssm, x, u)


@contextlib.contextmanager
def plain_autodiff(method: str):
    """Make `_ssm.linear_scan` (while tracing inside this block) call the
    private scan directly, so JAX differentiates through the scan's internals
    (used with `unfused_per_step`; the fused sequential layer has its own VJP)."""
    scan = _scan._sequential_scan if method == "sequential" else _scan._associative_scan

    def patched(a, b, method="auto", *, reverse=False):
        dtype = jnp.result_type(a, b)
        a, b = a.astype(dtype), b.astype(dtype)
        return scan(a[::-1], b[::-1])[::-1] if reverse else scan(a, b)

    original = _ssm.linear_scan
    _ssm.linear_scan = patched
    try:
        yield
    finally:
        _ssm.linear_scan = original


def forward(layer: Callable) -> Callable:
    """(ssm, u (B,L,H), gaps (B,L)) -> y (B,L,H)."""
    return lambda ssm, u, gaps: jax.vmap(lambda u_i, g_i: layer(ssm, u_i, g_i))(u, gaps)


def forward_backward(layer: Callable) -> Callable:
    """(ssm, u, gaps) -> (loss, (∂loss/∂ssm, ∂loss/∂u)), loss = mean(y²)."""

    def loss(ssm, u, gaps):
        return jnp.mean(forward(layer)(ssm, u, gaps) ** 2)

    return jax.value_and_grad(loss, argnums=(0, 1))


def make_inputs(batch: int, length: int, d_model: int, state: int, *, key):
    k_ssm, k_u, k_gaps, k_w = jax.random.split(key, 4)
    ssm = S5SSM(d_model=d_model, state_size=state, key=k_ssm)
    u = jax.random.normal(k_u, (batch, length, d_model))
    gaps = jax.random.exponential(k_gaps, (batch, length))
    # The selective layers: the same draws (k_ssm), and a random W_Δ (it starts at 0).
    weight = 0.1 * jax.random.normal(k_w, (state, d_model))
    selective = {
        name: eqx.tree_at(lambda m: m.select_weight, S5SSM(d_model=d_model, state_size=state, selective=name, key=k_ssm), weight)
        for name in SELECTIVE
    }
    return ssm, selective, u, gaps


SELECTIVE = ("scaled", "split")
FIXED, PER_STEP = "fixed step (Lbar, w: (P,))", "per-step gaps (S5SSM)"


def selective_variant(name: str) -> str:
    return f"per-step gaps, selective {name!r}"


# name -> (layer, gaps, autodiff, the layer's `selective`)
VARIANTS = {
    FIXED: (fixed_step, "irregular", None, None),
    PER_STEP: (per_step, "irregular", None, None),
    **{selective_variant(name): (per_step, "irregular", None, name) for name in SELECTIVE},
    "constant gaps via S5SSM": (per_step, "constant", None, None),
    "per-step, unfused (L,P) Lbar, w": (unfused_per_step, "irregular", None, None),
    "per-step, unfused, plain autodiff": (unfused_per_step, "irregular", "auto", None),
    "per-step, naive (L,P,H)": (naive_per_step, "irregular", None, None),
}


def compile_variant(build: Callable, layer: Callable, autodiff: str | None, args):
    """Compile `build(layer)` for `args`, inside `plain_autodiff` if asked."""
    if autodiff is None:
        return T.compile_with_memory(build(layer), *T.shapes_of(args))
    with plain_autodiff(_scan.resolve_scan_method(autodiff)):
        return T.compile_with_memory(build(layer), *T.shapes_of(args))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", "-B", type=int, default=8)
    parser.add_argument("--length", "-L", type=int, default=4096)
    parser.add_argument("--d-model", "-H", type=int, default=128)
    parser.add_argument("--state", "-P", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--max-gib", type=float, default=8.0, help="skip running variants whose XLA memory exceeds this")
    parser.add_argument(
        "--devices",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="CPU devices to split the batch over in the '... over N devices' variants (default: one per core; 1: skip them)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the script runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.length, args.d_model, args.state, args.repeats = 2, 128, 16, 16, 3
    # Before JAX starts its CPU backend (print_header starts it).
    jax.config.update("jax_num_cpu_devices", max(args.devices, 1))

    T.print_header("S5SSM forward+backward: per-step gaps vs one fixed step")
    print(
        f"# B={args.batch} L={args.length} H={args.d_model} P={args.state}, float32/complex64, "
        f"scan={_scan.resolve_scan_method('auto')} (auto), _SEQUENTIAL_UNROLL={_scan._SEQUENTIAL_UNROLL}, "
        f"repeats={args.repeats}; loss = mean(y^2), grads w.r.t. all SSM parameters and u"
    )
    ssm, selective, u, gaps = make_inputs(args.batch, args.length, args.d_model, args.state, key=jax.random.key(0))
    gap_arrays = {"irregular": gaps, "constant": jnp.ones_like(gaps)}
    layers = {None: ssm, **selective}

    # name -> (layer, autodiff, arguments)
    variants = {
        name: (layer, autodiff, (layers[chosen], u, gap_arrays[kind]))
        for name, (layer, kind, autodiff, chosen) in VARIANTS.items()
    }
    placement = placement_for(args.batch)
    if placement.n_devices > 1:
        rows = placement.put_batch({"u": u, "gaps": gaps})
        split = (placement.replicate(ssm), rows["u"], rows["gaps"])
        for name in (FIXED, PER_STEP):
            layer, _, autodiff, _ = VARIANTS[name]
            variants[f"{name}, batch over {placement.n_devices} devices"] = (layer, autodiff, split)

    results = {}
    fwd_calls, fb_calls = {}, {}
    for name, (layer, autodiff, call_args) in variants.items():
        fb, memory, compile_s = compile_variant(forward_backward, layer, autodiff, call_args)
        results[name] = {"memory": memory, "compile": compile_s}
        if memory.total > args.max_gib * T.GIB:
            continue
        fb_calls[name] = (fb, call_args)
        fwd, _, _ = compile_variant(forward, layer, autodiff, call_args)
        fwd_calls[name] = (fwd, call_args)
    fb_times = T.time_interleaved(fb_calls, repeats=args.repeats)
    fwd_times = T.time_interleaved(fwd_calls, repeats=args.repeats)

    base = FIXED
    rows = []
    for name, r in results.items():
        fb, fwd = fb_times.get(name), fwd_times.get(name)
        rows.append(
            [
                name,
                T.seconds(fwd.median) if fwd else "-",
                T.ratio(fwd.median / fwd_times[base].median) if fwd else "-",
                T.seconds(fb.median) if fb else f"not run (> {args.max_gib:g} GiB)",
                T.seconds(fb.low) + " .. " + T.seconds(fb.high) if fb else "-",
                T.ratio(fb.median / fb_times[base].median) if fb else "-",
                T.ratio(fb.low / fb_times[base].low) if fb else "-",
                T.gib(r["memory"].total),
            ]
        )
    T.print_table(
        ["variant", "fwd", "fwd/fixed", "fwd+bwd", "fwd+bwd min..max", "fwd+bwd/fixed", "min/min", "memory (fwd+bwd)"],
        rows,
    )
    per = fb_times[PER_STEP]
    value, low = per.median / fb_times[base].median, per.low / fb_times[base].low
    print(f"\nper-step gaps / fixed step, forward+backward, one device = {value:.2f}x (medians), {low:.2f}x (minima)")
    for name in SELECTIVE:
        sel = fb_times[selective_variant(name)]
        print(
            f"selective {name!r} / S5 (per-step gaps), forward+backward, one device = "
            f"{sel.median / per.median:.2f}x (medians), {sel.low / per.low:.2f}x (minima)   (goal <= 1.3x)"
        )
    def fastest(variant):
        """The variant at its faster placement (one device, or the batch split)."""
        return min((t for n, t in fb_times.items() if n.startswith(variant)), key=lambda t: t.median)

    fixed_best, per_best = fastest(FIXED), fastest(PER_STEP)
    print(
        f"per-step gaps / fixed step, forward+backward, each at its faster placement = "
        f"{per_best.median / fixed_best.median:.2f}x (medians), {per_best.low / fixed_best.low:.2f}x (minima)   "
        f"(target <= 1.15x)"
    )


if __name__ == "__main__":
    main()
