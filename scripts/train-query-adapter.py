#!/usr/bin/env python3
"""Trains the query-side adapter of tool search (search/src/query_adapter.rs): a low-rank map
q' = normalize(q + B·(A·q)) on a request's embedding, so requests land nearer the tools that
answer them, with the tools' vectors untouched (docs/search.md, "Fifth round").

    target/release/search-eval --export-pairs PAIRS [--minilm DIR] search/eval $S/azure ...
    python3 scripts/train-query-adapter.py PAIRS/static --loso OUT_DIR      # one per set left out
    python3 scripts/train-query-adapter.py PAIRS/static --all OUT.bin       # on every dev half
    target/release/search-eval --dev-only --adapter OUT_DIR search/eval $S/azure ...

PAIRS/KIND/SET holds what search-eval exported from a set's dev half only: tools.f32 (the
tools' vectors), queries.f32 (the requests'), labels.txt (per request, its right tools' rows)
and shape.txt. The loss is a contrastive softmax over the set's whole catalog (the right tool
against every other tool of the set, temperature TAU) on the adapted request's cosines, each
set weighing the same, L2 on both factors; full-batch Adam, deterministic (seeded). Needs
numpy (a venv in the worktree: python3 -m venv .venv && .venv/bin/pip install numpy).
"""
import argparse
import os
import struct
import sys

import numpy as np

MAGIC = b"TCQADAPT"
VERSION = 1


def load_set(path):
    tools, requests, dims = (int(x) for x in open(os.path.join(path, "shape.txt")).read().split())
    tool_vectors = np.fromfile(os.path.join(path, "tools.f32"), dtype="<f4").reshape(tools, dims)
    queries = np.fromfile(os.path.join(path, "queries.f32"), dtype="<f4").reshape(requests, dims)
    mask = np.zeros((requests, tools), dtype=bool)
    for row, line in enumerate(open(os.path.join(path, "labels.txt")).read().splitlines()):
        for index in line.split(","):
            if index:
                mask[row, int(index)] = True
    keep = mask.any(axis=1) & (np.abs(queries).sum(axis=1) > 0)
    return {"tools": tool_vectors.astype(np.float64), "queries": queries[keep].astype(np.float64),
            "mask": mask[keep]}


def adapt(queries, down, up):
    low = queries @ down.T
    z = queries + low @ up.T
    norm = np.linalg.norm(z, axis=1, keepdims=True)
    return low, z, norm, z / np.maximum(norm, 1e-12)


def loss_and_gradients(data, down, up, tau):
    low, z, norm, u = adapt(data["queries"], down, up)
    scores = u @ data["tools"].T / tau
    scores -= scores.max(axis=1, keepdims=True)
    exp = np.exp(scores)
    p_all = exp / exp.sum(axis=1, keepdims=True)
    exp_pos = np.where(data["mask"], exp, 0.0)
    p_pos = exp_pos / exp_pos.sum(axis=1, keepdims=True)
    loss = -np.log(exp_pos.sum(axis=1) / exp.sum(axis=1)).mean()
    m = len(u)
    g_scores = (p_all - p_pos) / m
    g_u = g_scores @ data["tools"] / tau
    g_z = (g_u - u * (g_u * u).sum(axis=1, keepdims=True)) / np.maximum(norm, 1e-12)
    g_up = g_z.T @ low
    g_low = g_z @ up
    g_down = g_low.T @ data["queries"]
    return loss, g_down, g_up


def train(sets, rank, l2, tau, steps, lr, seed=7):
    dims = sets[0]["tools"].shape[1]
    rng = np.random.default_rng(seed)
    down = rng.normal(0.0, 1.0 / np.sqrt(dims), size=(rank, dims))
    up = np.zeros((dims, rank))
    params = [down, up]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        grads = [np.zeros_like(p) for p in params]
        total = 0.0
        for data in sets:
            loss, g_down, g_up = loss_and_gradients(data, down, up, tau)
            total += loss / len(sets)
            grads[0] += g_down / len(sets)
            grads[1] += g_up / len(sets)
        for i, p in enumerate(params):
            g = grads[i] + 2 * l2 * p
            moments[i] = beta1 * moments[i] + (1 - beta1) * g
            squares[i] = beta2 * squares[i] + (1 - beta2) * g * g
            m_hat = moments[i] / (1 - beta1 ** step)
            v_hat = squares[i] / (1 - beta2 ** step)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
    return down, up, total


def cosine_recall_at_1(data, down=None, up=None):
    """The share of requests whose right tool has the best cosine (a quick proxy; the
    evaluation's figures come from search-eval's full ranking)."""
    queries = data["queries"]
    if down is not None:
        queries = adapt(queries, down, up)[3]
    best = (queries @ data["tools"].T).argmax(axis=1)
    return data["mask"][np.arange(len(best)), best].mean()


def f16_bytes(values):
    return np.asarray(values, dtype="<f2").tobytes()


def fnv1a(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_adapter(path, name, down, up):
    rank, dims = down.shape
    name_bytes = name.encode()
    body = MAGIC + struct.pack("<IIII", VERSION, dims, rank, len(name_bytes)) + name_bytes
    body += f16_bytes(down.ravel()) + f16_bytes(up.ravel())
    body += struct.pack("<Q", fnv1a(body))
    with open(path, "wb") as f:
        f.write(body)
    return len(body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", help="PAIRS/KIND, one directory per set")
    parser.add_argument("--loso", help="write OUT/SET.bin trained on the other sets")
    parser.add_argument("--all", help="write one adapter trained on every set")
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--tau", type=float, default=0.05)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--name", default=None, help="the embedder, as the file names it")
    args = parser.parse_args()
    names = sorted(d for d in os.listdir(args.pairs) if os.path.isdir(os.path.join(args.pairs, d)))
    sets = {name: load_set(os.path.join(args.pairs, name)) for name in names}
    label = args.name or os.path.basename(os.path.normpath(args.pairs))
    settings = f"rank {args.rank}, l2 {args.l2}, tau {args.tau}, {args.steps} steps, lr {args.lr}"
    if args.loso:
        os.makedirs(args.loso, exist_ok=True)
        print(f"leave one set out ({settings}): cosine R@1 of the held-out dev half, before -> after")
        for held_out in names:
            down, up, loss = train([sets[n] for n in names if n != held_out], args.rank,
                                   args.l2, args.tau, args.steps, args.lr)
            before = cosine_recall_at_1(sets[held_out])
            after = cosine_recall_at_1(sets[held_out], down, up)
            size = write_adapter(os.path.join(args.loso, f"{held_out}.bin"), label, down, up)
            print(f"  {held_out:<10} {before:.3f} -> {after:.3f}   (train loss {loss:.3f}, {size} bytes)")
    if args.all:
        down, up, loss = train(list(sets.values()), args.rank, args.l2, args.tau, args.steps, args.lr)
        size = write_adapter(args.all, label, down, up)
        print(f"all sets ({settings}): train loss {loss:.3f}, {size} bytes -> {args.all}")
        for name in names:
            print(f"  {name:<10} {cosine_recall_at_1(sets[name]):.3f} -> "
                  f"{cosine_recall_at_1(sets[name], down, up):.3f} (in sample)")
    if not args.loso and not args.all:
        sys.exit("say --loso OUT_DIR, --all OUT.bin or both")


if __name__ == "__main__":
    main()
