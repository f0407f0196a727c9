"""The experiment design: every effect the course states changes one factor and holds the rest.

A configuration (`Config`) is four factors: the **chunker**, the **first stage** (dense, or
ragkit's stack of dense + BM25), the **reranker** (none, or the cross-encoder) and the
**encoder**; the context **budget** is the fifth, carried by the metric key (`Metric`). A
`Run` is one configuration's per-question scores on one benchmark (`Metric`, `Run`, `versus`
and the tune-half choice `choose_on_tune` live in `ragkit.evaluate.runs`). From the runs of
``ragkit bench design`` this module builds every comparison the README, notebook 07 and the
decision guide quote (`effects`), so no script picks its own baseline:

- **chunker**: a chunker against the *best of every simple baseline measured* under the same
  first stage, reranker and encoder (`simple_baselines`: all seven, or the effect is marked
  incomplete). "Best" is chosen by mean recall@B on the tune half of the questions
  (`ragkit.evaluate.splits`), per budget, and the difference is quoted on the held-out half, which
  shares no gold unit and no gold text with the tune half;
- **first stage**: the stack against dense on the same chunks, reranker and encoder;
- **reranker**: the cross-encoder against none on the same chunks, first stage and encoder;
- **encoder**: one encoder against MiniLM on the same chunks, first stage and reranker.

Each effect is a paired difference with a 95 % bootstrap interval (`versus`) and the course's
verdict: *beats* when the interval lies above 0, *loses* when below, otherwise *no measurable
difference*. `ragkit.experiments.title` answers the README's title question with the same runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..evaluate.runs import Metric, Run, choose_on_tune, side_of, versus
from ..evaluate.stats import Comparison
from ..report.prose import diff_ci, verdict

FACTORS = ("chunker", "first_stage", "reranker", "encoder")
REFERENCE_ENCODER = "all-MiniLM-L6-v2"  # every factor's reference level is REFERENCE below
BUDGETS = (512, 1024, 2048)
CANDIDATES = 20  # hits the cross-encoder rescores
EXPERIMENT = "design"
SPLITS = ("held-out", "tune", "all")


def simple_baselines(paged: bool = False) -> list:
    """The simple baselines every chunker is compared with (`ragkit.chunkers.simple_baselines`:
    seven, and one chunk per page on a corpus of PDFs)."""
    from ..chunkers import simple_baselines as baselines

    return baselines(paged)


def ragkit_chunker():
    """ragkit's default chunker (`Router`; its prose size and code chunker were tuned)."""
    from ..chunkers import Router

    return Router()


@dataclass(frozen=True)
class Config:
    """One configuration; `simple` marks a simple baseline chunker."""

    chunker: str
    first_stage: str
    reranker: str
    encoder: str
    simple: bool = False

    def params(self) -> dict[str, Any]:
        """The factors as a results row's params (``factor_<name>``), with the baseline mark."""
        return {f"factor_{f}": getattr(self, f) for f in FACTORS} | {
            "simple_baseline": self.simple}

    @property
    def label(self) -> str:
        """``chunker+first_stage``, with ``+reranker`` when there is one and the encoder in
        brackets when it is not MiniLM (the reference), so two encoders' runs never share a
        name: ``router+stack (embeddinggemma)``."""
        rerank = "" if self.reranker == "none" else f"+{self.reranker}"
        encoder = "" if self.encoder == REFERENCE_ENCODER else f" ({self.encoder})"
        return f"{self.chunker}+{self.first_stage}{rerank}{encoder}"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Config:
        return cls(*(params[f"factor_{f}"] for f in FACTORS), bool(params["simple_baseline"]))

    def differs(self, other: Config) -> set[str]:
        """The factors in which two configurations differ."""
        return {f for f in FACTORS if getattr(self, f) != getattr(other, f)}

    def held(self, factor: str) -> tuple:
        """The values of every factor but `factor`: what a comparison of `factor` holds."""
        return tuple(getattr(self, f) for f in FACTORS if f != factor)


@dataclass
class Effect:
    """One factor's effect on one benchmark at one budget: treated − base on `split`."""

    benchmark: str
    factor: str
    budget: int
    treated: Config
    base: Config
    recall: Comparison
    pass_: Comparison
    split: str = "held-out"
    note: str = ""  # how the base was chosen, or what is missing
    complete: bool = True
    # for a chunker effect: the simple baseline with the highest mean on `split` itself and
    # that mean (for reference only: choosing on `split` would favour it)
    split_leader: tuple[str, float] | None = None
    # for a chunker effect: where the chosen baseline ranks among the simple baselines on
    # `split` itself (1 = its leader), and how many there are
    split_rank: tuple[int, int] | None = None

    @property
    def verdict(self) -> str:
        return verdict(self.recall.low, self.recall.high) if self.complete else "incomplete"

    def row(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "factor": self.factor, "budget": self.budget,
                "treated": self.treated.label, "base": self.base.label, "split": self.split,
                "n": self.recall.n, "recall": asdict(self.recall), "pass": asdict(self.pass_),
                "verdict": self.verdict, "note": self.note}


