"""What Python dispatch costs per call, pyaten beside PyTorch (both on one thread): `a + b` and
`a.sum()` on 4x4 float32 plain, under an empty TorchDispatchMode, on a `__torch_function__`
subclass (a bare `class Sub(Tensor)`), and on a wrapper subclass that unwraps to its inner
tensor (issue 28's speed report).

Run: .venv/bin/python benchmarks/bench_python_dispatch.py [--quick]
"""

from __future__ import annotations

import argparse

from _common import per_call_cpu_us


def _cases(lib, pd, tree_map):
    class Empty(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Sub(lib.Tensor):
        pass

    class Wrapper(lib.Tensor):
        @staticmethod
        def __new__(cls, inner):
            return lib.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

        def __init__(self, inner):
            self.inner = inner

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(x):
                return x.inner if isinstance(x, Wrapper) else x

            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(lambda x: Wrapper(x) if isinstance(x, lib.Tensor) else x, out)

    a = lib.ones(4, 4)
    b = lib.ones(4, 4)
    sa, sb = a.as_subclass(Sub), b.as_subclass(Sub)
    wa, wb = Wrapper(a), Wrapper(b)
    mode = Empty()

    def under_mode(fn):
        def run():
            with mode:
                return fn()

        return run

    return {
        "a + b (plain)": lambda: a + b,
        "a + b (empty mode)": under_mode(lambda: a + b),
        "a + b (__torch_function__ subclass)": lambda: sa + sb,
        "a + b (wrapper subclass)": lambda: wa + wb,
        "a.sum() (plain)": lambda: a.sum(),
        "a.sum() (empty mode)": under_mode(lambda: a.sum()),
        "a.sum() (__torch_function__ subclass)": lambda: sa.sum(),
        "a.sum() (wrapper subclass)": lambda: wa.sum(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    number, repeat = (200, 3) if options.quick else (2000, 7)

    import torch
    import torch.utils._python_dispatch as torch_pd
    import torch.utils._pytree as torch_pytree

    import pyaten
    import pyaten.utils._python_dispatch as pyaten_pd
    from pyaten.utils import _pytree

    torch.set_num_threads(1)
    ours = _cases(pyaten, pyaten_pd, _pytree.tree_map)
    theirs = _cases(torch, torch_pd, torch_pytree.tree_map)
    print(f"{'call (4x4 float32, one thread)':42} {'pyaten us':>10} {'torch us':>10} {'ratio':>7}")
    for name in ours:
        # The mode cases include entering and leaving the mode, in both libraries.
        p = per_call_cpu_us(ours[name], number, repeat)
        t = per_call_cpu_us(theirs[name], number, repeat)
        print(f"{name:42} {p:10.2f} {t:10.2f} {p / t:7.2f}")


if __name__ == "__main__":
    main()
