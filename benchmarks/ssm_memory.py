"""Memory of the S5 layer's forward+backward with per-step gaps, from XLA's
memory analysis (compile only: nothing is run, so variants far larger than
this machine's memory can be sized).

The figure is temp + argument + output bytes of the compiled
`value_and_grad` (loss = mean(y²), gradients with respect to every SSM
parameter and to u): everything the computation holds at once, at worst.
The variants are those of `ssm_gaps.py` (fixed step, per-step gaps,
per-step with plain autodiff through the scan, naive (L, P, H), the selective
layers "scaled" and "split"), each with the
sequential and the associative scan.

    python3 benchmarks/ssm_memory.py                # B=8, L=4096, H=128, P=128
    python3 benchmarks/ssm_memory.py --quick
"""

from __future__ import annotations

import argparse

import _timing as T
import jax
import jax.numpy as jnp
from ssm_gaps import compile_variant, fixed_step, forward_backward, naive_per_step, per_step, unfused_per_step

from s5ts.nn import S5SSM, _scan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", "-B", type=int, default=8)
    parser.add_argument("--length", "-L", type=int, default=4096)
    parser.add_argument("--d-model", "-H", type=int, default=128)
    parser.add_argument("--state", "-P", type=int, default=128)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the script runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.length, args.d_model, args.state = 2, 128, 16, 16
    B, L, H, P = args.batch, args.length, args.d_model, args.state

    T.print_header("S5SSM forward+backward memory (XLA memory analysis, compile only)")
    print(f"# B={B} L={L} H={H} P={P}, float32/complex64; loss = mean(y^2), grads w.r.t. all SSM parameters and u")
    u = jax.ShapeDtypeStruct((B, L, H), jnp.float32)
    gaps = jax.ShapeDtypeStruct((B, L), jnp.float32)
    key = jax.random.key(0)

    variants = []
    for method in ("sequential", "associative"):
        ssm = S5SSM(d_model=H, state_size=P, scan=method, key=key)
        variants += [
            (f"fixed step, {method}", fixed_step, ssm, None),
            (f"per-step gaps, {method}, the layer", per_step, ssm, None),
            (f"per-step gaps, {method}, unfused, custom-VJP scan", unfused_per_step, ssm, None),
            (f"per-step gaps, {method}, unfused, plain autodiff", unfused_per_step, ssm, method),
            (f"per-step, naive (L,P,H), {method}", naive_per_step, ssm, None),
        ]
        variants += [
            (f"per-step gaps, {method}, selective {name!r}", per_step,
             S5SSM(d_model=H, state_size=P, scan=method, selective=name, key=key), None)
            for name in ("scaled", "split")
        ]
    rows, totals = [], {}
    for name, layer, ssm, autodiff in variants:
        _, memory, compile_s = compile_variant(forward_backward, layer, autodiff, (ssm, u, gaps))
        totals[name] = memory.total
        rows.append(
            [
                name,
                T.gib(memory.argument),
                T.gib(memory.output),
                T.gib(memory.temp),
                T.gib(memory.total),
                f"{compile_s:.1f} s",
            ]
        )
    for row, (name, *_rest) in zip(rows, variants):
        method = "associative" if "associative" in name else "sequential"
        base = totals[f"per-step gaps, {method}, the layer"]
        row.insert(5, T.ratio(totals[name] / base))
    T.print_table(["variant", "args", "outputs", "temp", "temp+args+out", "/per-step", "compile"], rows)
    complex_bytes = 8
    print(
        f"\nanalytic: one (B, L, P, H) complex64 array (the naive B̄) = {T.gib(B * L * P * H * complex_bytes)}; "
        f"one (B, L, P) complex64 array (Λ̄, w, B̃u or x) = {T.gib(B * L * P * complex_bytes)}"
    )
    print(f"auto scan here = {_scan.resolve_scan_method('auto')}")


if __name__ == "__main__":
    main()
