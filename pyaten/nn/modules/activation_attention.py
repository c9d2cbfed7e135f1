"""nn.MultiheadAttention: the module around `F.multi_head_attention_forward`.

PyTorch keeps it in `activation.py`; it lives apart here. Parameter names, their order in
`state_dict`, the initialisation and the repr (`out_proj` prints as
`NonDynamicallyQuantizableLinear`) are PyTorch's.

Note: no fast path. PyTorch's eval-mode, no-grad call may go to a fused kernel
(`_native_multi_head_attention`); it computes the same function, so this module always takes
the composite path through `F.multi_head_attention_forward`.
"""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn import functional as F
from pyaten.nn import init
from pyaten.nn.functional._norm import _canonical_mask
from pyaten.nn.modules.linear import NonDynamicallyQuantizableLinear, _empty
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size `embed_dim // num_heads`.

    Projections are packed in `in_proj_weight` (3*embed_dim, embed_dim) when key and value
    have embed_dim features, and separate `q/k/v_proj_weight` otherwise (kdim / vdim).
    """

    __constants__ = ["batch_first"]

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                "embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        def weight(*shape: int) -> Parameter:
            return Parameter(_empty(shape, device, dtype))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = weight(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = weight(embed_dim, embed_dim)
            self.k_proj_weight = weight(embed_dim, self.kdim)
            self.v_proj_weight = weight(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = weight(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = weight(1, 1, embed_dim)
            self.bias_v = weight(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for proj in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(proj)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def __setstate__(self, state: dict) -> None:
        # checkpoints from before kdim/vdim existed lack the flag; they were all packed
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """(attn_output, attn_weights); the weights are None when need_weights=False."""
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(
            key_padding_mask, "key_padding_mask",
            None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype,
        )
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if self.batch_first and is_batched:
            query, key, value = _to_sequence_first(query, key, value)
        separate: dict[str, Any] = {}
        if not self._qkv_same_embed_dim:
            separate = {
                "use_separate_proj_weight": True,
                "q_proj_weight": self.q_proj_weight,
                "k_proj_weight": self.k_proj_weight,
                "v_proj_weight": self.v_proj_weight,
            }
        output, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
            self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate,
        )
        if self.batch_first and is_batched:
            output = output.transpose(1, 0)
        return output, weights

    def merge_masks(
        self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, query: Tensor
    ) -> tuple[Tensor | None, int | None]:
        """One (batch, heads, L, L) mask from both (mask_type 2), or the padding mask alone
        (mask_type 1), as PyTorch's fused kernels take them; (None, None) without masks."""
        merged: Tensor | None = None
        mask_type: int | None = None
        if key_padding_mask is not None:
            merged, mask_type = key_padding_mask, 1
        if attn_mask is not None:
            batch, seq_len, _ = query.shape
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch, self.num_heads, -1, -1
                )
            merged, mask_type = expanded, 2
            if key_padding_mask is not None:
                padding = key_padding_mask.view(batch, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1
                )
                merged = expanded + padding
        return merged, mask_type


def _to_sequence_first(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, ...]:
    """Swap the batch and sequence dims, keeping `query is key is value` identities (the
    functional form takes the packed fast projection when they hold)."""
    if key is value:
        if query is key:
            query = key = value = query.transpose(1, 0)
        else:
            query, key = query.transpose(1, 0), key.transpose(1, 0)
            value = key
    else:
        query, key, value = (x.transpose(1, 0) for x in (query, key, value))
    return query, key, value
