"""`fuse_modules`: replace a run of modules (Conv2d-ReLU, Linear-ReLU, Conv2d-BatchNorm2d,
Conv2d-BatchNorm2d-ReLU) by one module, before `prepare`.

A batch norm in eval mode folds into the convolution before it (PyTorch's
fuse_conv_bn_weights): `w' = w * gamma / sqrt(var + eps)` per output channel and
`b' = (b - mean) * gamma / sqrt(var + eps) + beta`. The fused module takes the first name;
the others become `Identity`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pyaten
import pyaten.nn as nn
from pyaten.ao.nn import intrinsic as nni
from pyaten.nn.modules.module import Module

__all__ = ["fuse_modules", "fuse_known_modules", "fuse_conv_bn_eval"]


def fuse_conv_bn_eval(conv: Module, bn: Module) -> Module:
    """A copy of `conv` with the eval-mode batch norm `bn` folded into its weight and bias."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    with pyaten.no_grad():
        rsqrt = pyaten.rsqrt(bn.running_var + bn.eps)
        gamma = bn.weight if bn.weight is not None else pyaten.ones_like(bn.running_mean)
        beta = bn.bias if bn.bias is not None else pyaten.zeros_like(bn.running_mean)
        bias = conv.bias if conv.bias is not None else pyaten.zeros_like(bn.running_mean)
        shape = [-1] + [1] * (conv.weight.dim() - 1)
        weight = conv.weight * (gamma * rsqrt).reshape(shape)
        new_bias = (bias - bn.running_mean) * rsqrt * gamma + beta
    fused.weight = nn.Parameter(weight.detach(), conv.weight.requires_grad)
    fused.bias = nn.Parameter(new_bias.detach(), True)
    return fused


def _conv_bn(is_qat: bool, conv: Module, bn: Module) -> Module:
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat or conv.training:
        raise NotImplementedError("pyaten fuses Conv2d and BatchNorm2d in eval mode only")
    return fuse_conv_bn_eval(conv, bn)


def _conv_bn_relu(is_qat: bool, conv: Module, bn: Module, relu: Module) -> Module:
    return nni.ConvReLU2d(_conv_bn(is_qat, conv, bn), relu)


_FUSERS: dict[tuple[type, ...], Callable[..., Module]] = {
    (nn.Conv2d, nn.ReLU): lambda is_qat, conv, relu: nni.ConvReLU2d(conv, relu),
    (nn.Linear, nn.ReLU): lambda is_qat, linear, relu: nni.LinearReLU(linear, relu),
    (nn.Conv2d, nn.BatchNorm2d): _conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): _conv_bn_relu,
}


def fuse_known_modules(mod_list: list, is_qat: bool = False,
                       additional_fuser_method_mapping: dict | None = None) -> list:
    """The modules replacing `mod_list`: the fused one first, then Identity for the rest."""
    types = tuple(type(m) for m in mod_list)
    mapping = {**_FUSERS, **(additional_fuser_method_mapping or {})}
    fuser = mapping.get(types)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    replacements = [fuser(is_qat, *mod_list)]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        replacements.append(identity)
    return replacements


def _get(model: Module, name: str) -> Module:
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set(model: Module, name: str, module: Module) -> None:
    *parents, last = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, last, module)


def fuse_modules(model: Module, modules_to_fuse: list, inplace: bool = False,
                 fuser_func: Callable[..., list] = fuse_known_modules,
                 fuse_custom_config_dict: Any = None) -> Module:
    """`model` (a copy unless `inplace`) with each list of submodule names in
    `modules_to_fuse` fused into one module."""
    if not inplace:
        model = copy.deepcopy(model)
    groups = [modules_to_fuse] if all(isinstance(n, str) for n in modules_to_fuse) \
        else modules_to_fuse
    for group in groups:
        replacements = fuser_func([_get(model, name) for name in group], False)
        for name, module in zip(group, replacements):
            _set(model, name, module)
    return model
