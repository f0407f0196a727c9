"""A notebook's closing, ranked: at most five lines, each a call a reader can act on.

A notebook measures many things; its reader needs the few decisions they support. A `Decision`
is one technique against what it replaces, on one metric, measured per benchmark as paired
comparisons (`ragkit.evaluate.Comparison`). Its call follows one rule for the whole course,
read from the intervals alone:

- **use** only when it beats its alternative on *every* benchmark measured (the interval above
  0 on each), with its measured cost stated beside it (or "cost not measured"); any other
  call states a measured cost too, when there is one;
- **do not use** when it loses on at least one benchmark and beats on none: no benchmark
  shows an upside, at least one a measured cost; the line names where it loses and where no
  difference was measured (a null alone is never *do not use*), and where it does not lose
  everywhere its head is scoped to where it does ("Do not use on anthropic:");
- **depends** when it beats on some benchmarks and not on others (it loses or ties there):
  the line says where it helps, where it hurts and where no difference was measured;
- otherwise **no evidence either way**: no benchmark differs measurably; the line says what
  would decide it (about how many questions an interval this wide would need to exclude 0 at
  the difference seen).

A benchmark whose held-out difference the *tune* half of the questions measurably reverses
(`unstable`) counts as neither a win nor a loss: a result that flips between two halves of the
same questions is not a stable effect. Nor does a win against a weak pick (`weak`, read by
`weak_pick`): a chunker ahead of the baseline the tune half chose, where the held-out half
ranks another baseline above that pick and level with or above the chunker, has not beaten
the best baseline measured. A call that assumes an earlier choice (breadcrumbs *if*
you chunk by structure) says so first (`condition`), so it does not read as contradicting a
call against that choice.

Each line names the number that decides it (the comparison with the largest difference in the
direction of the call, with its 95 % interval), the benchmark, the split, n and the encoder.
A closing never recommends an oracle (a decision whose technique says "oracle" is refused) and
never holds two contradicting calls (the same technique called two ways, or A used over B and B
used over A). `ranked_closing` ranks the lines by the size of that number, keeps at most five,
and folds every other finding of the notebook into a collapsed list under them, so nothing
measured is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ..evaluate.stats import Comparison
from .prose import bound, ci

CALLS = ("use", "do not use", "depends", "no evidence either way")
MOST = 5


@dataclass(frozen=True)
class Decision:
    """`technique` against `against` on `metric`, one paired comparison per benchmark
    (technique − alternative), on `split` ("held-out half", "all questions") with `encoder`;
    `cost` is the measured cost a *use* states beside it."""

    technique: str
    against: str
    metric: str
    by_benchmark: Mapping[str, Comparison]
    split: str = "held-out half"
    encoder: str = ""
    cost: str = ""
    note: str = ""  # what a reader must weigh beside the call (said after it, in brackets)
    # benchmarks whose held-out difference the tune half measurably reverses: not evidence
    unstable: tuple[str, ...] = ()
    # the choice the call assumes ("you chunk by structure"): the line opens "If <condition>:"
    condition: str = ""
    # what the keys of `by_benchmark` are, in the line's counts ("beats on 4 of 4 chunkings")
    over: str = "benchmark"
    # benchmarks whose win is against a weak pick (`weak_pick`): said, and not counted as a win
    weak: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.by_benchmark:
            raise ValueError(f"a decision on {self.technique!r} needs at least one comparison")
        if "oracle" in self.technique.lower():
            raise ValueError(f"{self.technique!r}: a closing never recommends an oracle (it "
                             "reads what a real system does not know); make it a finding")

    def with_note(self, *notes: str) -> "Decision":
        """This decision with `notes` appended to its note (empty ones skipped), each part
        separated by "; ".

        >>> from ragkit.evaluate.stats import Comparison
        >>> c = Comparison(0.6, 0.5, 0.1, 0.02, 0.18, 5, 1, 4, 10)
        >>> Decision("x", "y", "m", {"a": c}, note="first").with_note("", "second").note
        'first; second'
        """
        return replace(self, note="; ".join(x for x in (self.note, *notes) if x))

    @property
    def beats(self) -> list[str]:
        return [b for b, c in self.by_benchmark.items()
                if c.low > 0 and b not in self.unstable and b not in self.weak]

    @property
    def loses(self) -> list[str]:
        return [b for b, c in self.by_benchmark.items() if c.high < 0 and b not in self.unstable]

    @property
    def call(self) -> str:
        if self.beats:
            return "use" if len(self.beats) == len(self.by_benchmark) else "depends"
        return "do not use" if self.loses else "no evidence either way"

    def call_phrase(self) -> str:
        """Where it is better, worse and not measurably different, as words for a sentence:
        ``'worse on anthropic and not measurably different on chroma, course'``."""
        tied = [b for b in self.by_benchmark
                if b not in self.beats and b not in self.loses and b not in self.weak]
        parts = [f"{word} on {', '.join(names)}" for word, names in (
            ("better", self.beats), ("better only against a weak pick", self.weak),
            ("worse", self.loses), ("not measurably different", tied)) if names]
        return (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]

    @property
    def decisive(self) -> tuple[str, Comparison]:
        """The benchmark and comparison that decide the call: the largest gain for *use* and
        *depends*, the largest loss for *do not use*, the largest difference either way
        otherwise."""
        items = list(self.by_benchmark.items())
        if self.beats:
            return max(((b, c) for b, c in items if c.low > 0), key=lambda bc: bc[1].diff)
        if self.loses:
            return min(((b, c) for b, c in items if c.high < 0), key=lambda bc: bc[1].diff)
        return max(items, key=lambda bc: abs(bc[1].diff))

    def _where(self) -> str:
        return ", ".join(x for x in (self.split, self.encoder) if x)

    def _decider(self, c: Comparison) -> str:
        """What would decide a null: the questions an interval this wide needs to exclude 0
        at the difference seen (the width shrinks as one over the square root of n)."""
        half = (c.high - c.low) / 2
        if not c.n or not half or not math.isfinite(half):
            return "no difference was seen at all"
        if abs(c.diff) < 1e-9:
            return "no difference was seen at all, so more questions would not decide it"
        need = math.ceil(c.n * (half / abs(c.diff)) ** 2)
        return (f"a difference this size would need about {need:,} questions (here {c.n}) "
                "to be told from 0")

    def _weak_words(self) -> str:
        if not self.weak:
            return ""
        return (f"the win on {', '.join(self.weak)} is against a weak pick (a baseline the "
                "held-out half ranks below one that scores at least as much as this "
                "technique there), so it is not counted as a win")

    def line(self) -> str:
        bench, c = self.decisive
        n = len(self.by_benchmark)
        number = (f"{self.metric} {bound(c.diff)} {ci(c.low, c.high)} on {bench} "
                  f"({self._where()}, n = {c.n})")
        head = f"**{self.call[0].upper() + self.call[1:]}**"
        if self.call in ("depends", "no evidence either way"):  # not an imperative
            head = head[:-2] + ":**"
        elif self.call == "do not use" and len(self.loses) < n:  # scoped to where it loses
            head = f"**Do not use on {', '.join(self.loses)}:**"
        unit = "" if self.over == "benchmark" else f" {self.over}s"
        if self.call == "use":
            why = (f"beats on {n} of {n}{unit}; cost: {self.cost or 'not measured'}")
        elif self.call == "do not use":
            tied = [b for b in self.by_benchmark if b not in self.loses]
            why = (f"loses on {n} of {n}{unit}" if not tied else
                   f"loses on {', '.join(self.loses)}; no measurable difference on "
                   f"{', '.join(tied)}; it beats on no {self.over}")
        elif self.call == "depends":
            tied = [b for b in self.by_benchmark
                    if b not in self.beats and b not in self.loses and b not in self.weak]
            parts = [f"beats on {', '.join(self.beats)} only",
                     self._weak_words(),
                     f"loses on {', '.join(self.loses)}" if self.loses else "",
                     f"no measurable difference on {', '.join(tied)}" if tied else "",
                     f"cost: {self.cost}" if self.cost else ""]
            why = "; ".join(p for p in parts if p)
        elif self.weak:
            others = len(self.by_benchmark) - len(self.weak)
            why = self._weak_words() + (f"; no other {self.over} of {others} differs measurably"
                                        if others else "")
        elif self.unstable:
            why = (f"the held-out difference on {', '.join(self.unstable)} is reversed "
                   f"measurably on the tune half, so it is not a stable effect; no other "
                   f"{self.over} differs measurably")
        else:
            why = (f"no measurable difference on {bench}" if n == 1 else
                   f"no {self.over} of {n} differs measurably") + f"; {self._decider(c)}"
        if self.cost and self.call in ("do not use", "no evidence either way"):
            why += f"; cost: {self.cost}"  # what it would cost, weighed beside any call
        if self.condition:
            head = f"*If {self.condition}:* " + head
        return (f"{head} {self.technique} over {self.against}: {number}; {why}"
                + (f" ({self.note})" if self.note else "") + ".")


def contradictions(decisions: Iterable[Decision]) -> list[str]:
    """Pairs of decisions that contradict: one technique called two ways, or A used over B
    and B used over A."""
    ds = list(decisions)
    out = []
    for i, a in enumerate(ds):
        for b in ds[i + 1:]:
            same = (a.technique, a.against, a.encoder, a.split) == \
                (b.technique, b.against, b.encoder, b.split)
            if same and a.call != b.call:
                out.append(f"{a.technique!r} is both {a.call!r} and {b.call!r}")
            if a.call == b.call == "use" and a.technique in b.against \
                    and b.technique in a.against:
                out.append(f"{a.technique!r} and {b.technique!r} are each used over the other")
    return out


def ranked(decisions: Iterable[Decision], most: int = MOST) -> list[Decision]:
    """The decisions by the size of their deciding difference, largest first; at most `most`.
    Ties keep the order given."""
    ds = list(decisions)
    order = sorted(range(len(ds)), key=lambda i: (-abs(ds[i].decisive[1].diff), i))
    return [ds[i] for i in order[:most]]


def ranked_closing(decisions: Iterable[Decision], findings: Iterable[str] = (),
                   title: str = "What we measured",
                   none: str = "these results hold no comparison to decide on",
                   most: int = MOST) -> str:
    """The closing section as Markdown: the ranked decisions (at most `most` lines), then every
    other finding in a collapsed list ("Every finding"). Without a decision (a run that
    measured none: the smoke profile, a folder with no simple baseline) the section says why
    (`none`) and lists the findings open."""
    decisions = list(decisions)
    clash = contradictions(decisions)
    if clash:
        raise ValueError("a closing holds contradicting calls: " + "; ".join(clash))
    lines = [d.line() for d in ranked(decisions, most)]
    rest = [f for f in findings if f]
    if not lines:
        if not rest:
            raise ValueError("a closing section needs a decision or a finding")
        return (f"## {title}\n\nNo ranked decision: {none}.\n\n"
                + "\n".join(f"- {f}" for f in rest))
    out = f"## {title}\n\n" + "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
    if rest:
        items = "\n".join(f"- {f}" for f in rest)
        out += (f"\n\n<details><summary>Every finding ({len(rest)})</summary>\n\n{items}\n\n"
                "</details>")
    return out


def effect_decisions(found, budget: int = 1024, costs=(), encoder_costs=()) -> list[Decision]:
    """Decisions from the experiment design's effects (`ragkit.experiments.design.effects`,
    held-out half) at `budget`: one per factor and treated configuration of ragkit's own chunker
    (a simple baseline's effects inform the guide, not the closing), over the benchmarks that
    measured it. A chunker is set against the best simple baseline under its own retrieval
    (chosen on the tune half, so it may differ per benchmark); the other factors against their
    reference level on the same chunks. With `costs` (`ragkit.experiments.design_costs.
    load_costs`), each line states the measured latency of both sides on its deciding
    benchmark; with `encoder_costs` (`load_encoder_costs`), an encoder's line states both
    encoders' time per chunk and per question and their index sizes there."""
    groups: dict[tuple, dict] = {}
    for e in found:
        if e.budget != budget or not e.complete or e.treated.simple:
            continue
        key = (e.factor, e.treated.label) + (() if e.factor == "chunker" else (e.base.label,))
        g = groups.setdefault(key, {"e": e, "by": {}, "base": {}})
        g["by"][e.benchmark] = e.recall
        g["base"][e.benchmark] = e.base.label
    out = []
    for key, g in groups.items():
        e = g["e"]
        t = e.treated
        retrieval = t.first_stage + ("" if t.reranker == "none" else f" + {t.reranker}")
        technique, against = {
            "chunker": (f"ragkit's chunker ({t.chunker}) under {retrieval}",
                        "the best simple baseline under the same retrieval (chosen on the tune "
                        "half)"),
            "first_stage": (f"{t.first_stage} as the first stage on {t.chunker} chunks",
                            f"{e.base.first_stage} on the same chunks (both with {t.encoder} "
                            "vectors)"),
            "reranker": (f"the {t.reranker} reranker on {t.chunker} + {t.first_stage}",
                         "no reranker on the same first stage"),
            "encoder": (f"{t.encoder} in place of {e.base.encoder} (measured on {t.chunker} "
                        f"chunks + {retrieval})",
                        f"{e.base.encoder} on the same chunks and retrieval"),
        }.get(e.factor, (t.label, e.base.label))
        encoder = (f"{t.encoder} vs {e.base.encoder}" if e.factor == "encoder" else t.encoder)
        weak = tuple(sorted({x.benchmark for x in found if x.budget == budget
                             and x.factor == "chunker" == e.factor
                             and x.treated.label == t.label and weak_pick(x)} & set(g["by"])))
        d = Decision(technique, against, f"recall@B{budget}", g["by"], "held-out half", encoder,
                     weak=weak)
        bench = d.decisive[0]
        cost = (_encoder_cost(encoder_costs, bench, t.encoder, e.base.encoder)
                if e.factor == "encoder" else _cost(costs, bench, t.label, g["base"][bench],
                                                     chunking=e.factor == "chunker"))
        g["effects"] = [x for x in found if x.budget == budget and x.factor == e.factor
                        and x.treated.label == t.label and x.benchmark == bench]
        out.append(replace(d, cost=cost, note=_leader_note(g["effects"])))
    return _cross_retrieval_notes(out, groups)


def weak_pick(e) -> bool:
    """Whether a chunker effect's win is against a weak pick: the tune half's baseline is not
    the simple baselines' leader on the held-out half, and that leader scores at least what
    ragkit's chunker does there, so it would not give the win."""
    rank, leader = getattr(e, "split_rank", None), getattr(e, "split_leader", None)
    return bool(rank and rank[0] != 1 and leader and e.recall.low > 0
                and leader[1] >= e.recall.mean_a)


def _leader_note(effects) -> str:
    """For a chunker's decision: where the tune half's pick ranks among the simple baselines
    on the held-out half itself, when it is not their leader there (the comparison is then
    against a weaker baseline than the held-out half's best)."""
    e = next((x for x in effects if getattr(x, "split_rank", None)), None)
    if e is None or e.split_rank[0] == 1 or not e.split_leader:
        return ""
    rank, of = e.split_rank
    name, value = e.split_leader
    # a weak pick's win is said by the line itself (`Decision.weak`), not again here
    return (f"on {e.benchmark} the tune half's pick is {rank} of {of} simple baselines on the "
            f"held-out half, whose own leader there, {name}, has {100 * value:.1f} against "
            f"ragkit's {100 * e.recall.mean_a:.1f}")


def _cross_retrieval_notes(decisions: list[Decision], groups: dict) -> list[Decision]:
    """An encoder's decision under one first stage notes the same change's call under the
    other (a gain under dense search need not survive the stack), and where the two calls
    differ the line opens with the first stage it holds for ("If your first stage is dense:")."""
    enc = {g["e"].treated.first_stage: d for d, g in zip(decisions, groups.values())
           if g["e"].factor == "encoder"}
    # the first stage changed with the old encoder kept: a cheaper change to weigh an encoder by
    stages = {(g["e"].treated.encoder, g["e"].treated.chunker): d
              for d, g in zip(decisions, groups.values()) if g["e"].factor == "first_stage"}
    out = []
    for d, g in zip(decisions, groups.values()):
        stage = g["e"].treated.first_stage
        other_stage, other = next(((s, o) for s, o in enc.items() if s != stage), ("", None))
        if g["e"].factor == "encoder" and other is not None and other.call != d.call:
            b, c = other.decisive
            d = replace(d.with_note(f"under {other_stage} instead: {other.call}, {other.metric} "
                                    f"{bound(c.diff)} {ci(c.low, c.high)} on {b}"),
                        condition=f"your first stage is {stage}")
        cheaper = stages.get((g["e"].base.encoder, g["e"].treated.chunker))
        if g["e"].factor == "encoder" and stage == "dense" and cheaper is not None \
                and cheaper.call in ("use", "depends"):
            b, c = cheaper.decisive
            d = d.with_note(f"to weigh it by: keeping {g['e'].base.encoder} and changing the "
                            f"first stage instead ({cheaper.technique}) is {cheaper.call}, "
                            f"{cheaper.metric} {bound(c.diff)} {ci(c.low, c.high)} on {b}"
                            + (f", cost {cheaper.cost}" if cheaper.cost else ""))
        out.append(d)
    return out


def _encoder_cost(costs, bench: str, treated: str, base: str) -> str:
    """Both encoders' measured time per chunk and per question and their float32 index sizes
    on `bench`, or "" when not measured."""
    got = {c["encoder"]: c for c in costs if c["benchmark"] == bench}
    if treated not in got or base not in got:
        return ""
    a, b = got[treated], got[base]
    whole = ""
    if a.get("chunks") and a["chunk_encode_ms"] and b["chunk_encode_ms"]:
        n = int(a["chunks"])
        whole = (f" ({a['chunk_encode_ms'] / b['chunk_encode_ms']:,.0f} times the time: the "
                 f"benchmark's {n:,} chunks at those rates take about "
                 f"{_duration(n * a['chunk_encode_ms'])} against "
                 f"{_duration(n * b['chunk_encode_ms'])})")
    return (f"{_ms(a['chunk_encode_ms'])} to encode a chunk against "
            f"{_ms(b['chunk_encode_ms'])}{whole}, a question {_ms(a['query_encode_p50_ms'])} p50 "
            f"against {_ms(b['query_encode_p50_ms'])}, index {a['index_mb']:.1f} against "
            f"{b['index_mb']:.1f} MiB on {bench}, in one CPU process")


def _duration(ms: float) -> str:
    """A duration in milliseconds as seconds, minutes or hours, whichever reads best.

    >>> _duration(18_764), _duration(2_562_370), _duration(7_200_000)
    ('19 s', '43 min', '2.0 h')
    """
    s = ms / 1000
    return f"{s:,.0f} s" if s < 120 else f"{s / 60:,.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _ms(value: float) -> str:
    """Milliseconds as a reader takes them in: seconds from one second up.

    >>> _ms(56.2), _ms(7671.8)
    ('56 ms', '7.7 s')
    """
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:,.0f} ms"


def _cost(costs, bench: str, treated: str, base: str, chunking: bool = True) -> str:
    """Both sides' measured single-question latency on `bench` (and, where the chunkers
    differ, their chunking CPU seconds), or "" when not measured."""
    got = {c["configuration"]: c for c in costs if c["benchmark"] == bench}
    if treated not in got or base not in got:
        return ""
    a, b = got[treated], got[base]
    return (f"{a['p50_ms']:.1f} ms p50 per question against {b['p50_ms']:.1f} ms"
            + (f", chunking {a['chunk_cpu_s']:.1f} against {b['chunk_cpu_s']:.1f} CPU s"
               if chunking else "") + f" on {bench}")
