"""A notebook's closing, ranked: at most five lines, each a call a reader can act on.

A notebook measures many things; its reader needs the few decisions they support. A `Decision`
is one technique against what it replaces, on one metric, measured per benchmark as paired
comparisons (`ragkit.evaluate.Comparison`). Its call is read from the intervals alone:

- **use** when it beats its alternative on at least one benchmark and loses on none;
- **do not use** when it loses on at least one and beats on none, or beats nowhere (a cost
  with no measurable gain);
- **depends** when it beats on one benchmark and loses on another.

Each line names the one number that decides it (the comparison with the largest difference in
the direction of the call, with its 95 % interval) and how many benchmarks agree.
`ranked_closing` ranks the lines by the size of that number, keeps at most five, and folds
every other finding of the notebook into a collapsed list under them, so nothing measured is
dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..evaluate.stats import Comparison
from .prose import bound, ci

CALLS = ("use", "do not use", "depends")
MOST = 5


@dataclass(frozen=True)
class Decision:
    """`technique` against `against` on `metric`, one paired comparison per benchmark
    (technique − alternative)."""

    technique: str
    against: str
    metric: str
    by_benchmark: Mapping[str, Comparison]

    def __post_init__(self) -> None:
        if not self.by_benchmark:
            raise ValueError(f"a decision on {self.technique!r} needs at least one comparison")

    @property
    def beats(self) -> list[str]:
        return [b for b, c in self.by_benchmark.items() if c.low > 0]

    @property
    def loses(self) -> list[str]:
        return [b for b, c in self.by_benchmark.items() if c.high < 0]

    @property
    def call(self) -> str:
        if self.beats and self.loses:
            return "depends"
        return "use" if self.beats else "do not use"

    @property
    def decisive(self) -> tuple[str, Comparison]:
        """The benchmark and comparison that decide the call: the largest gain for *use*, the
        largest loss for *do not use* (the largest difference either way when nothing
        differs measurably), the largest difference either way for *depends*."""
        items = list(self.by_benchmark.items())
        if self.call == "use":
            return max(((b, c) for b, c in items if c.low > 0), key=lambda bc: bc[1].diff)
        if self.call == "do not use" and self.loses:
            return min(((b, c) for b, c in items if c.high < 0), key=lambda bc: bc[1].diff)
        return max(items, key=lambda bc: abs(bc[1].diff))

    def line(self) -> str:
        bench, c = self.decisive
        n = len(self.by_benchmark)
        number = f"{self.metric} {bound(c.diff)} {ci(c.low, c.high)} on {bench} (n = {c.n})"
        tally = f"beats on {len(self.beats)} of {n}, loses on {len(self.loses)}"
        if self.call == "do not use" and not self.loses:
            why = "no measurable gain on any benchmark"
        else:
            why = tally
        return (f"**{self.call.capitalize()}** {self.technique} over {self.against}: "
                f"{number}; {why}.")


def ranked(decisions: Iterable[Decision], most: int = MOST) -> list[Decision]:
    """The decisions by the size of their deciding difference, largest first; at most `most`.
    Ties keep the order given."""
    ds = list(decisions)
    order = sorted(range(len(ds)), key=lambda i: (-abs(ds[i].decisive[1].diff), i))
    return [ds[i] for i in order[:most]]


def ranked_closing(decisions: Iterable[Decision], findings: Iterable[str] = (),
                   title: str = "What we measured",
                   none: str = "these results hold no comparison to decide on") -> str:
    """The closing section as Markdown: the ranked decisions (at most five lines), then every
    other finding in a collapsed list ("Every finding"). Without a decision (a run that
    measured none: the smoke profile, a folder with no simple baseline) the section says why
    (`none`) and lists the findings open."""
    lines = [d.line() for d in ranked(decisions)]
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


def effect_decisions(found, budget: int = 1024) -> list[Decision]:
    """Decisions from the experiment design's effects (`ragkit.experiments.design.effects`,
    held-out half) at `budget`: one per factor and treated configuration of ragkit's own chunker
    (a simple baseline's effects inform the guide, not the closing), over the benchmarks that
    measured it. A chunker is set against the best simple baseline under its own retrieval
    (chosen on the tune half, so it may differ per benchmark); the other factors against their
    reference level on the same chunks."""
    groups: dict[tuple, dict] = {}
    for e in found:
        if e.budget != budget or not e.complete or e.treated.simple:
            continue
        key = (e.factor, e.treated.label) + (() if e.factor == "chunker" else (e.base.label,))
        groups.setdefault(key, {"e": e, "by": {}})["by"][e.benchmark] = e.recall
    out = []
    for key, g in groups.items():
        e = g["e"]
        t = e.treated
        retrieval = t.first_stage + ("" if t.reranker == "none" else f" + {t.reranker}")
        technique, against = {
            "chunker": (f"ragkit's chunker ({t.chunker}) under {retrieval}",
                        "the best simple baseline under the same retrieval (chosen on the tune "
                        "half, quoted held-out)"),
            "first_stage": (f"the {t.first_stage} (first stage) on {t.chunker} chunks",
                            f"{e.base.first_stage} on the same chunks"),
            "reranker": (f"the {t.reranker} reranker on {t.chunker} + {t.first_stage}",
                         "no reranker on the same first stage"),
            "encoder": (f"{t.encoder} on {t.chunker} + {retrieval}",
                        f"{e.base.encoder} on the same chunks and retrieval"),
        }.get(e.factor, (t.label, e.base.label))
        if e.factor != "chunker":
            against += " (held-out half)"
        out.append(Decision(technique, against, f"recall@B{budget}", g["by"]))
    return out
