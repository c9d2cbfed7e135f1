"""The sequence models of benchmarks/bench_training.py, written once for either library.

- A 2-layer LSTM language model as PyTorch's word_language_model example builds it:
  embedding 256, LSTM hidden 256 (2 layers), a decoder to a 10,000-word vocabulary;
  sequence 35, batch 20 (sequence-first), the loss over all 700 positions.
- A small GPT block: token and position embeddings (vocabulary 1,000, width 128), one
  pre-norm block (causal self-attention with 4 heads through
  `scaled_dot_product_attention`, then a 4x GELU MLP), a final LayerNorm and the head;
  batch 8, sequence 64.
Each `build_*(lib)` returns (model, inputs, targets) built from `lib` (torch or pyaten), so
both libraries run the same code; weights are copied from torch's with `copy_weights`.
"""

from __future__ import annotations

import numpy as np

LSTM_VOCAB, LSTM_WIDTH, LSTM_SEQ, LSTM_BATCH = 10_000, 256, 35, 20
GPT_VOCAB, GPT_WIDTH, GPT_HEADS, GPT_SEQ, GPT_BATCH = 1_000, 128, 4, 64, 8


def lstm_language_model(lib):  # noqa: ANN001, ANN201
    nn = lib.nn

    class LSTMLanguageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Embedding(LSTM_VOCAB, LSTM_WIDTH)
            self.rnn = nn.LSTM(LSTM_WIDTH, LSTM_WIDTH, num_layers=2)
            self.decoder = nn.Linear(LSTM_WIDTH, LSTM_VOCAB)

        def forward(self, tokens):  # noqa: ANN001, ANN202
            output, _ = self.rnn(self.encoder(tokens))
            return self.decoder(output).reshape(-1, LSTM_VOCAB)

    rng = np.random.default_rng(0)
    tokens = rng.integers(0, LSTM_VOCAB, (LSTM_SEQ + 1, LSTM_BATCH))
    return (LSTMLanguageModel(), lib.from_numpy(tokens[:-1].copy()),
            lib.from_numpy(tokens[1:].reshape(-1).copy()))


def gpt_block_model(lib):  # noqa: ANN001, ANN201
    nn = lib.nn
    functional = lib.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(GPT_WIDTH)
            self.qkv = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH)
            self.proj = nn.Linear(GPT_WIDTH, GPT_WIDTH)
            self.ln2 = nn.LayerNorm(GPT_WIDTH)
            self.fc = nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH)
            self.out = nn.Linear(4 * GPT_WIDTH, GPT_WIDTH)

        def forward(self, x):  # noqa: ANN001, ANN202
            batch, seq, width = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
            heads = [t.reshape(batch, seq, GPT_HEADS, width // GPT_HEADS).transpose(1, 2)
                     for t in (q, k, v)]
            attended = functional.scaled_dot_product_attention(*heads, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
            return x + self.out(functional.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
            self.positions = nn.Embedding(GPT_SEQ, GPT_WIDTH)
            self.block = Block()
            self.ln = nn.LayerNorm(GPT_WIDTH)
            self.head = nn.Linear(GPT_WIDTH, GPT_VOCAB)

        def forward(self, tokens):  # noqa: ANN001, ANN202
            positions = lib.arange(tokens.shape[1])
            x = self.block(self.tokens(tokens) + self.positions(positions))
            return self.head(self.ln(x)).reshape(-1, GPT_VOCAB)

    rng = np.random.default_rng(1)
    tokens = rng.integers(0, GPT_VOCAB, (GPT_BATCH, GPT_SEQ + 1))
    return (GPT(), lib.from_numpy(tokens[:, :-1].copy()),
            lib.from_numpy(tokens[:, 1:].reshape(-1).copy()))


SEQUENCE_MODELS = {
    "LSTM LM 2x256, seq 35": lstm_language_model,
    "GPT block d128, seq 64": gpt_block_model,
}
