"""Caches: separators and bad bytes in cached text, unwritable folders, corrupt vector shards; a
model folder changed in place (a new fingerprint, so no stale vectors); no empty preamble cache
file from a run that made nothing; smoke-diff's inputs it cannot use (exit 3, one line)."""

from __future__ import annotations

from pathlib import Path

from .base import Area, Context, expect, one_line_error, run_cli, snapshot


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
    model_and_tool_cases(area, folder)
    return area


def model_and_tool_cases(area: Area, folder: Path) -> None:
    """What keys and writes caches beyond the cache classes: the model fingerprint, the
    preambles tool, smoke-diff."""
    def weights_changed_in_place():
        from ...embed.encoders import _fingerprint

        model = folder / "model-copy"
        model.mkdir(exist_ok=True)
        (model / "config.json").write_text('{"model_type": "bert"}')
        weights = model / "model.safetensors"
        weights.write_bytes(bytes(range(256)) * (3 * 4096))  # 3 MiB
        before = _fingerprint(str(model))
        with weights.open("r+b") as f:  # one byte past the first MiB, same size
            f.seek(2 * 1024 * 1024 + 17)
            f.write(b"\xff")
        expect(weights.stat().st_size == 3 * 1024 * 1024, "size changed")
        expect(_fingerprint(str(model)) != before, "same fingerprint: stale vectors reused")
    area.case("a model folder changed past its first MiB gets a new fingerprint",
              weights_changed_in_place)

    data = folder / "pre-data"
    (data / "corpus").mkdir(parents=True, exist_ok=True)
    (data / "corpus" / "refunds.md").write_text("# Refunds\n\nGold tier: 14 days.\n")
    runs = [("--budget 0", ["--generator", "structural", "--budget", "0"], {}, 2, "--budget"),
            ("anthropic offline", ["--generator", "anthropic"], {"ANTHROPIC_API_KEY": ""}, 3,
             "ANTHROPIC_API_KEY")]
    for label, extra, env, code, needle in runs:
        def check(extra=extra, env=env, code=code, needle=needle):
            before = snapshot(data)
            out = run_cli(["preambles", "--benchmark", "course", *extra],
                          {"RAGKIT_DATA_DIR": str(data), **env})
            one_line_error(out, code, needle)
            expect(snapshot(data) == before and not (data / "cache").exists(),
                   "a preamble cache file was left behind")
        area.case(f"preambles {label}: no empty cache file", check)

    def empty_rewrite():
        from ...cache import JsonlCache

        c = JsonlCache(folder / "never" / "empty.jsonl")
        c.rewrite([])
        expect(not c.path.exists(), "an empty cache file was written")
    area.case("an empty preamble cache is never written", empty_rewrite)

    rows = folder / "rows"
    rows.mkdir(exist_ok=True)
    (rows / "01.jsonl").write_text('{"value": 1}\n{broken\n')
    for label, args, needle in [
            ("a missing folder", [str(folder / "no-such-run"), str(rows)], "no such folder"),
            ("a corrupt results file", [str(rows), str(rows)], "01.jsonl:2")]:
        def check(args=args, needle=needle):
            one_line_error(run_cli(["smoke-diff", *args]), 3, needle)
        area.case(f"smoke-diff on {label}: exit 3, one line", check)