def load_runs(rows, scores) -> list[Run]:
    """The design's runs from results rows and per-query scores (`Recorder.frames()`, or the
    saved ``bench_design`` results): each a `ragkit.evaluate.runs.Run` named by its run id,
    its `Config` as ``config``."""
    mine = rows[(rows.experiment == EXPERIMENT) & rows.run.notna()]
    out = []
    for run, group in mine.groupby("run", sort=True):
        first = group.iloc[0]
        flags = first.get("flags")
        out.append(Run.from_table(
            scores, run, first.benchmark, Config.from_params(first.params),
            tuple(flags) if isinstance(flags, (list, tuple, np.ndarray)) else ()))
    return sorted(out, key=lambda r: (r.benchmark, r.config.label))


def saved_runs(folder=None) -> list[Run]:
    """`load_runs` over the committed ``results/bench_design*`` rows and runs."""
    from ..report.results import load_results, load_scores

    rows = load_results(folder)
    rows = rows[rows.notebook == "bench_design"]
    scores = load_scores(folder)
    return load_runs(rows, scores[scores.run.isin(set(rows.run.dropna()))])


def _mean(run: Run, metric: Metric, split: str) -> float:
    return run.mean(metric, split)


def _best(candidates: Sequence[Run], metric: Metric, half: str) -> Run:
    """The run with the highest mean `metric` on `half` (`choose_on_tune`: the tune half, or
    another named one); equal means go to the larger chunker name."""
    ids = [q for r in candidates for q in r.scores.index]
    return choose_on_tune(candidates, lambda r, chosen: r.mean(metric, ids=chosen), ids,
                          ties=lambda r: r.config.chunker, half=half)


PAGED_BENCHMARKS = ("financebench",)  # PDFs: the page chunker is a baseline there


def baseline_labels(benchmark: str) -> list[str]:
    """The labels of the simple baselines a chunker on `benchmark` is compared with."""
    return [c.label for c in simple_baselines(benchmark in PAGED_BENCHMARKS)]


def best_baseline(runs: Iterable[Run], treated: Run, budget: int,
                  chosen_on: str = "tune") -> tuple[Run | None, list[str]]:
    """The simple baseline with the highest mean recall@B on `chosen_on`, among the runs with
    the treated run's benchmark, first stage, reranker and encoder; and the simple baselines
    that were not measured under those conditions (the pick is then of an incomplete set)."""
    same = [r for r in runs if r.config.simple and r.benchmark == treated.benchmark
            and r.config.held("chunker") == treated.config.held("chunker")]
    wanted = baseline_labels(treated.benchmark)
    missing = [w for w in wanted if w not in {r.config.chunker for r in same}]
    if not same:
        return None, missing
    return _best(same, Metric("recall", budget), chosen_on), missing


def _effect(factor: str, treated: Run, base: Run, budget: int, split: str, note: str,
            complete: bool = True) -> Effect:
    changed = treated.config.differs(base.config)
    if changed != {factor}:  # the design's one rule; a bug if it ever fires
        raise AssertionError(f"{treated.config.label} vs {base.config.label} changes {changed}")
    return Effect(treated.benchmark, factor, budget, treated.config, base.config,
                  versus(treated, base, Metric("recall", budget=budget), split=split),
                  versus(treated, base, Metric("pass", budget=budget), split=split), split,
                  note, complete)


REFERENCE = {"first_stage": "dense", "reranker": "none", "encoder": REFERENCE_ENCODER}


def effects(runs: Sequence[Run], budgets: Sequence[int] = BUDGETS, split: str = "held-out"
            ) -> list[Effect]:
    """Every one-factor effect the runs allow, at each budget, quoted on `split`:

    - each non-baseline chunker against the best simple baseline under its own retrieval
      (chosen on the tune half when `split` is the held-out half, else on `split` itself);
    - every other factor against its reference level (dense, no reranker, MiniLM) on runs
      that agree in all other factors."""
    out: list[Effect] = []
    chosen_on = "tune" if split == "held-out" else split
    for t in runs:
        if t.config.simple:
            continue
        for b in budgets:
            best, missing = best_baseline(runs, t, b, chosen_on)
            if best is None:
                continue
            wanted = len(baseline_labels(t.benchmark))
            note = (f"best of {wanted - len(missing)} simple baselines by recall@B{b} on the "
                    f"{chosen_on} half: {best.config.chunker}")
            if missing:
                note += f"; not measured: {', '.join(missing)}"
            e = _effect("chunker", t, best, b, split, note, not missing)
            m = Metric("recall", b)
            same = [r for r in runs if r.config.simple and r.benchmark == t.benchmark
                    and r.config.held("chunker") == t.config.held("chunker")]
            lead = _best(same, m, split)
            e.split_leader = (lead.config.chunker, _mean(lead, m, split))
            above = sum(_mean(r, m, split) > _mean(best, m, split) for r in same)
            e.split_rank = (above + 1, len(same))
            out.append(e)
    for factor, ref in REFERENCE.items():
        for t in runs:
            if getattr(t.config, factor) == ref:
                continue
            if factor == "first_stage" and t.config.first_stage != "stack":
                continue  # the intermediate steps are the stack lesson's (`stack_steps`)
            for base in runs:
                if base.benchmark == t.benchmark and getattr(base.config, factor) == ref \
                        and base.config.differs(t.config) == {factor}:
                    out += [_effect(factor, t, base, b, split, f"same chunks: "
                                    f"{t.config.chunker}") for b in budgets]
    return out


