"""Caches: separators and bad bytes in cached text, unwritable folders, corrupt vector shards."""

from __future__ import annotations

from pathlib import Path

from .base import Area, Context, expect


def run(ctx: Context) -> Area:
    return caches_area(ctx.folder)


def caches_area(folder: Path) -> Area:
    import warnings

    import numpy as np

    from ...cache import CacheWarning, JsonlCache, VectorCache

    area = Area("caches")
    specials = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]
    for i, ch in enumerate(specials):
        def check(ch=ch, i=i):
            c = JsonlCache(folder / f"sep{i}.jsonl")
            c.put({"key": "a", "preamble": f"one{ch}two"})
            c.put({"key": "b", "preamble": "plain"})
            with warnings.catch_warnings():
                warnings.simplefilter("error", CacheWarning)
                again = JsonlCache(c.path)
                expect(again.get("a")["preamble"] == f"one{ch}two" and again.corrupt == 0,
                        f"{ch!r} in a cached value reads back as corrupt")
        area.case(f"jsonl cache keeps {ch!r}", check)
    for i, bad in enumerate([b"\xff\xfe", b"\xe9", b"{not json", b"[1, 2]", b'"string"',
                             b'{"key": "z", "sha256": "0"}']):
        def check(bad=bad, i=i):
            c = JsonlCache(folder / f"bad{i}.jsonl")
            c.put({"key": "a", "preamble": "x"})
            with c.path.open("ab") as f:
                f.write(bad + b"\n")
            c2 = JsonlCache(c.path)
            c2.put({"key": "b", "preamble": "y"})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheWarning)
                c3 = JsonlCache(c.path)
                expect(c3.get("a") is not None and c3.get("b") is not None
                        and c3.corrupt == 1, f"corrupt={c3.corrupt}")
        area.case(f"jsonl cache survives a bad line {bad[:12]!r}", check)
    blocked = folder / "a-file"
    blocked.write_text("not a folder")
    for kind in ("vectors", "jsonl"):
        def check(kind=kind):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                if kind == "vectors":
                    v = VectorCache(blocked / "embeddings")
                    v.put(["a"], np.ones((1, 3), dtype=np.float32))
                    v.put(["b"], np.ones((1, 3), dtype=np.float32))
                    expect(len(v.get(["a", "b"])[0]) == 2, "vectors lost in memory")
                    expect(v.unwritable is not None, "not reported")
                else:
                    c = JsonlCache(blocked / "pre.jsonl")
                    c.put({"key": "a"})
                    c.put({"key": "b"})
                    expect(c.get("b") is not None and c.unwritable is not None, "lost")
                expect(sum(issubclass(x.category, CacheWarning) for x in w) == 1,
                        "expected one warning")
        area.case(f"unwritable {kind} cache", check)
    for i, data in enumerate([b"", b"PK\x03\x04garbage", b"\x00" * 100]):
        def check(data=data, i=i):
            d = folder / f"shards{i}"
            v = VectorCache(d)
            v.put(["a"], np.ones((1, 2), dtype=np.float32))
            shard = next(d.glob("*.npz"))
            shard.write_bytes(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheWarning)
                v2 = VectorCache(d)
                found, missing = v2.get(["a"])
                expect(missing == ["a"] and v2.corrupt, "corrupt shard not detected")
        area.case(f"corrupt vector shard {i}", check)
    return area
