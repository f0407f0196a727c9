"""The environment, through real subprocesses: ``RAGKIT_*`` variables ragkit cannot use, model
names (a hub id or a path), and the Anthropic generator offline.

Each case runs the real ``ragkit`` command and checks the promise: a clear one-line error with
its exit code (2 for a bad variable or model name, 3 for a generator that cannot run), no
traceback, and no user file changed (the corpus, the questions, the results file, the preamble
cache folder are compared byte for byte before and after).
"""

from __future__ import annotations

from pathlib import Path

from .base import Area, Context, expect, one_line_error, run_cli, snapshot
from .golden import GOLDEN_TEXT, GOOD_QUESTIONS, write_questions

# (variable, a value ragkit cannot use); the first QUICK are the quick subset
BAD_VARIABLES = (
    ("RAGKIT_SEED", "abc"),
    ("RAGKIT_PROFILE", "huge"),
    ("RAGKIT_EMBED_BACKEND", "jax"),
    ("RAGKIT_GEMMA_DIR", "/no/such/ragkit-gemma"),
    ("RAGKIT_EMBEDDER", "./no-such-ragkit-model"),
    ("RAGKIT_SEED", "-1"),
    ("RAGKIT_DEVICE", "tpu"),
    ("RAGKIT_REGENERATE_PREAMBLES", "maybe"),
    ("RAGKIT_REGENERATE_ANSWERS", "2"),
    ("RAGKIT_HYPOTHESIS_EXAMPLES", "0"),
    ("RAGKIT_BIG_LINE_MB", "inf"),
    ("RAGKIT_DATA_DIR", "/no/such/ragkit-data"),
    ("RAGKIT_BYOD_CORPUS", "/no/such/ragkit-corpus"),
    ("RAGKIT_BYOD_GOLDEN", "/no/such/ragkit-questions.jsonl"),
    ("RAGKIT_CACHE_DIR", "{file}"),  # a file where the cache folder should be
    ("RAGKIT_RERANK_MODEL", "/no/such/ragkit-reranker"),
)
QUICK = 5
NOT_CACHED = "ragkit-test/no-such-model"  # a hub id in no local Hugging Face cache


def run(ctx: Context) -> Area:
    return environment_area(ctx.folder, quick=ctx.quick)


def environment_area(folder: Path, quick: bool = False) -> Area:
    area = Area("environment")
    docs = folder / "env-docs"
    docs.mkdir(exist_ok=True)
    (docs / "refunds.md").write_text(GOLDEN_TEXT, encoding="utf-8")
    q = write_questions(folder, "env-questions", GOOD_QUESTIONS[:2], "jsonl")
    results = folder / "env-rows.jsonl"
    results.write_text("")
    eval_args = ["eval", "--corpus", str(docs), "--golden", str(q), "--results", str(results)]

    def unchanged(label, args, env, code, *needles):
        def check():
            before = snapshot(folder)
            one_line_error(run_cli(args, env), code, *needles)
            expect(snapshot(folder) == before, "a file in the area's folder changed")
        area.case(label, check)

    for name, value in (BAD_VARIABLES[:QUICK] if quick else BAD_VARIABLES):
        value = value.format(file=q)
        unchanged(f"eval with {name}={value}", eval_args, {name: value}, 2, name, repr(value))
    if not quick:
        for tool in (["smoke-diff", str(docs), str(docs)],
                     ["preambles", "--benchmark", "course", "--generator", "structural"],
                     ["robustness", "--areas", "caches", "--quick"]):
            unchanged(f"ragkit {tool[0]} with RAGKIT_SEED=abc", tool, {"RAGKIT_SEED": "abc"}, 2,
                      "RAGKIT_SEED", "'abc'")

    # one rule for model names: a hub id is a hub id, a path is a path
    offline = {"HF_HUB_OFFLINE": "1"}
    doc = str(docs / "refunds.md")
    unchanged("--embedder org/name offline", ["chunk", doc, "--embedder", NOT_CACHED], offline,
              2, f"--embedder {NOT_CACHED}", "hub is offline", "local folder")
    unchanged("RAGKIT_EMBEDDER=org/name offline", ["chunk", doc],
              {**offline, "RAGKIT_EMBEDDER": NOT_CACHED}, 2, "RAGKIT_EMBEDDER", "offline")
    for path in ("./no-such-model", "org/name/", "/no/such/model"):
        unchanged(f"--embedder {path}", ["chunk", doc, "--embedder", path], offline, 2,
                  f"--embedder {path}", "no such folder")

    def rule():
        from ...models import locate_model, looks_like_path

        hubs = ["BAAI/bge-small-en-v1.5", "jinaai/jina-embeddings-v2-small-en", "gpt2"]
        paths = ["./m", "../m", "~/m", "/m", "a/b/c", "a/b/", "a\\b", "C:/m", "a b/c"]
        expect(not any(map(looks_like_path, hubs)), "a hub id taken for a path")
        expect(all(map(looks_like_path, paths)), "a path taken for a hub id")
        expect(locate_model(str(docs)) == str(docs), "an existing folder is not local")
    area.case("the hub id / path rule", rule)

    # the Anthropic generator without a key, and with one but no network
    data = folder / "env-data"
    (data / "corpus").mkdir(parents=True, exist_ok=True)
    (data / "corpus" / "refunds.md").write_text(GOLDEN_TEXT, encoding="utf-8")
    pre = ["preambles", "--benchmark", "course", "--generator", "anthropic"]

    def anthropic(label, env, *needles):
        def check():
            before = snapshot(folder)
            out = run_cli(pre, {"RAGKIT_DATA_DIR": str(data), **env})
            one_line_error(out, 3, *needles)
            expect(secret not in out.stderr + out.stdout, "the API key was printed")
            expect(snapshot(folder) == before, "a file was written or changed")
            expect(not (data / "cache").exists(), "a preamble cache appeared")
        area.case(label, check)

    secret = "sk-ant-robustness-FAKE"
    anthropic("preambles --generator anthropic without a key", {"ANTHROPIC_API_KEY": ""},
              "set ANTHROPIC_API_KEY", "nothing written")
    if quick:  # the SDK's own retries and the course corpus: about 30 s on 2 CPUs
        return area
    anthropic("preambles --generator anthropic, API unreachable",
              {"ANTHROPIC_API_KEY": secret, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
              "could not be reached", "nothing written")
    return area
