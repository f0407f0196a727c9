"""One runs API: a configuration's per-query scores, and two of them compared on the same questions.

Every comparison the course states pairs two runs' per-query values on the questions both
scored and bootstraps the difference (`ragkit.evaluate.stats.paired`); every tuned setting is
chosen on the tune half of the questions and quoted on the held-out half. Both are written once,
here:

- `Metric`: a typed metric key, a name and a context budget or a k. ``.column`` is its key in
  a wide per-query table (``recall@B1024``, ``ndcg@10``) and `Metric.parse` the inverse;
  ``.long`` / `Metric.from_long` its (metric, budget) pair in the long per-query tables the
  results keep (`ragkit.report.load_scores`: ``recall@B`` with budget 1,024; budget −1 for a
  fixed-k metric);
- `Run`: one configuration's per-query scores on one benchmark (a wide table indexed by query
  id), with its name, an optional configuration object and its flags;
- `per_query(table, run, metric)`: one run's values of one metric out of a long table;
- `common(a, b)` / `versus(a, b)`: two runs' values on the questions both scored, and their
  paired comparison a − b (difference, 95 % interval, wins / losses / ties);
- `choose_on_tune(candidates, score, ids)`: the candidate with the best score on the tune half
  of `ids`, ties broken by a stated order; the held-out half is never read.

    >>> import pandas as pd
    >>> a = pd.Series([1.0, 0.0, 1.0], index=["q1", "q2", "q3"])
    >>> b = pd.Series([0.0, 0.0], index=["q3", "q1"])
    >>> c = versus(a, b)  # q1 and q3 only
    >>> c.n, c.diff, (c.wins, c.losses, c.ties)
    (2, 1.0, (2, 0, 0))
    >>> Metric.parse("recall@B1024"), Metric.parse("ndcg@10").column
    (Metric(name='recall', budget=1024, k=None), 'ndcg@10')

This stage imports neither the embedder, the retrievers nor the chunkers; the experiments and
the report both build on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .stats import CONFIDENCE, N_RESAMPLES, SEED, Comparison, paired

T = TypeVar("T")

# a metric's name: a word, or a word and "@k" (a fixed-k metric at the run's own k)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:@k)?"
_KEY = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                  r"(?:@B(?P<budget>0|[1-9][0-9]*)|@(?P<k>0|[1-9][0-9]*)|(?P<own>@k))?")
BUDGETED = "@B"  # a budgeted metric's suffix in the long tables (``recall@B``, budget apart)


@dataclass(frozen=True)
class Metric:
    """A typed metric key: ``Metric("recall", budget=1024)`` is span recall of the context a
    1,024-token budget lets through; ``Metric("ndcg", k=10)`` a fixed-k metric; a bare name
    (``Metric("recall")``, ``Metric("pass@k")``) a metric at the run's own k.

    >>> Metric("recall", budget=1024).column, Metric("ndcg", k=10).column
    ('recall@B1024', 'ndcg@10')
    >>> Metric("recall", budget=1024).long, Metric.from_long("recall@B", 1024)
    (('recall@B', 1024), Metric(name='recall', budget=1024, k=None))
    """

    name: str
    budget: int | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(_NAME, self.name):
            raise ValueError(f"not a metric name: {self.name!r}")
        if self.budget is not None and self.k is not None:
            raise ValueError(f"{self.name}: a budget or a k, not both")
        for what in ("budget", "k"):
            v = getattr(self, what)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"{self.name}: {what} must be an integer >= 0, got {v!r}")
        if self.name.endswith("@k") and (self.budget is not None or self.k is not None):
            raise ValueError(f"{self.name}: already at the run's own k")

    @property
    def column(self) -> str:
        """The key in a wide per-query table (an `Outcome`'s ``per_query``, a `Run`)."""
        if self.budget is not None:
            return f"{self.name}{BUDGETED}{self.budget}"
        return f"{self.name}@{self.k}" if self.k is not None else self.name

    @property
    def long(self) -> tuple[str, int]:
        """(metric, budget) in a long per-query table: budget −1 for a fixed-k metric."""
        if self.budget is not None:
            return f"{self.name}{BUDGETED}", self.budget
        return self.column, -1

    @classmethod
    def parse(cls, key: str | Metric) -> Metric:
        """The metric a column key names: the inverse of `column`.

        >>> Metric.parse("recall@B1024")
        Metric(name='recall', budget=1024, k=None)
        >>> Metric.parse("pass@20"), Metric.parse("mrr@k")  # doctest: +NORMALIZE_WHITESPACE
        (Metric(name='pass', budget=None, k=20),
         Metric(name='mrr@k', budget=None, k=None))
        >>> Metric.parse("recall@B")
        Traceback (most recent call last):
        ...
        ValueError: not a metric key: 'recall@B' (a name, name@B<budget> or name@<k>, ...
        """
        if isinstance(key, Metric):
            return key
        m = _KEY.fullmatch(key) if isinstance(key, str) else None
        if m is None:
            raise ValueError(f"not a metric key: {key!r} (a name, name@B<budget> or name@<k>, "
                             "e.g. 'recall@B1024', 'ndcg@10', 'recall')")
        budget, k = m["budget"], m["k"]
        return cls(m["name"] + (m["own"] or ""), None if budget is None else int(budget),
                   None if k is None else int(k))

    @classmethod
    def from_long(cls, metric: str, budget: int | None = -1) -> Metric:
        """The metric of a long table's (metric, budget) pair: the inverse of `long`."""
        if budget is None or budget != budget or budget < 0:
            return cls.parse(metric)
        if not str(metric).endswith(BUDGETED):
            raise ValueError(f"a budgeted metric is named name{BUDGETED} in a long table, got "
                             f"{metric!r} at budget {budget}")
        return cls(str(metric)[:-len(BUDGETED)], budget=int(budget))


def side_of(query_id: str) -> str:
    """The half of the questions `query_id` is on (`ragkit.evaluate.splits.split_of`)."""
    from .splits import split_of

    return split_of(query_id)


@dataclass
class Run:
    """One configuration's per-query scores on one benchmark: `scores` is a wide table indexed
    by query id whose columns are metric keys (`Metric.column`); `config` is whatever
    describes the configuration (an experiment design's `Config`, or None)."""

    benchmark: str
    name: str
    scores: Any  # pandas DataFrame indexed by query_id
    config: Any = None
    flags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The configuration's label when it has one, else the run's name."""
        return getattr(self.config, "label", None) or self.name

    def values(self, metric: Metric | str, split: str = "all"):
        """The per-query values of `metric` (a Series indexed by query id), on one half of the
        questions (``"tune"``, ``"held-out"``) or on all of them."""
        v = self.scores[Metric.parse(metric).column]
        return v if split == "all" else v[[side_of(q) == split for q in v.index]]

    def mean(self, metric: Metric | str, split: str = "all",
             ids: Iterable[str] | None = None) -> float:
        """The mean of `metric` on `split`, over the questions `ids` only when given."""
        v = self.values(metric, split)
        return float((v if ids is None else v[v.index.isin(list(ids))]).mean())

    @classmethod
    def from_table(cls, table, name: str, benchmark: str = "", config: Any = None,
                   flags: Sequence[str] = ()) -> Run:
        """The run `name` of a long per-query table (run, query_id, metric, budget, value),
        one column per metric (`Metric.column`), indexed by query id in sorted order."""
        mine = table[table.run == name]
        return cls(benchmark, name, wide(mine), config, tuple(flags))


def wide(table):
    """A long per-query table (query_id, metric, budget, value) as a wide one: one column per
    metric key (`Metric.column`), rows and columns sorted (a duplicate is averaged)."""
    keys = table[["metric", "budget"]].drop_duplicates()
    column = {(m, int(b)): Metric.from_long(m, int(b)).column
              for m, b in zip(keys.metric, keys.budget)}
    col = [column[(m, int(b))] for m, b in zip(table.metric, table.budget)]
    return table.assign(col=col).pivot_table(index="query_id", columns="col", values="value")


_INDEX: dict[int, tuple[object, Any, dict]] = {}


def per_query(table, run: str, metric: Metric | str):
    """One run's per-query values of one metric (a Series named ``value`` indexed by
    ``query_id``, in the table's row order; empty when the run did not record it), out of a
    long per-query table (`ragkit.report.load_scores`, `Recorder.frames`). The table is grouped
    once: later calls on the same table are lookups, and return the same Series (copy it
    before changing it)."""
    import pandas as pd

    name, budget = Metric.parse(metric).long
    key = id(table)
    if key not in _INDEX or _INDEX[key][0] is not table:
        keyed = table if "budget" in table else table.assign(budget=-1)  # a fixed-k table
        positions = keyed.groupby(["run", "metric", "budget"], sort=False).indices
        columns = (table["value"].to_numpy(dtype=float), table["query_id"].to_numpy())
        _INDEX.clear()  # row positions per (run, metric, budget); Series made when asked for
        _INDEX[key] = (table, (positions, columns), {})
    _, (positions, (values, ids)), made = _INDEX[key]
    want = (run, name, int(budget))
    if want not in made:
        pos = positions.get(want)
        made[want] = (pd.Series(dtype=float) if pos is None else pd.Series(
            values[pos], name="value", index=pd.Index(ids[pos], name="query_id")))
    return made[want]


def _series(x, metric: Metric | str | None):
    if isinstance(x, Run):
        if metric is None:
            raise ValueError(f"comparing runs needs a metric (run {x.name!r})")
        return x.values(metric)
    return x if metric is None or not hasattr(x, "columns") else x[Metric.parse(metric).column]


def common(a, b, metric: Metric | str | None = None, *, on: Iterable[str] | None = None,
           split: str = "all"):
    """(a, b) on the same questions, in the same order: the ids both scored, in `a`'s order
    (or the ids `on`, in their order: each must be scored by both; a set of ids, which has no
    order of its own, sorted, so that the bootstrap draws the same questions in every run),
    then only those on `split` (``"tune"``, ``"held-out"``) unless it is ``"all"``. `a` and
    `b` are Series indexed by query id, or `Run`s with a `metric`."""
    x, y = _series(a, metric), _series(b, metric)
    ids = (x.index.intersection(y.index) if on is None else
           sorted(on) if isinstance(on, (set, frozenset)) else list(on))
    if split != "all":
        ids = [q for q in ids if side_of(q) == split]
    return x.loc[ids], y.loc[ids]


def versus(a, b, metric: Metric | str | None = None, *, on: Iterable[str] | None = None,
           split: str = "all", n_resamples: int = N_RESAMPLES, seed: int = SEED,
           confidence: float = CONFIDENCE) -> Comparison:
    """The paired comparison a − b over the questions both scored (`common`): mean
    difference, its bootstrap interval (`ragkit.evaluate.stats.paired`) and wins / losses /
    ties. A question with a NaN on either side is kept (the comparison is then NaN): drop
    them first where that is meant."""
    x, y = common(a, b, metric, on=on, split=split)
    return paired(x.to_numpy(), y.to_numpy(), n_resamples=n_resamples, seed=seed,
                  confidence=confidence)


def choose_on_tune(candidates: Iterable[T], score: Callable[[T, list[str]], float],
                   ids: Iterable[str], *, ties: Callable[[T], Any] | None = None,
                   digits: int | None = None, half: str = "tune") -> T:
    """The candidate with the largest ``score(candidate, tune_ids)``, where ``tune_ids`` are
    the ids of `ids` on the tune half (`ragkit.evaluate.splits`; `half` names another half, or
    ``"all"``), in their order: the held-out half is never read.

    Scores are compared rounded to `digits` decimals when given (so float noise cannot decide
    between equals). Equal scores go to the candidate with the largest ``ties(candidate)``
    (state the order: ``lambda c: -c.size`` prefers the smaller size), and without `ties`, or
    when that ties too, to the earliest candidate."""
    chosen = [q for q in dict.fromkeys(ids) if half == "all" or side_of(q) == half]

    def key(c: T):
        s = score(c, chosen)
        s = round(s, digits) if digits is not None else s
        return s if ties is None else (s, ties(c))

    pool = list(candidates)
    if not pool:
        raise ValueError("no candidates to choose from")
    return max(pool, key=key)


__all__ = ["Metric", "Run", "choose_on_tune", "common", "per_query", "side_of", "versus",
           "wide"]
