"""Closing sections: the call read from the intervals, the deciding number, at most five lines."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragkit.evaluate.stats import Comparison, paired
from ragkit.report.decisions import Decision, ranked, ranked_closing


def comp(diff, low, high, n=50):
    return Comparison(0.5 + diff, 0.5, diff, low, high, 10, 5, n - 15, n)


UP, DOWN, FLAT = comp(0.05, 0.02, 0.08), comp(-0.04, -0.07, -0.01), comp(0.01, -0.02, 0.04)


@pytest.mark.parametrize("by, call", [
    ({"a": UP, "b": UP}, "use"),                    # beats on every benchmark
    ({"a": UP, "b": FLAT}, "depends"),              # beats on one only
    ({"a": DOWN, "b": DOWN}, "do not use"),         # loses on every benchmark
    ({"a": DOWN, "b": FLAT}, "do not use"),         # a measured loss, an upside nowhere
    ({"a": FLAT, "b": FLAT}, "no evidence either way"),  # a null is not a "do not use"
    ({"a": UP, "b": DOWN}, "depends"),
])
def test_the_call_is_read_from_the_intervals(by, call):
    assert Decision("x", "y", "recall@B1024", by).call == call


def test_the_deciding_number_follows_the_call():
    d = Decision("x", "y", "recall", {"a": UP, "b": comp(0.09, 0.01, 0.17), "c": FLAT})
    assert d.decisive[0] == "b" and d.call == "depends"
    assert "beats on a, b only; no measurable difference on c" in d.line()
    d = Decision("x", "y", "recall", {"a": DOWN, "b": comp(0.2, -0.1, 0.5)})
    assert d.call == "do not use" and d.decisive[0] == "a"
    assert d.line().startswith("**Do not use on a:** x over y")  # scoped to where it loses
    assert d.line().endswith("loses on a; no measurable difference on b; it beats on no "
                             "benchmark.")
    d = Decision("x", "y", "recall", {"a": DOWN, "b": comp(-0.09, -0.15, -0.03)})
    assert d.call == "do not use" and d.decisive[0] == "b"
    assert d.line().endswith("loses on 2 of 2.")
    assert d.call_phrase() == "worse on a, b"
    assert Decision("x", "y", "r", {"a": DOWN, "b": FLAT}).call_phrase() == (
        "worse on a and not measurably different on b")
    assert Decision("x", "y", "r", {"a": UP, "b": DOWN, "c": FLAT}).call_phrase() == (
        "better on a, worse on b and not measurably different on c")
    mixed = Decision("x", "y", "recall", {"a": DOWN, "b": UP, "c": FLAT}, cost="1 ms").line()
    assert mixed.startswith("**Depends:** x over y: recall +5.0")
    assert mixed.endswith("beats on b only; loses on a; no measurable difference on c; "
                          "cost: 1 ms.")
    line = Decision("structure", "fixed", "recall@B1024", {"chroma": UP},
                    encoder="all-MiniLM-L6-v2").line()
    assert line.startswith("**Use** structure over fixed: recall@B1024 +5.0 [+2.0, +8.0] on "
                           "chroma (held-out half, all-MiniLM-L6-v2, n = 50)")
    assert line.endswith("beats on 1 of 1; cost: not measured.")
    costed = Decision("s", "f", "m", {"a": UP}, cost="13.0 ms p50 against 10.0 ms").line()
    assert "cost: 13.0 ms p50 against 10.0 ms" in costed
    for changes in ({"a": DOWN}, {"a": FLAT}):  # a cost is weighed beside every call
        other = Decision("s", "f", "m", changes, cost="13.0 ms p50 against 10.0 ms").line()
        assert other.endswith("; cost: 13.0 ms p50 against 10.0 ms.")
    assert "cost" not in Decision("s", "f", "m", {"a": FLAT}).line()  # none measured, none said


def test_a_null_says_what_would_decide_it():
    """No evidence either way, with the questions an interval this wide would need: the
    half-width shrinks as 1 / sqrt(n), so (0.03 / 0.01)^2 = 9 times the questions."""
    line = Decision("x", "y", "m", {"a": FLAT}).line()
    assert line.startswith("**No evidence either way:** x over y")
    assert "about 450 questions (here 50)" in line
    zero = Decision("x", "y", "m", {"a": comp(0.0, -0.02, 0.02)}).line()
    assert "no difference was seen at all" in zero


def test_never_an_oracle_and_never_two_contradicting_calls():
    with pytest.raises(ValueError, match="oracle"):
        Decision("searching only the question's own corpus (an oracle filter)", "y", "m",
                 {"a": UP})
    with pytest.raises(ValueError, match="each used over the other"):
        ranked_closing([Decision("children", "parents", "m", {"a": UP}),
                        Decision("parents", "children", "m", {"a": UP})])
    with pytest.raises(ValueError, match="both"):
        ranked_closing([Decision("x", "y", "m", {"a": UP}), Decision("x", "y", "m", {"a": DOWN})])


def test_an_unstable_benchmark_counts_neither_way_and_a_condition_comes_first():
    d = Decision("x", "y", "m", {"a": UP, "b": FLAT}, unstable=("a",))
    assert d.beats == [] and d.call == "no evidence either way"
    assert "on a is reversed measurably on the tune half" in d.line()
    assert Decision("x", "y", "m", {"a": UP, "b": UP}, unstable=("a",)).call == "depends"
    line = Decision("breadcrumbs", "none", "m", {"a": UP},
                    condition="you chunk by structure").line()
    assert line.startswith("*If you chunk by structure:* **Use** breadcrumbs over none")


def test_real_comparisons_decide_as_their_intervals_say():
    better = paired([1, 1, 1, 0] * 20, [0, 1, 0, 0] * 20)
    assert Decision("x", "y", "m", {"a": better}).call == "use"
    assert Decision("y", "x", "m", {"a": paired([0, 1, 0, 0] * 20, [1, 1, 1, 0] * 20)}
                    ).call == "do not use"


@given(st.lists(st.floats(-0.5, 0.5), min_size=1, max_size=12))
def test_ranked_keeps_at_most_five_largest_first(diffs):
    ds = [Decision(f"t{i}", "y", "m", {"a": comp(d, d - 0.01, d + 0.01)})
          for i, d in enumerate(diffs)]
    out = ranked(ds)
    sizes = [abs(d.decisive[1].diff) for d in out]
    assert len(out) == min(5, len(ds)) and sizes == sorted(sizes, reverse=True)
    assert min(sizes) >= sorted((abs(x) for x in diffs), reverse=True)[len(out) - 1]


def test_closing_keeps_every_other_finding_folded():
    md = ranked_closing([Decision("x", "y", "m", {"a": UP})], ["one finding", "", "two"])
    head, _, folded = md.partition("<details>")
    assert head.count("\n1. ") == 1 and "one finding" not in head
    assert "Every finding (2)" in folded and "- one finding" in folded and "- two" in folded
    bare = ranked_closing([], ["x"], none="no design runs here")
    assert "No ranked decision: no design runs here." in bare and "- x" in bare
    assert "<details>" not in bare
    with pytest.raises(ValueError):
        ranked_closing([], [])


def test_effect_decisions_group_ragkits_effects_per_factor_and_configuration():
    from types import SimpleNamespace as NS

    from ragkit.report.decisions import effect_decisions

    def cfg(chunker, first="stack", rr="none", enc="minilm", simple=False):
        return NS(chunker=chunker, first_stage=first, reranker=rr, encoder=enc, simple=simple,
                  label=f"{chunker}+{first}" + ("" if rr == "none" else f"+{rr}"))

    def eff(bench, factor, treated, base, budget=1024, complete=True, c=UP):
        return NS(benchmark=bench, factor=factor, treated=treated, base=base, budget=budget,
                  complete=complete, recall=c)

    router, best_a, best_b = cfg("router"), cfg("fixed", simple=True), cfg("rec", simple=True)
    found = [eff("a", "chunker", router, best_a), eff("b", "chunker", router, best_b, c=DOWN),
             eff("a", "first_stage", router, cfg("router", "dense")),
             eff("a", "chunker", router, best_a, budget=512),          # another budget
             eff("c", "chunker", router, best_a, complete=False),      # incomplete: left out
             eff("a", "first_stage", best_a, cfg("fixed", "dense", simple=True))]  # a baseline's
    ds = effect_decisions(found, 1024)
    assert len(ds) == 2
    chunker = next(d for d in ds if "chunker" in d.technique)
    assert set(chunker.by_benchmark) == {"a", "b"} and chunker.call == "depends"
    assert "best simple baseline" in chunker.against
    stack = next(d for d in ds if "first stage" in d.technique)
    assert stack.by_benchmark == {"a": UP} and stack.split == "held-out half"
    assert stack.encoder == "minilm" and "(held-out half, minilm, n = 50)" in stack.line()
    costs = [{"benchmark": "a", "configuration": c, "p50_ms": p, "chunk_cpu_s": 1.0}
             for c, p in (("router+stack", 13.0), ("router+dense", 6.5))]
    stack = next(d for d in effect_decisions(found, 1024, costs) if "first stage" in d.technique)
    assert stack.cost == "13.0 ms p50 per question against 6.5 ms on a"  # same chunker
    assert stack.call == "use" and "cost: 13.0 ms" in stack.line()
    gemma = cfg("router", enc="gemma")
    found.append(eff("a", "encoder", gemma, router))
    enc_costs = [{"benchmark": "a", "encoder": e, "chunk_encode_ms": ms, "index_mb": mb,
                  "query_encode_p50_ms": q} for e, ms, q, mb in (("gemma", 1410.0, 95.0, 9.4),
                                                                  ("minilm", 14.0, 6.0, 4.7))]
    enc = next(d for d in effect_decisions(found, 1024, costs, enc_costs)
               if d.technique.startswith("gemma"))
    assert enc.cost == ("1.4 s to encode a chunk against 14 ms, a question 95 ms p50 against "
                        "6 ms, index 9.4 against 4.7 MiB on a, in one CPU process")
    assert next(d for d in effect_decisions(found, 1024, costs)
                if d.technique.startswith("gemma")).cost == ""
    for c in enc_costs:  # with the chunk count, the whole benchmark's encoding is weighed
        c["chunks"] = 600
    enc = next(d for d in effect_decisions(found, 1024, costs, enc_costs)
               if d.technique.startswith("gemma"))
    assert enc.cost.startswith("1.4 s to encode a chunk against 14 ms (101 times the time: the "
                               "benchmark's 600 chunks at those rates take about 14 min "
                               "against 8 s), a question 95 ms p50")


def test_effect_decisions_note_a_weak_pick_and_an_encoder_gain_that_the_stack_does_not_keep():
    from types import SimpleNamespace as NS

    from ragkit.report.decisions import effect_decisions

    def cfg(chunker, first="stack", enc="minilm", simple=False):
        return NS(chunker=chunker, first_stage=first, reranker="none", encoder=enc,
                  simple=simple, label=f"{chunker}+{first}" + ("" if enc == "minilm" else
                                                               f" ({enc})"))

    def eff(factor, treated, base, c=UP, **kw):
        return NS(benchmark="a", factor=factor, treated=treated, base=base, budget=1024,
                  complete=True, recall=c, **kw)

    router = cfg("router")
    found = [eff("chunker", router, cfg("fixed", simple=True), split_rank=(3, 7),
                 split_leader=("langchain", 0.952)),
             eff("encoder", cfg("router", "dense", "gemma"), cfg("router", "dense")),
             eff("encoder", cfg("router", "stack", "gemma"), router, c=FLAT),
             eff("first_stage", router, cfg("router", "dense"))]
    ds = effect_decisions(found, 1024)
    chunker = next(d for d in ds if "chunker" in d.technique)
    assert chunker.note == ("on a the tune half's pick is 3 of 7 simple baselines on the "
                            "held-out half, whose own leader there, langchain, has 95.2 "
                            "against ragkit's 55.0")
    assert chunker.line().endswith(f"({chunker.note}).")
    assert chunker.call == "no evidence either way" and chunker.weak == ("a",)
    assert "the win on a is against a weak pick" in chunker.line()
    dense = next(d for d in ds if d.technique.startswith("gemma in place of minilm (measured on router chunks + dense)"))
    assert dense.call == "use" and dense.note.startswith(
        "under stack instead: no evidence either way, recall@B1024 +1.0 [-2.0, +4.0] on a")
    assert dense.line().startswith("*If your first stage is dense:* **Use** gemma in place of")
    assert dense.note.endswith("to weigh it by: keeping minilm and changing the first stage "
                               "instead (stack as the first stage on router chunks) is use, "
                               "recall@B1024 +5.0 [+2.0, +8.0] on a")
    stack = next(d for d in ds if d.technique.startswith("gemma in place of minilm (measured on router chunks + stack)"))
    assert stack.note.startswith("under dense instead: use, recall@B1024 +5.0")
    assert stack.condition == "your first stage is stack"


def test_gold_ranks_read_the_first_hit_that_touches_the_gold():
    from types import SimpleNamespace as NS

    from ragkit.report import gold_ranks
    from ragkit.types import Span

    q1 = NS(id="q1", gold=(Span("d", 10, 20),), copies=())
    q2 = NS(id="q2", gold=(Span("d", 50, 60),), copies=())

    def hit(s, e):
        return NS(chunk=NS(doc_id="d", start=s, end=e, span=(s, e)))

    ranks = gold_ranks([q1, q2], [[hit(30, 40), hit(15, 25)], [hit(0, 5)]])
    assert ranks["q1"] == 2 and ranks.isna()["q2"]


def test_a_decision_over_chunkings_counts_chunkings_not_benchmarks():
    use = Decision("bm25", "dense", "Pass@20", {"code": UP, "prose": UP}, over="chunking")
    assert "beats on 2 of 2 chunkings;" in use.line()
    null = Decision("x", "y", "Pass@20", {"code": FLAT}, over="chunking")
    assert "no measurable difference on code;" in null.line()
    two = Decision("x", "y", "Pass@20", {"code": FLAT, "prose": FLAT}, over="chunking")
    assert "no chunking of 2 differs measurably" in two.line()
    scoped = Decision("x", "y", "Pass@20", {"code": DOWN, "prose": FLAT}, over="chunking")
    assert scoped.line().startswith("**Do not use on code:**")
    assert "it beats on no chunking" in scoped.line()
    assert "beats on 2 of 2;" in Decision("bm25", "dense", "m", {"a": UP, "b": UP}).line()


def test_a_win_against_a_weak_pick_is_said_and_not_counted():
    alone = Decision("router", "best baseline", "m", {"course": UP}, weak=("course",))
    assert alone.call == "no evidence either way" and alone.beats == []
    line = alone.line()
    assert line.startswith("**No evidence either way:** router over best baseline: m +5.0")
    assert "the win on course is against a weak pick" in line and "not counted" in line
    mixed = Decision("router", "best", "m", {"course": UP, "chroma": UP, "anthropic": FLAT},
                     weak=("course",))
    assert mixed.call == "depends" and mixed.beats == ["chroma"]
    assert "no measurable difference on anthropic" in mixed.line()
    assert "no measurable difference on course" not in mixed.line()
    assert mixed.call_phrase() == ("better on chroma, better only against a weak pick on course"
                                   " and not measurably different on anthropic")
