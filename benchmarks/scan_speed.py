"""Speed and memory of `linear_scan`, forward and forward+backward, against a
memory floor.

Arrays are complex64 of shape (B, L, P) and the scan is `jax.vmap`-ed over B,
exactly as `S5SSM` sees it when a batch is vmapped (`--layout LBP`: time-major
(L, B, P) arrays scanned directly, for comparison). Variants:

- floor: `x = a * b` elementwise and its VJP. It reads a, b and the
  cotangent x̄ and writes x, ā, b̄ once each: the same arrays, hence the same
  bytes, that any scan's forward+backward must read and write at minimum.
- sequential / associative with the custom VJP (what `linear_scan` runs;
  "auto" is one of them, named in the header),
- sequential / associative with plain autodiff through the private
  `_sequential_scan` (a `lax.scan` over stacked inputs) /
  `_associative_scan` (for comparison with the custom VJPs).

Forward+backward means `jax.vjp` of the scan followed by the pullback of a
fixed random cotangent: outputs x, ā, b̄. Times are medians over interleaved
rounds (see `_timing.time_interleaved`), with the ratio of the fastest
runs beside the ratio of medians (on a shared machine the minimum is the
least disturbed run); memory is XLA's buffer assignment
for the forward+backward (temp + argument + output), read at compile time, so
a variant whose memory exceeds `--max-gib` is compiled and sized but not run.

    python3 benchmarks/scan_speed.py                       # B=32, P=128, L=16384
    python3 benchmarks/scan_speed.py --quick
    python3 benchmarks/scan_speed.py --unroll-sweep 1,2,4,8,16
"""

from __future__ import annotations

import argparse
from typing import Callable

import _timing as T
import jax
import jax.numpy as jnp

from s5ts.nn import _scan
from s5ts.nn._scan import linear_scan, resolve_scan_method


def make_inputs(batch: int, length: int, state: int, *, key, layout: str = "BLP") -> tuple:
    """a on a circle of radius 0.99 (a stable recurrence), b and x̄ Gaussian;
    shape (B, L, P), or (L, B, P) for `layout="LBP"`."""
    k_theta, k_b, k_xbar = jax.random.split(key, 3)
    shape = (batch, length, state) if layout == "BLP" else (length, batch, state)

    def gaussian(k):
        k_re, k_im = jax.random.split(k)
        return jax.lax.complex(jax.random.normal(k_re, shape), jax.random.normal(k_im, shape))

    theta = jax.random.uniform(k_theta, shape, maxval=2 * jnp.pi)
    a = 0.99 * jax.lax.complex(jnp.cos(theta), jnp.sin(theta))
    return T.block((a, gaussian(k_b), gaussian(k_xbar)))


def batched(scan: Callable, layout: str = "BLP") -> Callable:
    """For (B, L, P): one (L, P) scan per batch element, `jax.vmap`-ed as in
    the layer. For (L, B, P): one scan over the leading axis, no vmap."""
    return jax.vmap(scan) if layout == "BLP" else scan


def forward_backward(fn: Callable) -> Callable:
    """(a, b, x̄) -> (x, ā, b̄): the forward pass and the pullback of x̄."""

    def run(a, b, x_bar):
        x, pullback = jax.vjp(fn, a, b)
        a_bar, b_bar = pullback(x_bar)
        return x, a_bar, b_bar

    return run


def variants(layout: str = "BLP") -> dict[str, Callable]:
    """name -> (a, b) -> x on arrays of the given layout."""
    return {
        "floor: x = a*b": lambda a, b: a * b,
        "sequential, custom VJP": batched(lambda a, b: linear_scan(a, b, "sequential"), layout),
        "associative, custom VJP": batched(lambda a, b: linear_scan(a, b, "associative"), layout),
        "sequential, plain autodiff": batched(_scan._sequential_scan, layout),
        "associative, plain autodiff": batched(_scan._associative_scan, layout),
    }


def measure(fns: dict[str, Callable], inputs: tuple, *, repeats: int, max_gib: float, forward: bool):
    """Compile every variant (forward and forward+backward), time those that
    fit in `max_gib`, interleaved. Returns per variant a dict of results."""
    a, b, x_bar = inputs
    results: dict[str, dict] = {}
    fwd_calls, fb_calls = {}, {}
    for name, fn in fns.items():
        fb, memory, compile_s = T.compile_with_memory(forward_backward(fn), *T.shapes_of(inputs))
        results[name] = {"memory": memory, "compile": compile_s, "fwd": None, "fb": None}
        if memory.total > max_gib * T.GIB:
            results[name]["skipped"] = True
            continue
        fb_calls[name] = (fb, inputs)
        if forward:
            fwd, _, _ = T.compile_with_memory(fn, *T.shapes_of((a, b)))
            fwd_calls[name] = (fwd, (a, b))
    for name, timing in T.time_interleaved(fb_calls, repeats=repeats).items():
        results[name]["fb"] = timing
    for name, timing in T.time_interleaved(fwd_calls, repeats=repeats).items():
        results[name]["fwd"] = timing
    return results


