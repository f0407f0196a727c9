"""The claims of `ragkit.report.claims` checked against a run: measured, decided, shown.

`check_claims` measures every declared claim on the results rows and per-query scores of a run
(`measure`: the claim's configuration against its baseline, paired on the same questions, with
the bootstrap interval of the difference), decides it by its pre-declared rule
(`ragkit.report.claims.decide`) and says why a claim is not measurable here (a baseline the
encoder truncated, a metric no run recorded); a composite claim whose control meets it alone
is "held, not attributable" (`attribute`). A metric a saved run did not record but its ranked
hits determine (``doc_hit@k``) is derived from the saved hits (`derive_from_hits`).
`claims_for`, `show` and `claim_sentences` pick and render the verdicts in a notebook.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from ..evaluate.runs import Metric, common, per_query, versus
from ..evaluate.stats import interval, ratio_effect
from .prose import points
from .claims import (CLAIMS, HELD, NOT_ATTRIBUTABLE, UNMEASURABLE, Claim, Select, _golden_records,
                     decide, subset_ids)

# metrics a claim can read from a run's saved ranked hits when its per-query scores lack them
# (runs recorded before the metric existed): metric -> function(hits, gold docs, k)
_FROM_HITS = {"doc_hit@k": "doc_hits"}


_DEFAULT_K = 5


@lru_cache(maxsize=4)
def _gold_docs(benchmark: str) -> dict[str, frozenset[str]]:
    """Query id -> the documents holding its gold evidence, for a benchmark's answerable
    questions (the course's from ``golden.jsonl``, others through `ragkit.evaluate.benchmarks`)."""
    if benchmark == "course":
        return {str(r["id"]): frozenset(str(e["doc_id"]) for e in r["evidence"])
                for r in _golden_records() if r.get("evidence")}
    from ..evaluate.benchmarks import load

    return {q.id: frozenset(g.doc_id for g in q.gold) for q in load(benchmark).queries
            if q.gold}


@lru_cache(maxsize=8)
def _saved_hits(notebook: str):
    import pandas as pd

    from .results import runs_path

    path = runs_path(notebook, "hits")
    cols = ["run", "query_id", "rank", "doc_id"]
    return pd.read_parquet(path, columns=cols) if path.exists() else pd.DataFrame(columns=cols)


def derive_from_hits(hits, metric: str, benchmark: str, k: int | None):
    """Per-query values of `metric` (one of ``_FROM_HITS``) computed from one run's ranked
    hits (query_id, rank, doc_id …) and the benchmark's golden evidence, at the run's k."""
    from ..evaluate import metrics as evaluate

    fn = getattr(evaluate, _FROM_HITS[metric])
    return fn(hits, _gold_docs(benchmark), int(k or _DEFAULT_K))


def _values(scores, run: str, metric: str, budget: int, rows=None, hits=None):
    """One run's per-query `metric`: from the saved scores, or — for a metric those lack (a
    run recorded before it existed) that the ranked hits determine — derived from the run's
    saved hits (``results/runs/<notebook>.hits.parquet``) and the golden evidence. `hits`
    (run, query_id, rank, doc_id) replaces the saved files, for tests."""
    out = per_query(scores, run, Metric.from_long(metric, budget))
    if len(out) or metric not in _FROM_HITS or rows is None:
        return out
    row = rows[rows.run == run].iloc[0]
    k = row.get("k")
    k = int(k) if k is not None and k == k else _DEFAULT_K
    frame = hits if hits is not None else _saved_hits(str(row.notebook))
    frame = frame[frame.run == run]
    if not len(frame):
        return out
    return derive_from_hits(frame, metric, str(row.benchmark), k)


def _resolve(rows, sel: Select | None) -> tuple[str | None, str]:
    """The one run `sel` names, or None and why. Every claim treats truncation one way: a run
    whose encoder cut chunks short is used, and its flags column shows how many
    (``truncated:N``); a claim whose chunks need a longer encoder names that encoder in its
    selection (seed 002's small-to-big selects EmbeddingGemma runs)."""
    if sel is None:
        return None, ""
    runs = sel.runs(rows)
    if len(runs) != 1:
        return None, ("no run of " if not runs else f"{len(runs)} runs match ") + sel.describe()
    return runs[0], ""


def _flags(rows, run: str | None) -> list[str]:
    if run is None:
        return []
    flags = rows.loc[rows.run == run, "flags"].iloc[0]
    return [str(f) for f in flags] if isinstance(flags, (list, tuple, np.ndarray)) else []


def measure(claim: Claim, rows, scores, sel: Select | None = None,
            against: Select | None = None, hits=None) -> dict[str, Any]:
    """Estimate, interval and n of one claim (or of a sensitivity configuration `sel` against
    `against`, by default the claim's baseline); ``reason`` is set when it cannot be
    measured. A metric the saved scores lack but the ranked hits determine (``doc_hit@k``)
    is derived from the saved hits (or `hits`, a frame with a ``run`` column)."""
    nan = float("nan")
    out = {"estimate": nan, "low": nan, "high": nan, "n": 0, "ours": nan, "baseline": nan,
           "reason": "", "finding": "", "flags": ""}
    if claim.unmeasurable:
        return out | {"reason": claim.unmeasurable}
    run, why = _resolve(rows, sel or claim.config)
    base, why_b = _resolve(rows, against or claim.baseline) \
        if claim.effect != "level" else (None, "")
    if run is None or (claim.effect != "level" and base is None):
        missing = why or why_b
        if missing.startswith(("no run", "1 runs")) or not missing:
            missing = claim.missing or missing
        return out | {"reason": missing}
    out["flags"] = ";".join(sorted(set(_flags(rows, run) + _flags(rows, base))))
    a = _values(scores, run, claim.metric, claim.budget, rows, hits)
    if claim.subset:
        a = a[a.index.isin(subset_ids(claim.subset))]
    if claim.effect == "level":
        if not len(a):
            return out | {"reason": f"no per-query {claim.metric} in the run"}
        est, lo, hi = interval(a.to_numpy())
        return out | {"estimate": est, "low": lo, "high": hi, "n": len(a), "ours": est}
    b = _values(scores, base, claim.metric, claim.budget, rows, hits)
    x, y = common(a, b)
    if not len(x):
        return out | {"reason": f"no common questions with per-query {claim.metric}"}
    if claim.effect == "failure_reduction":
        x, y = x.to_numpy(), y.to_numpy()
        est, lo, hi = ratio_effect(x, y)
        return out | {"estimate": est, "low": lo, "high": hi, "n": len(x),
                      "ours": float(x.mean()), "baseline": float(y.mean())}
    c = versus(x, y)
    return out | {"estimate": c.diff, "low": c.low, "high": c.high, "n": c.n,
                  "ours": c.mean_a, "baseline": c.mean_b,
                  "finding": c.finding("configuration", "baseline")}


def check_claims(rows, scores=None, claims: Sequence[Claim] | None = None,
                 sensitivity: bool = True, hits=None):
    """One row per claim (and per sensitivity configuration): source, claim, metric, claimed,
    ours, baseline, estimate with its 95 % interval, n, verdict, reason.

    `rows` are the results rows (`load_results`), `scores` the per-query values
    (`load_scores`, read from the same folder when omitted); `hits` (run, query_id, rank,
    doc_id) stands in for the saved ranked hits a metric like ``doc_hit@k`` is derived from
    when the scores lack it (default: ``results/runs/<notebook>.hits.parquet``)."""
    import pandas as pd

    from .results import load_scores

    if scores is None:
        scores = load_scores()
    out = []
    for c in claims or CLAIMS:
        m = measure(c, rows, scores, hits=hits)
        if not m["reason"] and at_ceiling(m) and c.kind != "approx_level":
            m = {**m, "reason": "both sides at the metric's ceiling (100 % and 100 %): it "
                                "cannot show a difference here"}
        v = decide(c.kind, c.claimed, m["estimate"], m["low"], m["high"], c.tolerance) \
            if not m["reason"] else UNMEASURABLE
        reason = m["reason"]
        if c.metric_note and v != UNMEASURABLE:
            reason = f"not the claim's metric: {c.metric_note}"
        if c.control and v != UNMEASURABLE:
            v, share = attribute(c, v, m, measure(c, rows, scores, c.control[1], hits=hits))
            reason = "; ".join(x for x in (reason, share) if x)
        out.append({"id": c.id, "source": c.source, "claim": c.statement, "metric": c.metric,
                    "kind": c.kind, "claimed": c.claimed, "ours": m["ours"],
                    "baseline": m["baseline"], "estimate": m["estimate"], "low": m["low"],
                    "high": m["high"], "n": m["n"], "verdict": v, "reason": reason,
                    "flags": m["flags"], "subset": c.subset or "all", "role": "claim"})
        if not sensitivity:
            continue
        for label, sel, against in c.sensitivity:
            s = measure(c, rows, scores, sel, against, hits=hits)
            if s["reason"]:
                continue  # a configuration that was not run is simply not shown
            out.append({"id": f"{c.id}/{sel.strategy}", "source": c.source,
                        "claim": f"{label} ({sel.describe()})", "metric": c.metric,
                        "kind": c.kind, "claimed": c.claimed, "ours": s["ours"],
                        "baseline": s["baseline"], "estimate": s["estimate"], "low": s["low"],
                        "high": s["high"], "n": s["n"], "verdict": "(sensitivity)",
                        "reason": "", "flags": s["flags"], "subset": c.subset or "all",
                        "role": "sensitivity"})
    return pd.DataFrame(out)


def attribute(claim: Claim, verdict: str, full: dict, control: dict) -> tuple[str, str]:
    """A composite claim's verdict and what its parts account for: the control (the claim's
    configuration without one part, against the same baseline) alone, and the share of the
    effect the left-out part adds. A held claim whose control alone is held reads "held, not
    attributable to <part>".

    >>> c = Claim("x", "s", "cuts failures by 49 %", "pass@20", "at_least",
    ...           "failure_reduction", 0.49, None, control=("the preamble", None))
    >>> v, note = attribute(c, "held", {"estimate": 0.55}, {"estimate": 0.50, "low": 0.46,
    ...                                                     "high": 0.55, "reason": ""})
    >>> v
    'held, not attributable to the preamble'
    >>> note
    'without the preamble: 50.0 [46.0, 55.0]; by the point estimates the preamble adds 9 % of the effect (a ratio of two estimates, with no interval of its own)'
    """
    part = claim.control[0]
    if control["reason"]:
        return verdict, f"the control without {part} was not measured: {control['reason']}"
    alone = decide(claim.kind, claim.claimed, control["estimate"], control["low"],
                   control["high"], claim.tolerance)
    est = full["estimate"]
    share = (1 - control["estimate"] / est) if est and est == est else float("nan")
    note = (f"without {part}: {100 * control['estimate']:.1f} [{100 * control['low']:.1f}, "
            f"{100 * control['high']:.1f}]"
            + (f"; by the point estimates {part} adds {100 * share:.0f} % of the effect (a ratio "
               "of two estimates, with no interval of its own)" if share == share else ""))
    if verdict == HELD and alone == HELD:
        return NOT_ATTRIBUTABLE.format(part=part), note
    return verdict, note


def at_ceiling(m: dict) -> bool:
    """Both sides of a measured effect at 100 % (a share metric's ceiling): no difference
    can show, so a claim about one is not measurable here, not "not held".

    >>> at_ceiling({"ours": 1.0, "baseline": 1.0}), at_ceiling({"ours": 1.0, "baseline": 0.9})
    (True, False)
    """
    ours, base = m.get("ours"), m.get("baseline")
    return ours is not None and base is not None and ours == ours and base == base \
        and min(ours, base) >= 1 - 1e-9


def claims_for(*prefixes: str) -> list[Claim]:
    """The declared claims whose id starts with any of `prefixes` (``claims_for("chroma")``)."""
    return [c for c in CLAIMS if c.id.startswith(prefixes)]


def show(table, digits: int = 1, brief: bool = False):
    """A claim-check table for reading: values in %, the interval beside the estimate. With
    `brief`, the columns a reader compares: the claimed value and the measured one in the
    claim's own terms, no raw levels, subset, reason or flags (the closing's sentences give the
    reasons) and each sensitivity row once, where several claims repeat it
    with the same numbers."""
    def pct(v):
        return points(v, digits)

    out = table.copy()
    out["claimed"] = [pct(v) if v is not None else "direction" for v in table.claimed]
    out["ours"] = [pct(v) for v in table.ours]
    out["baseline"] = [pct(v) for v in table.baseline]
    out["effect [95 % CI]"] = [
        "–" if e != e else f"{pct(e)} [{pct(lo)}, {pct(hi)}]"
        for e, lo, hi in zip(table.estimate, table.low, table.high)]
    if brief:
        key = out[["claim", "ours", "baseline", "effect [95 % CI]"]].astype(str).agg("|".join,
                                                                                     axis=1)
        keep = (out.role == "claim") | ~key.duplicated()
        # the claimed value beside the measured one in the claim's own terms (a level, or a
        # reduction of failures): the raw levels of each side would sit beside a reduction
        return (out[keep][["source", "claim", "metric", "claimed", "effect [95 % CI]", "n",
                           "verdict"]]
                .rename(columns={"effect [95 % CI]": "measured [95 % CI]"})
                .reset_index(drop=True))
    return out[["source", "claim", "metric", "subset", "claimed", "ours", "baseline",
                "effect [95 % CI]", "n", "verdict", "reason", "flags"]]


def claim_sentences(table, digits: int = 1) -> list[str]:
    """One Markdown sentence per declared claim (``role == "claim"``) of a `check_claims`
    table: source, claim, the verdict in bold, then the measured effect with its 95 % interval
    and n, or the reason it could not be measured here. Sensitivity rows are left out (they do
    not vote)."""
    by_id = {c.id: c for c in CLAIMS}
    out = []
    for r in table[table.role == "claim"].itertuples():
        head = f"{r.source}, \"{r.claim}\": **{r.verdict}**"
        if r.verdict == UNMEASURABLE or r.estimate != r.estimate:
            out.append(f"{head} ({r.reason or 'no estimate in this run'}).")
            continue
        effect = by_id[r.id].effect if r.id in by_id else "diff"
        est, lo, hi = (100 * v for v in (r.estimate, r.low, r.high))
        if effect == "failure_reduction":
            measured = (f"top-20 failures reduced by {est:.{digits}f} % (95 % CI "
                        f"[{lo:+.{digits}f}, {hi:+.{digits}f}] %)")
        elif effect == "level":
            measured = f"{r.metric} {est:.{digits}f} % (95 % CI [{lo:.{digits}f}, {hi:.{digits}f}])"
        else:
            measured = (f"{r.metric} {est:+.{digits}f} points (95 % CI [{lo:+.{digits}f}, "
                        f"{hi:+.{digits}f}])")
        base = "" if r.baseline is None or r.baseline != r.baseline else (
            f"; {r.metric} {100 * r.ours:.{digits}f} % against {100 * r.baseline:.{digits}f} %")
        note = f" ({r.reason})" if r.reason else ""
        out.append(f"{head}: {measured}{base}, n = {r.n}{note}.")
    return out
