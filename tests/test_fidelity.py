"""Fidelity details differential against PyTorch: version counters, complex32, and the errors
of `tensor()` and `requires_grad`.

Each case is a function of the library module (`pyaten` or `torch`), run on both.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from _helpers import assert_same, dtype_name, run_both, same_error

import pyaten

Case = Callable[[Any], Any]


def _both(case: Case) -> tuple[Any, Any] | None:
    return run_both(lambda: case(pyaten), lambda: case(torch))


# ---- version counters ------------------------------------------------------------------------
#
# PyTorch bumps `_version` in its ADInplaceOrView kernels: once per in-place or out= call by
# the user, never for a write a factory or a kernel makes into a tensor it just created.


def _f(m):
    return m.tensor([[0.5, -1.5], [2.0, 0.25]])


def _i(m):
    return m.tensor([[1, 2], [3, 4]])


def _b(m):
    return m.tensor([[True, False], [False, True]])


def _setitem(key: Callable[[Any], Any], value: Callable[[Any], Any]) -> Case:
    def case(m):
        t = _f(m)
        t[key(m)] = value(m)
        return t

    return case


def _augmented(name: str, make: Case = _f) -> Case:
    def case(m):
        t = make(m)
        getattr(t, name)(make(m))
        return t

    return case


def _through_view(m):
    t = _f(m)
    t[0].mul_(2)
    return t


def _data_assigned(m):
    t = _f(m)
    t.data = m.ones(2)
    return t


VERSION_CASES: dict[str, Case] = {
    # factories: the fill runs below ADInplaceOrView
    "empty": lambda m: m.empty(2),
    "empty_strided": lambda m: m.empty_strided((2,), (1,)),
    "zeros": lambda m: m.zeros(2, 2),
    "ones": lambda m: m.ones(2, dtype=m.int64),
    "full": lambda m: m.full((2,), True),
    "full_float": lambda m: m.full((2, 3), 1.5),
    "arange": lambda m: m.arange(4),
    "arange_float": lambda m: m.arange(0, 1, 0.25),
    "rand": lambda m: m.rand(2),
    "randn": lambda m: m.randn(2, dtype=m.float64),
    "empty_like": lambda m: m.empty_like(_f(m)),
    "zeros_like": lambda m: m.zeros_like(_f(m)),
    "ones_like": lambda m: m.ones_like(_f(m)),
    "full_like": lambda m: m.full_like(_f(m), 2),
    "new_empty": lambda m: _f(m).new_empty(2),
    "new_zeros": lambda m: _f(m).new_zeros(2),
    "new_ones": lambda m: _f(m).new_ones(2),
    "new_full": lambda m: _f(m).new_full((2,), 1.0),
    "tensor": lambda m: m.tensor([1.0]),
    "tensor_numpy": lambda m: m.tensor(np.ones(2)),
    "as_tensor": lambda m: m.as_tensor([1.0]),
    "from_numpy": lambda m: m.from_numpy(np.ones(2)),
    "scalar_tensor": lambda m: m.scalar_tensor(1.0),
    "Tensor": lambda m: m.Tensor([1.0, 2.0]),
    "zeros_meta": lambda m: m.zeros(2, device="meta"),
    "full_meta": lambda m: m.full((2,), 1.0, device="meta"),
    # functional ops and kernels writing into their own new results
    "clone": lambda m: _f(m).clone(),
    "contiguous": lambda m: _f(m).t().contiguous(),
    "to": lambda m: _f(m).to(m.float64),
    "add": lambda m: _f(m) + 1,
    "abs": lambda m: m.abs(_f(m)),
    "deg2rad": lambda m: m.deg2rad(_f(m)),
    "nan_to_num": lambda m: m.nan_to_num(_f(m)),
    "fill": lambda m: m.fill(_f(m), 1.0),
    "where": lambda m: m.where(_b(m), _f(m), 0.0),
    "cat": lambda m: m.cat([_f(m), _f(m)]),
    "sum": lambda m: _f(m).sum(),
    "matmul": lambda m: _f(m) @ _f(m),
    # in-place ops: one bump each
    "add_": lambda m: _f(m).add_(1),
    "add_twice": lambda m: _f(m).add_(1).mul_(2),
    "fill_": lambda m: _f(m).fill_(1),
    "fill_tensor": lambda m: _f(m).fill_(m.tensor(2.0)),
    "zero_": lambda m: _f(m).zero_(),
    "copy_": lambda m: _f(m).copy_(_i(m)),
    "neg_": lambda m: _f(m).neg_(),
    "exp_": lambda m: _f(m).exp_(),
    "abs_": lambda m: _f(m).abs_(),
    "clamp_": lambda m: _f(m).clamp_(0, 1),
    "div_": lambda m: _f(m).div_(_f(m)),
    "bitwise_and_": lambda m: _i(m).bitwise_and_(_i(m)),
    "logical_not_": lambda m: _b(m).logical_not_(),
    "conj_physical_": lambda m: _f(m).conj_physical_(),
    "cumsum_": lambda m: _f(m).cumsum_(0),
    "index_put_": lambda m: _f(m).index_put_((m.tensor([0]),), m.tensor(1.0)),
    "index_put_acc": lambda m: _f(m).index_put_((m.tensor([0]),), m.tensor(1.0), True),
    "t_": lambda m: _f(m).t_(),
    "unsqueeze_": lambda m: _f(m).unsqueeze_(0),
    "as_strided_": lambda m: _f(m).as_strided_((2,), (1,)),
    "requires_grad_": lambda m: _f(m).requires_grad_(),
    "setitem_int": _setitem(lambda m: 0, lambda m: 5.0),
    "setitem_mask": _setitem(_b, lambda m: 5.0),
    "setitem_index": _setitem(lambda m: m.tensor([0, 1]), lambda m: 5.0),
    "setitem_tensor": _setitem(lambda m: (0, 1), lambda m: m.tensor(7.0)),
    "iadd": _augmented("__iadd__"),
    "imul": _augmented("__imul__"),
    "itruediv": _augmented("__itruediv__"),
    "iand": _augmented("__iand__", _i),
    "through_view": _through_view,
    "view_of_written": lambda m: _f(m).add_(1).view(4),
    "reshape_of_written": lambda m: _f(m).add_(1).t().reshape(4),
    "data_assigned": _data_assigned,
    # out=: one bump, resized or not
    "add_out": lambda m: m.add(_f(m), 1, out=m.empty(2, 2)),
    "add_out_resized": lambda m: m.add(_f(m), 1, out=m.empty(0)),
    "abs_out": lambda m: m.abs(_f(m), out=m.empty(2, 2)),
    "eq_out": lambda m: m.eq(_f(m), 0.5, out=m.empty(2, 2, dtype=m.bool)),
    "clamp_out": lambda m: m.clamp(_f(m), 0, 1, out=m.empty(2, 2)),
    "mm_out": lambda m: m.mm(_f(m), _f(m), out=m.empty(2, 2)),
    "sum_out": lambda m: m.sum(_f(m), 0, out=m.empty(2)),
    "cat_out": lambda m: m.cat([_f(m), _f(m)], out=m.empty(4, 2)),
    "where_out": lambda m: m.where(_b(m), _f(m), _f(m), out=m.empty(2, 2)),
    "zeros_out": lambda m: m.zeros(2, out=m.empty(2)),
    "ones_out_resized": lambda m: m.ones(3, out=m.empty(0)),
    "full_out": lambda m: m.full((2,), 1.0, out=m.empty(2)),
    "arange_out": lambda m: m.arange(3, out=m.empty(3)),
    "arange_out_resized": lambda m: m.arange(3, out=m.empty(0)),
    "rand_out": lambda m: m.rand(2, out=m.empty(2)),
    "randn_out": lambda m: m.randn(2, out=m.empty(2)),
    "max_out_values": lambda m: m.max(_f(m), 0, out=(m.empty(2), m.empty(2, dtype=m.long)))[0],
    "max_out_indices": lambda m: m.max(_f(m), 0, out=(m.empty(2), m.empty(2, dtype=m.long)))[1],
}


@pytest.mark.parametrize("name", list(VERSION_CASES))
def test_version_counter_bumps_where_pytorch_bumps(name):
    pair = _both(VERSION_CASES[name])
    assert pair is not None, f"torch refused {name}"
    ours, theirs = pair
    assert ours._version == theirs._version


def test_a_view_shares_the_version_of_its_base():
    for m in (torch, pyaten):
        base = m.zeros(4)
        view = base[1:]
        view.add_(1)
        base.mul_(2)
        assert (base._version, view._version) == (2, 2)


# ---- tensor(): data that is not numbers --------------------------------------------------------


def _nested(depth: int) -> list:
    data: object = 1
    for _ in range(depth):
        data = [data]
    return data  # type: ignore[return-value]


TENSOR_ERRORS: dict[str, Case] = {
    "list_of_str": lambda m: m.tensor(["a"]),
    "nested_str": lambda m: m.tensor([["a"]]),
    "str_first": lambda m: m.tensor(["a", 1]),
    "str_later": lambda m: m.tensor([1, "a"]),
    "str_row": lambda m: m.tensor([[1], ["a"]]),
    "str_in_longer_row": lambda m: m.tensor([[1, 2], ["a", "b"]]),
    "str_after_empty": lambda m: m.tensor([[], "a"]),
    "str_row_too_long": lambda m: m.tensor([[1], "ab"]),
    "str_row_too_long_dtype": lambda m: m.tensor([[1], "ab"], dtype=m.float32),
    "str_with_dtype": lambda m: m.tensor(["a"], dtype=m.float32),
    "numpy_str_scalar": lambda m: m.tensor([np.str_("a")]),
    "plain_str": lambda m: m.tensor("a"),
    "bytes": lambda m: m.tensor(b"a"),
    "list_of_bytes": lambda m: m.tensor([b"a"]),
    "empty_str": lambda m: m.tensor([""]),
    "none": lambda m: m.tensor([None]),
    "none_before_short_row": lambda m: m.tensor([[1, 2], [None]]),
    "short_row": lambda m: m.tensor([[1, 2], [3]]),
    "short_row_with_none_dtype": lambda m: m.tensor([[1, 2], [None]], dtype=m.float32),
    "object": lambda m: m.tensor([object()]),
    "too_deep": lambda m: m.tensor(_nested(129)),
    "Tensor_of_str": lambda m: m.Tensor(["a"]),
    "as_tensor_of_str": lambda m: m.as_tensor(["a"]),
    "numpy_str_array": lambda m: m.tensor(np.array(["a"])),
}


@pytest.mark.parametrize("name", list(TENSOR_ERRORS))
def test_tensor_refuses_what_pytorch_refuses(name):
    case = TENSOR_ERRORS[name]
    if name == "numpy_str_array":  # pyaten lists the NumPy types it takes (no uint16..64)
        same_error(lambda: case(pyaten), lambda: case(torch), message=False)
        with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.str_"):
            case(pyaten)
        return
    same_error(lambda: case(pyaten), lambda: case(torch))


SCALAR_TENSOR_CASES: dict[str, Case] = {
    "int": lambda m: m.scalar_tensor(2),
    "bool": lambda m: m.scalar_tensor(True),
    "float_as_int64": lambda m: m.scalar_tensor(2.5, dtype=m.int64),
    "complex": lambda m: m.scalar_tensor(1j, dtype=m.complex64),
    "dtype_not_a_dtype": lambda m: m.scalar_tensor(1, dtype=1),
    "dtype_positional": lambda m: m.scalar_tensor(1, m.float64),
}


@pytest.mark.parametrize("name", list(SCALAR_TENSOR_CASES))
def test_scalar_tensor_as_in_pytorch(name):
    case = SCALAR_TENSOR_CASES[name]
    pair = run_both(lambda: case(pyaten), lambda: case(torch), message=False)
    if pair is not None:
        assert_same(*pair)


# ---- requires_grad on a dtype that cannot have gradients ----------------------------------------


def _attribute(m):
    t = m.ones(2, dtype=m.int64)
    t.requires_grad = True


REQUIRES_GRAD_ERRORS: dict[str, Case] = {
    "tensor_int": lambda m: m.tensor([1], requires_grad=True),
    "tensor_bool": lambda m: m.tensor([True], requires_grad=True),
    "tensor_numpy_int": lambda m: m.tensor(np.array([1]), requires_grad=True),
    "ones": lambda m: m.ones(2, dtype=m.int64, requires_grad=True),
    "zeros": lambda m: m.zeros(2, dtype=m.int32, requires_grad=True),
    "full": lambda m: m.full((2,), 1, requires_grad=True),
    "arange": lambda m: m.arange(3, requires_grad=True),
    "empty": lambda m: m.empty(2, dtype=m.int32, requires_grad=True),
    "zeros_like": lambda m: m.zeros_like(m.ones(2, dtype=m.int64), requires_grad=True),
    "requires_grad_": lambda m: m.ones(2, dtype=m.int64).requires_grad_(),
    "requires_grad_bool": lambda m: m.ones(2, dtype=m.bool).requires_grad_(True),
    "attribute": _attribute,
}


@pytest.mark.parametrize("name", list(REQUIRES_GRAD_ERRORS))
def test_requires_grad_refusal_has_pytorchs_message(name):
    case = REQUIRES_GRAD_ERRORS[name]
    same_error(lambda: case(pyaten), lambda: case(torch))


@pytest.mark.parametrize("dtype", ["float16", "complex64", "complex32"])
def test_requires_grad_allowed_for_floating_and_complex(dtype):
    for m in (torch, pyaten):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = m.ones(2, dtype=getattr(m, dtype), requires_grad=True)
            assert t.requires_grad
            assert m.zeros(2, dtype=getattr(m, dtype)).requires_grad_().requires_grad
            assert not m.ones(2, dtype=m.int64).requires_grad_(False).requires_grad


# ---- complex32 ---------------------------------------------------------------------------------
#
# pyaten stores complex32 as two float16 per element, computes in complex64 and rounds each
# part once (see Note: complex32 in NumPy in pyaten.core.dtypes). The values compared here are
# both sides converted to complex64 (neither numpy() takes complex32).


def _c(m):
    return m.tensor([[1 + 2j, 3j], [0.5, -1 - 1j]], dtype=m.complex32)


def _h(m):
    return m.tensor([[1.5, 2.0], [-0.25, 4.0]], dtype=m.float16)


def _wide(x: Any) -> Any:
    if isinstance(x, (torch.Tensor, pyaten.Tensor)) and dtype_name(x.dtype) == "complex32":
        return x.to(torch.complex64 if isinstance(x, torch.Tensor) else pyaten.complex64)
    return x


def assert_same_complex32(case: Case) -> None:
    """Both libraries give the same result (dtype, shape and values exactly: complex32 holds
    the same float16 parts) or raise the same error."""
    pair = _both(case)
    if pair is None:
        return
    ours, theirs = pair
    if isinstance(theirs, torch.Tensor):
        assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
        assert_same(_wide(ours), _wide(theirs), rtol=0, atol=0)
    elif isinstance(theirs, str):
        assert ours == theirs.replace("torch.", "pyaten.")
    else:
        assert_same(ours, theirs)


# float16 with a complex tensor, zero-dim tensor or Python complex is complex32 in PyTorch.
PROMOTION_CASES: dict[str, Case] = {
    "add_python_complex": lambda m: _h(m) + 1j,
    "mul_python_complex": lambda m: _h(m) * 1j,
    "add_zero_dim_complex": lambda m: _h(m) + m.tensor(1j),
    "mul_zero_dim_complex": lambda m: _h(m) * m.tensor(2j, dtype=m.complex128),
    "where_python_complex": lambda m: m.where(_h(m) > 0, _h(m), 1j),
    "where_zero_dim_complex": lambda m: m.where(_h(m) > 0, m.tensor(2j), _h(m)),
    "zero_dim_half_and_python_complex": lambda m: m.tensor(1.5, dtype=m.half) + 1j,
    "half_and_complex64_tensor": lambda m: _h(m) + m.tensor([[1j]]),
    "half_inplace_complex": lambda m: _h(m).add_(1j),
    "complex32_and_float32": lambda m: _c(m) + m.ones(2),
    "complex32_and_zero_dim_float64": lambda m: _c(m) + m.tensor(1.0, dtype=m.float64),
    "complex32_and_bfloat16": lambda m: _c(m) + m.ones(2, dtype=m.bfloat16),
    "complex32_and_complex64": lambda m: _c(m) + m.ones(2, dtype=m.complex64),
    "complex32_and_int": lambda m: _c(m) + 1,
    "complex32_times_float": lambda m: _c(m) * 2.5,
}


@pytest.mark.parametrize("name", list(PROMOTION_CASES))
def test_complex32_promotion_and_arithmetic(name):
    assert_same_complex32(PROMOTION_CASES[name])


def _set_complex32(key: Any, value: Callable[[Any], Any]) -> Case:
    def case(m):
        t = _c(m)
        t[key] = value(m)
        return t

    return case


COMPLEX32_CASES: dict[str, Case] = {
    # creation and factories
    "tensor": _c,
    "tensor_rounds": lambda m: m.tensor([0.1 + 0.2j, 1 / 3, 70000 + 1j], dtype=m.chalf),
    "tensor_of_ints": lambda m: m.tensor([1, 2], dtype=m.chalf),
    "tensor_of_numpy": lambda m: m.tensor(np.array([1 + 2j], np.complex64), dtype=m.chalf),
    "tensor_of_tensor": lambda m: m.tensor(_c(m)),
    "scalar_tensor": lambda m: m.scalar_tensor(1j, dtype=m.chalf),
    "zeros": lambda m: m.zeros(2, dtype=m.chalf),
    "ones": lambda m: m.ones(2, dtype=m.chalf),
    "full": lambda m: m.full((2,), 1j, dtype=m.chalf),
    "full_like": lambda m: m.full_like(_c(m), 2 - 1j),
    "empty_shape": lambda m: m.empty(2, 3, dtype=m.chalf).shape,
    "rand_dtype": lambda m: m.rand(2, dtype=m.chalf).dtype,
    # arithmetic on complex32 (computed in complex64, rounded)
    "add": lambda m: _c(m) + _c(m),
    "sub_alpha": lambda m: m.sub(_c(m), _c(m), alpha=1j),
    "add_alpha": lambda m: m.add(_c(m), _c(m), alpha=2),
    "mul": lambda m: _c(m) * _c(m),
    "mul_": lambda m: _c(m).mul_(_c(m)),
    "add_out": lambda m: m.add(_h(m), 1j, out=m.empty(2, 2, dtype=m.chalf)),
    "add_out_complex64": lambda m: m.add(_c(m), _c(m), out=m.empty(2, 2, dtype=m.complex64)),
    "add_float_into_complex32": lambda m: m.add(m.ones(2), 2, out=m.empty(2, dtype=m.chalf)),
    "neg": lambda m: -_c(m),
    "abs": lambda m: _c(m).abs(),
    "sgn": lambda m: _c(m).sgn(),
    "eq": lambda m: _c(m) == _c(m),
    "ne_scalar": lambda m: _c(m) != 1j,
    "isfinite": lambda m: m.tensor([1j, float("inf")], dtype=m.chalf).isfinite(),
    "where": lambda m: m.where(_b(m), _c(m), _h(m)),
    # moving data
    "clone": lambda m: _c(m).clone(),
    "contiguous": lambda m: _c(m).t().contiguous(),
    "index": lambda m: _c(m)[1],
    "index_tensor": lambda m: _c(m)[m.tensor([1, 0])],
    "index_mask": lambda m: _c(m)[_b(m)],
    "cat": lambda m: m.cat([_c(m), _c(m)]),
    "cat_with_half": lambda m: m.cat([_c(m), _h(m)]),
    "setitem_number": _set_complex32(0, lambda m: 5),
    "setitem_complex": _set_complex32((0, 1), lambda m: 2 - 3j),
    "setitem_float_tensor": _set_complex32(1, lambda m: m.tensor([1.5, 2.0])),
    "index_put_accumulate": lambda m: _c(m).index_put_(
        (m.tensor([0, 0]),), m.tensor(1j, dtype=m.chalf), accumulate=True
    ),
    "fill_": lambda m: _c(m).fill_(2j),
    "fill_overflows_to_inf": lambda m: _c(m).fill_(1e6),
    "zero_": lambda m: _c(m).zero_(),
    "copy_from_float": lambda m: _c(m).copy_(m.ones(2, 2)),
    "copy_into_float": lambda m: m.empty(2, 2).copy_(_c(m)),
    # conversions
    "to_complex64": lambda m: _c(m).to(m.complex64),
    "to_complex128": lambda m: _c(m).to(m.complex128),
    "to_float16": lambda m: _c(m).to(m.float16),
    "to_int64": lambda m: _c(m).to(m.int64),
    "to_bool": lambda m: _c(m).to(m.bool),
    "half_to_complex32": lambda m: _h(m).to(m.chalf),
    "complex64_to_complex32": lambda m: m.tensor([1 + 1e-4j, 7e4]).to(m.chalf),
    "bool_to_complex32": lambda m: m.tensor([True, False]).to(m.chalf),
    "tolist": lambda m: _c(m).tolist(),
    "item": lambda m: _c(m)[0, 0].item(),
    "complex()": lambda m: complex(_c(m)[0, 1]),
    "float()": lambda m: float(_c(m)[1, 0]),
    "float()_of_imaginary": lambda m: float(_c(m)[0, 1]),
    "int()": lambda m: int(_c(m)[1, 0]),
    "numpy": lambda m: _c(m).numpy(),
    "numpy_array": lambda m: np.asarray(_c(m)),
    "dlpack": lambda m: m.from_dlpack(_c(m).t()),
    # printing
    "repr": lambda m: repr(_c(m)),
    "repr_of_promoted": lambda m: repr(_h(m) + 1j),
    "repr_nan_inf": lambda m: repr(m.tensor([float("nan") + 1j, float("inf")], dtype=m.chalf)),
    "repr_zero_dim": lambda m: repr(m.tensor(1.25 - 2j, dtype=m.chalf)),
    "repr_scientific": lambda m: repr(m.tensor([[1.25 + 2j, 3j], [0.1, 1e3]], dtype=m.chalf)),
    "repr_whole": lambda m: repr(m.tensor([1, 2], dtype=m.chalf)),
    "repr_empty": lambda m: repr(m.zeros(0, dtype=m.chalf)),
    "repr_meta": lambda m: repr(m.empty(2, dtype=m.chalf, device="meta")),
    # the dtype object
    "dtype_repr": lambda m: repr(m.complex32),
    "dtype_facts": lambda m: (m.chalf.itemsize, m.chalf.is_complex, m.chalf.is_floating_point,
                              m.chalf.is_signed),
    "to_real": lambda m: m.complex32.to_real(),
    "to_complex": lambda m: m.float16.to_complex(),
    "element_size": lambda m: _c(m).element_size(),
}


@pytest.mark.parametrize("name", list(COMPLEX32_CASES))
def test_complex32_behaves_as_in_pytorch(name):
    assert_same_complex32(COMPLEX32_CASES[name])


# What PyTorch has no ComplexHalf CPU kernel for stays refused. (The kernel name in the message
# is each family's own: pyaten's rows name `exp_cpu` where PyTorch's vectorised loop is
# `exp_vml_cpu`.)
COMPLEX32_REFUSED: dict[str, Case] = {
    "div": lambda m: _c(m) / _c(m),
    "div_scalar": lambda m: _c(m) / 2,
    "exp": lambda m: _c(m).exp(),
    "sqrt": lambda m: _c(m).sqrt(),
    "sum": lambda m: _c(m).sum(),
    "mean": lambda m: _c(m).mean(),
    "pow": lambda m: _c(m) ** 2,
    "square": lambda m: _c(m).square(),
    "mm": lambda m: _c(m) @ _c(m),
    "lt": lambda m: _c(m) < _c(m),
    "equal": lambda m: m.equal(_c(m), _c(m).clone()),
    "arange": lambda m: m.arange(3, dtype=m.chalf),
}


@pytest.mark.parametrize("name", list(COMPLEX32_REFUSED))
def test_complex32_refused_where_pytorch_refuses_it(name):
    case = COMPLEX32_REFUSED[name]
    same_error(lambda: case(pyaten), lambda: case(torch), message=False)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexHalf'"):
        case(pyaten)


def test_complex32_dlpack_shares_memory_both_ways():
    ours = _c(pyaten)
    theirs = torch.from_dlpack(ours)
    assert theirs.dtype == torch.complex32
    theirs[0, 0] = 7
    assert ours[0, 0].item() == 7
    back = pyaten.from_dlpack(torch.tensor([1j], dtype=torch.chalf))
    assert back.dtype is pyaten.complex32 and back.item() == 1j


def test_first_complex32_tensor_warns_once_as_in_pytorch():
    code = (
        "import warnings, {lib}\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    h = {lib}.ones(2, dtype={lib}.float16)\n"
        "    h + 1j; {lib}.zeros(2, dtype={lib}.chalf); h * 1j\n"
        "print([str(w.message).split(' (Triggered')[0] for w in seen])\n"
    )
    outputs = [
        subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True,
                       text=True, check=True, timeout=600).stdout
        for lib in ("torch", "pyaten")
    ]
    assert outputs[0] == outputs[1]
    assert "ComplexHalf support is experimental" in outputs[1]


def test_complex32_is_not_a_numpy_dtype():
    structured = np.zeros(2, dtype=pyaten.complex32.numpy)
    with pytest.raises(TypeError, match="can't convert np.ndarray"):
        pyaten.from_numpy(structured)
    assert pyaten.chalf is pyaten.complex32
