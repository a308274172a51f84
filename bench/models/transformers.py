"""Transformer layers: ViT (hand-written attention), BERT and GPT-2 layers
(``F.scaled_dot_product_attention``, padding and causal masks), a LLaMA-style
block (RMSNorm, rotary embedding, SwiGLU), MLP-Mixer, and PyTorch's own
encoder and decoder layers. Inputs are (batch, sequence, features)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, s, d = x.shape
    return x.view(b, s, heads, d // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


class HandAttention(nn.Module):
    """Multi-head self-attention written out: one QKV projection, softmax(QK^T/sqrt(d))V."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return self.proj(merge_heads(scores.softmax(dim=-1) @ v))


class ViTBlock(nn.Module):
    """Pre-norm ViT block: LN, attention, residual; LN, MLP (GELU), residual."""

    def __init__(self, dim: int = 192, heads: int = 3, mlp: int = 768):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = HandAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = gelu_mlp(dim, mlp)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    """Patch embedding (16x16/16 convolution), class token, position
    embedding, one ViT block, classifier on the class token."""

    def __init__(self, image: int = 128, patch: int = 16, dim: int = 192, classes: int = 100):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.block = ViTBlock(dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.block(x))[:, 0])


class BertLayer(nn.Module):
    """Post-norm BERT layer; the attention mask hides padded key positions."""

    def __init__(self, dim: int = 256, heads: int = 4, ff: int = 1024):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(), nn.Linear(ff, dim))

    def forward(self, x, keep):
        # keep: (batch, seq) with 1 for real tokens; additive mask as BERT builds it.
        mask = ((1.0 - keep) * -10000.0)[:, None, None, :]
        q, k, v = (split_heads(f(x), self.heads) for f in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = self.norm1(x + self.out(merge_heads(a)))
        return self.norm2(x + self.ff(x))


class GPT2Layer(nn.Module):
    """Pre-norm GPT-2 layer: causal SDPA (``is_causal=True``), GELU (tanh) MLP."""

    def __init__(self, dim: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc, self.fc_out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        q, k, v = (split_heads(t, self.heads) for t in self.attn(self.ln1(x)).chunk(3, dim=-1))
        x = x + self.proj(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2MaskedAttention(nn.Module):
    """GPT-2's original causal attention: a lower-triangular buffer,
    ``masked_fill`` with -inf, softmax."""

    def __init__(self, dim: int = 256, heads: int = 4, context: int = 64):
        super().__init__()
        self.heads = heads
        self.attn = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        s = x.shape[1]
        q, k, v = (split_heads(t, self.heads) for t in self.attn(x).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~self.bias[:s, :s], float("-inf"))
        return self.proj(merge_heads(scores.softmax(-1) @ v))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, the half-split form of LLaMA's Hugging Face port."""
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-b, a], dim=-1) * sin


class LlamaBlock(nn.Module):
    """RMSNorm, attention with rotary embedding and grouped K/V heads
    (causal SDPA), RMSNorm, SwiGLU MLP; residuals."""

    def __init__(self, dim: int = 256, heads: int = 8, kv_heads: int = 2, context: int = 64):
        super().__init__()
        self.heads, self.kv_heads, head = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * head, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, 688, bias=False)
        self.up = nn.Linear(dim, 688, bias=False)
        self.down = nn.Linear(688, dim, bias=False)
        freqs = 1.0 / 10000 ** (torch.arange(0, head, 2).float() / head)
        angles = torch.outer(torch.arange(context).float(), freqs).repeat(1, 2)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x):
        s = x.shape[1]
        h = self.norm1(x)
        q = split_heads(self.q(h), self.heads)
        k, v = (split_heads(t, self.kv_heads) for t in self.kv(h).chunk(2, dim=-1))
        cos, sin = self.cos[:s], self.sin[:s]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        x = x + self.o(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def gelu_mlp(dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))


class MixerBlock(nn.Module):
    """MLP-Mixer: token-mixing MLP across patches, channel-mixing MLP across
    features, each pre-normed with a residual."""

    def __init__(
        self, tokens: int = 64, dim: int = 256, token_mlp: int = 128, channel_mlp: int = 1024
    ):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.tokens = gelu_mlp(tokens, token_mlp)
        self.channels = gelu_mlp(dim, channel_mlp)

    def forward(self, x):
        x = x + self.tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.norm2(x))


class DecoderLayer(nn.Module):
    """``nn.TransformerDecoderLayer`` with a causal target mask."""

    def __init__(self, dim: int = 256):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(dim, 4, 1024, batch_first=True)

    def forward(self, tgt, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.layer(tgt, memory, tgt_mask=mask)


def tokens(batch: int, seq: int, dim: int) -> tuple[torch.Tensor]:
    return (torch.randn(batch, seq, dim),)


def _bert(batch: int):
    keep = torch.ones(batch, 32)
    keep[:, 24 + batch % 7 :] = 0.0  # padded tail, so the mask matters
    return BertLayer(), (torch.randn(batch, 32, 256), keep)


MODELS = {
    "vit_block": lambda b: (ViTBlock(), tokens(b, 65, 192)),
    "vit_tiny": lambda b: (TinyViT(), (torch.randn(b, 3, 128, 128),)),
    "bert_layer": _bert,
    "gpt2_layer": lambda b: (GPT2Layer(), tokens(b, 32, 256)),
    "gpt2_masked_attention": lambda b: (GPT2MaskedAttention(), tokens(b, 64, 256)),
    "llama_block": lambda b: (LlamaBlock(), tokens(b, 32, 256)),
    "mlp_mixer": lambda b: (MixerBlock(), tokens(b, 64, 256)),
    "transformer_encoder": lambda b: (
        nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
        tokens(b, 32, 256),
    ),
    "transformer_decoder": lambda b: (
        DecoderLayer(),
        (torch.randn(b, 16, 256), torch.randn(b, 32, 256)),
    ),
}
