"""The vectorised metadata filter (ragkit.retrieve.MetadataColumns) against the loop it replaces:
for random records and random filters of every shape `matches` takes, the mask passes exactly
the records `matches` passes (and raises where the loop raises)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragkit.retrieve import MetadataColumns, VectorIndex, matches

FIELDS = ("region", "year", "effective_date")  # few fields and values: they collide often

scalars = st.sampled_from([None, True, False, 0, 1, -1, "eu", "us", "", "2021-01-01",
                           "2023-06-30", "2024-12-31", 0.0, -0.0, 1.0, 2.5, math.nan])
values = st.one_of(scalars, scalars, scalars,
                   st.lists(st.sampled_from(["a", "b", 1]), max_size=2),
                   st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 1), max_size=2))
records = st.lists(st.dictionaries(st.sampled_from(FIELDS), values, max_size=3), max_size=30)

# per-field predicates: date ranges, type tests, ones that raise on some values
PREDICATES = {
    "date_from_2023": lambda d: isinstance(d, str) and d >= "2023-01-01",
    "date_range": lambda d: d is not None and "2021-06-01" <= str(d) <= "2024-01-01",
    "is_none": lambda v: v is None,
    "negative_zero": lambda v: isinstance(v, float) and math.copysign(1, v) < 0,
    "is_bool": lambda v: isinstance(v, bool),
    "plus_one_positive": lambda v: v + 1 > 0,  # TypeError on str, None, lists
    "len_under_2": lambda v: len(v) < 2,       # TypeError on numbers, None
}
wants = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.lists(scalars, max_size=3).map(tuple),
    st.sets(st.sampled_from(["eu", "us", None, 1, True, 2.5]), max_size=3),
    st.sampled_from(sorted(PREDICATES)).map(PREDICATES.get),
    st.lists(st.sampled_from(["a", "b", 1]), max_size=2),  # an unhashable value: equality
)
wheres = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(FIELDS), wants, max_size=3),
    st.sampled_from([lambda m: len(m) >= 2, lambda m: m.get("region") in ("eu", None)]),
)


def _loop(recs, where):
    return np.array([matches(m, where) for m in recs], bool).reshape(-1)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=records, where=wheres)
@example(recs=[{"year": 0.0}, {"year": -0.0}, {"year": 0}, {"year": False}],  # equal, unalike
         where={"year": PREDICATES["negative_zero"]})
@example(recs=[{"year": 0.0}, {"year": -0.0}, {"year": 0}, {"year": False}],
         where={"year": PREDICATES["is_bool"]})
@example(recs=[{"tags": {"x": 1, "y": 0}}, {"tags": {"y": 0, "x": 1}}, {"tags": None}, {}],
         where={"tags": lambda d: d is not None and next(iter(d)) == "x"})
def test_mask_equals_the_loop_over_matches(recs, where):
    try:
        expected = _loop(recs, where)
    except TypeError:
        with pytest.raises(TypeError):
            MetadataColumns(recs).mask(where)
        return
    got = MetadataColumns(recs).mask(where)
    assert got.dtype == bool and got.tolist() == expected.tolist()
    # and the same records through VectorIndex (exact search's pre-filter)
    if recs:
        ix = VectorIndex(np.eye(len(recs), 4, dtype=np.float32), recs, use_gpu=False)
        assert ix.allowed(where).tolist() == np.flatnonzero(expected).tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(records, min_size=1, max_size=4), where=wheres)
def test_mask_equals_the_loop_over_records_added_in_parts(parts, where):
    # the columns keep codes and their index between filters; extend must renew them
    cols, recs = MetadataColumns(), []
    for part in parts:
        cols.extend(part)
        recs += part
        try:
            expected = _loop(recs, where)
        except TypeError:
            with pytest.raises(TypeError):
                cols.mask(where)
            continue
        assert cols.mask(where).tolist() == expected.tolist()


def test_a_condition_sees_only_the_rows_the_ones_before_it_passed():
    # `matches` stops at the first failing condition: "plus one" never meets a str here
    recs = [{"region": "eu", "year": 2021}, {"region": "us", "year": "unknown"}]
    where = {"region": "eu", "year": PREDICATES["plus_one_positive"]}
    assert MetadataColumns(recs).mask(where).tolist() == [True, False]


def test_filtered_search_matches_the_loop_on_a_larger_index():
    rng = np.random.default_rng(0)
    n = 5000
    x = rng.normal(size=(n, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    recs = [{"region": ("eu", "us", "global")[i % 3], "effective_date": f"202{i % 5}-01-01",
             "doc_id": f"d{i // 10}"} for i in range(n)]
    ix = VectorIndex(x, recs, use_gpu=False)
    where = {"region": ["eu", "global"], "effective_date": PREDICATES["date_from_2023"]}
    keep = np.flatnonzero(_loop(recs, where))
    scores, ids = ix.search(x[:3], 10, where=where)
    # the exact answer: the 10 best among the allowed rows
    best = keep[np.argsort(-(x[:3] @ x[keep].T), axis=1)[:, :10]]
    assert ids.tolist() == best.tolist()


def test_filter_speed_bench_passes_the_same_rows_both_ways(capsys):
    from ragkit.tools import bench_filter

    table = bench_filter.run(3000, repeats=1)
    assert [r["filter"] for r in table] == list(bench_filter.filters(3000))
    assert all(r["same"] for r in table) and all(r["rows"] > 0 for r in table)
    assert "loop ms/q" in capsys.readouterr().out


def test_filter_speed_bench_refuses_a_size_below_one_in_one_line(capsys):
    from ragkit.tools import bench_filter

    with pytest.raises(SystemExit) as e:
        bench_filter.main(["--n", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--n: must be at least 1, got 0" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args, needle", [
    (["--n", "2147483648000"], "--n: must be at most 100000000"),
    (["--repeats", "9" * 5000], "--repeats: must be at most 100, got a number of 5000 digits"),
])
def test_filter_speed_bench_refuses_sizes_past_its_maximum(capsys, args, needle):
    """A size past the stated maximum is a usage error, not an attempt to build a trillion
    records (issue 36)."""
    from ragkit.tools import bench_filter

    with pytest.raises(SystemExit) as e:
        bench_filter.main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and needle in err and "Traceback" not in err


def test_filter_speed_bench_reads_thousands_separators():
    import argparse

    from ragkit.tools import bench_filter

    p = argparse.ArgumentParser()
    bench_filter.add_arguments(p)
    assert p.parse_args(["--n", "1,000,000", "--repeats", "1_0"]).n == 1_000_000