def print_results(results: dict[str, dict], floor_name: str) -> None:
    floor_fb = results[floor_name]["fb"].median
    floor_fb_low = results[floor_name]["fb"].low
    floor_fwd = results[floor_name]["fwd"].median if results[floor_name]["fwd"] else None
    rows = []
    for name, r in results.items():
        fb, fwd, memory = r["fb"], r["fwd"], r["memory"]
        rows.append(
            [
                name,
                T.seconds(fwd.median) if fwd else "-",
                T.ratio(fwd.median / floor_fwd) if fwd and floor_fwd else "-",
                T.seconds(fb.median) if fb else "skipped",
                T.seconds(fb.low) + " .. " + T.seconds(fb.high) if fb else "-",
                T.ratio(fb.median / floor_fb) if fb else "-",
                T.ratio(fb.low / floor_fb_low) if fb else "-",
                T.gib(memory.temp),
                T.gib(memory.total),
                f"{r['compile']:.1f} s",
            ]
        )
    T.print_table(
        [
            "variant",
            "fwd",
            "fwd/floor",
            "fwd+bwd",
            "fwd+bwd min..max",
            "fwd+bwd/floor",
            "min/min",
            "temp",
            "temp+args+out",
            "compile",
        ],
        rows,
    )


def unroll_sweep(values: list[int], inputs: tuple, *, repeats: int, layout: str) -> None:
    """Time the sequential scan (custom VJP, forward+backward) for each
    `_SEQUENTIAL_UNROLL`, against the floor, interleaved."""
    original = _scan._SEQUENTIAL_UNROLL
    calls = {}
    try:
        floor, _, _ = T.compile_with_memory(forward_backward(lambda a, b: a * b), *T.shapes_of(inputs))
        calls["floor"] = (floor, inputs)
        for unroll in values:
            # The constant is read when the scan is traced, i.e. at compile time.
            _scan._SEQUENTIAL_UNROLL = unroll
            fn = batched(lambda a, b: linear_scan(a, b, "sequential"), layout)
            compiled, _, _ = T.compile_with_memory(forward_backward(fn), *T.shapes_of(inputs))
            calls[f"unroll={unroll}"] = (compiled, inputs)
    finally:
        _scan._SEQUENTIAL_UNROLL = original
    timings = T.time_interleaved(calls, repeats=repeats)
    floor_s = timings["floor"].median
    print(f"\n# sequential scan, custom VJP, forward+backward, by unroll (current: {original})")
    T.print_table(
        ["unroll", "fwd+bwd", "min..max", "/floor", "min/min"],
        [
            [
                name,
                T.seconds(t.median),
                T.seconds(t.low) + " .. " + T.seconds(t.high),
                T.ratio(t.median / floor_s),
                T.ratio(t.low / timings["floor"].low),
            ]
            for name, t in timings.items()
        ],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", "-B", type=int, default=32)
    parser.add_argument("--length", "-L", type=int, default=16384)
    parser.add_argument("--state", "-P", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--layout",
        choices=("BLP", "LBP"),
        default="BLP",
        help="BLP: (B, L, P) arrays, scan vmapped over B (as in the layer); LBP: (L, B, P), no vmap",
    )
    parser.add_argument("--max-gib", type=float, default=12.0, help="skip running variants whose XLA memory exceeds this")
    parser.add_argument("--no-forward", action="store_true", help="time forward+backward only")
    parser.add_argument("--no-autodiff", action="store_true", help="leave out the plain-autodiff variants")
    parser.add_argument("--unroll-sweep", type=str, default="", help="comma-separated unroll values to compare")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the script runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.length, args.state, args.repeats = 2, 256, 16, 3

    T.print_header("linear_scan: forward and forward+backward vs a memory floor")
    size = args.batch * args.length * args.state * 8
    print(
        f"# B={args.batch} L={args.length} P={args.state} complex64, layout {args.layout}"
        + (" (vmapped over B)" if args.layout == "BLP" else " (time-major, no vmap)")
        + "; "
        f"one (B, L, P) array = {T.gib(size)}; auto = {resolve_scan_method('auto')} on "
        f"{jax.default_backend()}; _SEQUENTIAL_UNROLL={_scan._SEQUENTIAL_UNROLL}; repeats={args.repeats}"
    )
    print("# floor: forward+backward of x = a*b (reads a, b, x̄; writes x, ā, b̄ once: 6 array passes)")
    inputs = make_inputs(args.batch, args.length, args.state, key=jax.random.key(0), layout=args.layout)
    fns = variants(args.layout)
    if args.no_autodiff:
        fns = {k: v for k, v in fns.items() if "autodiff" not in k}
    results = measure(fns, inputs, repeats=args.repeats, max_gib=args.max_gib, forward=not args.no_forward)
    print_results(results, "floor: x = a*b")
    auto = f"{resolve_scan_method('auto')}, custom VJP"
    if results[auto]["fb"]:
        value = results[auto]["fb"].median / results["floor: x = a*b"]["fb"].median
        low = results[auto]["fb"].low / results["floor: x = a*b"]["fb"].low
        print(f"\nauto ({auto}) forward+backward / floor = {value:.2f}x (medians), {low:.2f}x (minima)   (target <= 2x)")
    if args.unroll_sweep:
        unroll_sweep(
            [int(v) for v in args.unroll_sweep.split(",")], inputs, repeats=args.repeats, layout=args.layout
        )


if __name__ == "__main__":
    main()
