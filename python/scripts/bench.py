"""What the Python package adds to a recall, measured on one store:

- in-process: `Memory.recall` (arguments → request → JSON → dict) against
  the native module's raw `Engine.request` (bytes in, bytes out: the engine
  and the router alone), the binding's overhead being the difference;
- client: `Client.recall` against a bare httpx POST of the same body to the
  same `mnemo serve`;
- for scale, one `mnemo recall` command line (a process that opens the
  store and loads the model each time).

Dry recalls (nothing reinforced), limit 10, the store filled with
`--memories` synthetic facts. Prints a table; asserts nothing.

    target/python-venv/bin/python python/scripts/bench.py --memories 1000 --queries 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

import mnemo

WORDS = (
    "alice bob carol dave coffee tea peanuts allergy paris lyon berlin guitar piano "
    "running cycling swimming python rust garden dog cat birthday meeting project "
    "deadline doctor dentist holiday train flight hotel book movie recipe curry"
).split()


def fact(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8)).capitalize()


def timed(f, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        f(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def row(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"| {name} | {statistics.median(ms):.2f} | {p95:.2f} | {len(ms)} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="local", help="local (the bundled model) or hash")
    ap.add_argument("--bin", default=os.environ.get("MNEMO_BIN", "target/debug/mnemo"))
    a = ap.parse_args()
    rng = random.Random(7)
    # Each path gets queries of its own: a query seen before would be
    # answered from the embedding cache, not the model.
    seen: set[str] = set()

    def fresh(n: int) -> list[str]:
        out = []
        while len(out) < n:
            q = " ".join(rng.choice(WORDS) for _ in range(4))
            if q not in seen:
                seen.add(q)
                out.append(q)
        return out

    body = lambda q: json.dumps({"query": q, "limit": 10, "dry": True}).encode()  # noqa: E731
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        settings = {"embedder": a.embedder, "data_dir": tmp}
        m = mnemo.Memory(db, **settings)
        for _ in range(a.memories):
            m.remember(fact(rng))
        # Warm up: the model, the vectors, the caches.
        for q in fresh(20):
            m.recall(q, limit=10, dry=True)
        headers = [("content-type", "application/json")]
        qs = fresh(a.queries)
        rows.append(row("in-process: `Memory.recall`", timed(lambda i: m.recall(qs[i], limit=10, dry=True), a.queries)))
        qs = fresh(a.queries)
        rows.append(row("in-process: raw `Engine.request`", timed(lambda i: m._engine.request("POST", "/recall", headers, body(qs[i])), a.queries)))
        model_dir = os.environ.get("MNEMO_MODEL_DIR") or str(mnemo.model.bundled_model_dir() or "")
        m.close()

        env = {**os.environ, "MNEMO_DATA_DIR": tmp, "MNEMO_EMBEDDER": a.embedder}
        if model_dir:
            env["MNEMO_MODEL_DIR"] = model_dir
        qs = fresh(a.queries)
        cli = timed(lambda i: subprocess.run(
            [a.bin, "recall", qs[i], "--db", str(db), "--limit", "10", "--dry"],
            env=env, capture_output=True, check=True), min(20, a.queries))
        rows.append(row("one `mnemo recall` command (process, store, model)", cli))

        server = subprocess.Popen([a.bin, "serve", "--db", str(db), "--port", "0"], env=env,
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            url = next(m.group(1) for line in server.stderr
                       if (m := re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)))
            c = mnemo.Client(url)
            raw = httpx.Client(base_url=url)
            for q in fresh(20):
                c.recall(q, limit=10, dry=True)
            qs = fresh(a.queries)
            rows.append(row("client: `Client.recall`", timed(lambda i: c.recall(qs[i], limit=10, dry=True), a.queries)))
            qs = fresh(a.queries)
            rows.append(row("client: raw httpx POST /recall", timed(
                lambda i: raw.post("/recall", content=body(qs[i]), headers=dict(headers)).raise_for_status(), a.queries)))
            c.close()
            raw.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"recall, {a.memories} memories, embedder {a.embedder}, limit 10, dry\n")
    print("| path | p50 ms | p95 ms | calls |")
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