# ragkit's stack built one change at a time on the same chunks (``ragkit bench design
# --steps``): each first stage differs from the one before it in one thing
STACK_STEPS = (("dense", "dense search, the chunk as the encoder reads it"),
               ("dense+bm25 words", "+ BM25 over plain words, fused 0.5 / 0.5"),
               ("dense+bm25 identifiers", "BM25 over identifier words instead"),
               ("stack", "dense over windows, so no chunk is cut (ragkit's stack)"))


def step_retriever(chunks, embedder, step: str):
    """The first stage of one of `STACK_STEPS` over `chunks`."""
    from ..retrieve.retrievers import BM25Retriever, DenseRetriever, HybridRetriever
    from ..retrieve.stack import stack_retriever

    if step == "dense":
        return DenseRetriever(chunks, embedder)
    if step == "stack":
        return stack_retriever(chunks, embedder)
    tokens = step.rsplit(" ", 1)[1]
    if step.startswith("dense+bm25 ") and tokens in ("words", "identifiers"):
        return HybridRetriever(DenseRetriever(chunks, embedder),
                               BM25Retriever(chunks, tokens=tokens), weights=(0.5, 0.5))
    raise ValueError(f"unknown step {step!r}; steps: {[s for s, _ in STACK_STEPS]}")


def stack_steps(runs: Sequence[Run], budgets: Sequence[int] = BUDGETS,
                split: str = "held-out") -> list[Effect]:
    """The stack lesson: on the same chunks (the router's), each of `STACK_STEPS` against the
    step before it, then the cross-encoder against the full stack; paired on `split`."""
    out = []
    order = [s for s, _ in STACK_STEPS]
    for t in runs:
        cfg = t.config
        if cfg.simple or cfg.encoder != REFERENCE["encoder"]:
            continue
        if cfg.reranker == "none" and cfg.first_stage in order[1:]:
            prev = order[order.index(cfg.first_stage) - 1]
        elif cfg.reranker != "none" and cfg.first_stage == "stack":
            prev = None
        else:
            continue
        for base in runs:
            bc = base.config
            if base.benchmark != t.benchmark or bc.chunker != cfg.chunker \
                    or bc.encoder != cfg.encoder:
                continue
            if (prev and bc.first_stage == prev and bc.reranker == "none") or \
                    (prev is None and bc.first_stage == "stack" and bc.reranker == "none"):
                factor = "first_stage" if prev else "reranker"
                out += [_effect(factor, t, base, b, split, "stack lesson") for b in budgets]
    rank = {s: i for i, s in enumerate(order)}
    return sorted(out, key=lambda e: (e.benchmark, e.budget, e.factor == "reranker",
                                      rank.get(e.treated.first_stage, 9)))


def headline(effects_: Sequence[Effect]) -> list[Effect]:
    """The effects the README and the guide lead with: ragkit's chunker under the stack (its
    default retrieval) and under dense search; the stack on ragkit's chunks; the reranker."""
    keep = []
    for e in effects_:
        if e.factor == "chunker" and e.treated.reranker == "none":
            keep.append(e)
        elif e.factor in ("first_stage", "reranker", "encoder") and not e.treated.simple:
            keep.append(e)
    order = {"chunker": 0, "first_stage": 1, "reranker": 2, "encoder": 3}
    return sorted(keep, key=lambda e: (e.benchmark, order[e.factor], e.treated.first_stage,
                                       e.budget))


def effect_table(effects_: Sequence[Effect]) -> tuple[list[str], list[list[Any]]]:
    """(header, rows) of effects as every report shows them: one row per effect and budget,
    the changed factor, both sides, the held-out differences in points with intervals."""
    header = ["benchmark", "budget", "factor changed", "treated", "against", "n",
              "recall@B diff [95 % CI]", "pass@B diff [95 % CI]", "verdict"]
    rows = [[e.benchmark, e.budget, e.factor.replace("_", " "), e.treated.label,
             e.base.label, e.recall.n, diff_ci(e.recall), diff_ci(e.pass_), e.verdict]
            for e in effects_]
    return header, rows


__all__ = ["BUDGETS", "CANDIDATES", "Config", "Effect", "FACTORS", "Metric", "Run",
           "best_baseline", "choose_on_tune", "effect_table", "effects", "headline",
           "load_runs", "ragkit_chunker", "saved_runs", "side_of",
           "simple_baselines", "stack_steps", "step_retriever", "STACK_STEPS",
           "versus"]
