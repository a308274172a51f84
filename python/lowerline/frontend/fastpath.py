"""PyTorch's inference fast paths written as the ops they stand for.

``nn.TransformerEncoderLayer`` and ``nn.MultiheadAttention`` in eval mode
under ``no_grad`` call fused kernels (``torch._transformer_encoder_layer_fwd``,
``torch._native_multi_head_attention``) unless the tensors carry a
``__torch_function__``. ``torch.export`` tensors do, so ``lowerline.compile``
never meets them; TorchDynamo's fake tensors do not, so its graphs call them
(lowerline.dynamo). Neither has an ATen decomposition or a torch-mlir
lowering; ``FAST_PATHS`` maps each to the same computation in functional ops
(linear, softmax, layer norm), which export traces into ATen ops lowerline
compiles. Masks follow ``MultiheadAttention.merge_masks``: ``mask_type`` 0 a
``(L, S)`` attention mask, 1 a ``(B, S)`` key padding mask, 2 both merged to
``(B, H, L, S)``; a boolean mask is True where attention is not allowed, a
float mask is added to the scores. Inputs are batch first (the fast paths
require it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F


def _additive_mask(mask: torch.Tensor, mask_type: int | None, scores: torch.Tensor) -> torch.Tensor:
    """``mask`` as a float tensor to add to ``scores`` (B, H, L, S)."""
    batch, _, queries, keys = scores.shape
    if mask_type == 0:
        mask = mask.view(1, 1, queries, keys)
    elif mask_type == 1:
        mask = mask.view(batch, 1, 1, keys)
    if mask.dtype == torch.bool:
        return torch.zeros((), dtype=scores.dtype).masked_fill(mask, float("-inf"))
    return mask.to(scores.dtype)


def multi_head_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    embed_dim: int,
    num_heads: int,
    qkv_weight: torch.Tensor,
    qkv_bias: torch.Tensor,
    proj_weight: torch.Tensor,
    proj_bias: torch.Tensor,
    mask: torch.Tensor | None = None,
    need_weights: bool = True,
    average_attn_weights: bool = True,
    mask_type: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``torch._native_multi_head_attention``: (output, attention weights or None)."""
    batch, queries, _ = query.shape
    head_dim = embed_dim // num_heads
    weights = qkv_weight.chunk(3)
    biases = qkv_bias.chunk(3)

    def heads(x: torch.Tensor, index: int) -> torch.Tensor:
        projected = F.linear(x, weights[index], biases[index])
        return projected.view(batch, x.shape[1], num_heads, head_dim).transpose(1, 2)

    q, k, v = heads(query, 0), heads(key, 1), heads(value, 2)
    scores = (q / math.sqrt(head_dim)) @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + _additive_mask(mask, mask_type, scores)
    attention = torch.softmax(scores, dim=-1)
    output = (attention @ v).transpose(1, 2).reshape(batch, queries, embed_dim)
    output = F.linear(output, proj_weight, proj_bias)
    if not need_weights:
        return output, None
    return output, attention.mean(dim=1) if average_attn_weights else attention


def transformer_encoder_layer(
    src: torch.Tensor,
    embed_dim: int,
    num_heads: int,
    qkv_weight: torch.Tensor,
    qkv_bias: torch.Tensor,
    proj_weight: torch.Tensor,
    proj_bias: torch.Tensor,
    use_gelu: bool,
    norm_first: bool,
    eps: float,
    norm_weight_1: torch.Tensor,
    norm_bias_1: torch.Tensor,
    norm_weight_2: torch.Tensor,
    norm_bias_2: torch.Tensor,
    ffn_weight_1: torch.Tensor,
    ffn_bias_1: torch.Tensor,
    ffn_weight_2: torch.Tensor,
    ffn_bias_2: torch.Tensor,
    mask: torch.Tensor | None = None,
    mask_type: int | None = None,
) -> torch.Tensor:
    """``torch._transformer_encoder_layer_fwd``: TransformerEncoderLayer's
    forward in eval mode (no dropout)."""
    projections = (qkv_weight, qkv_bias, proj_weight, proj_bias)

    def self_attention(x: torch.Tensor) -> torch.Tensor:
        return multi_head_attention(
            x, x, x, embed_dim, num_heads, *projections, mask, False, True, mask_type
        )[0]

    def feed_forward(x: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
        return F.linear(hidden, ffn_weight_2, ffn_bias_2)

    def norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), weight, bias, eps)

    if norm_first:
        x = src + self_attention(norm(src, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(src + self_attention(src), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)


FAST_PATHS: dict[Any, Callable[..., Any]] = {
    torch._transformer_encoder_layer_fwd: transformer_encoder_layer,
    torch._native_multi_head_attention: multi_head_attention,
}
