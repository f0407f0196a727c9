"""Every chunker on every bad input: correct chunks, or a clear error naming file and line."""

import os

import pytest

from ragkit.robustness import bad_inputs, default_chunkers, fuzz, run_input, uses_model

BIG_LINE_MB = float(os.environ.get("RAGKIT_BIG_LINE_MB", "1"))  # the script uses 10
CHUNKERS = default_chunkers()
INPUTS = {b.name: b for b in bad_inputs(BIG_LINE_MB)}
SMALL = {b.name: b for b in bad_inputs(0.05)}
EXPECTED_ERRORS = {"not_utf8", "front_matter_wrong_types", "front_matter_not_mapping", "empty"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return tmp_path_factory.mktemp("big"), tmp_path_factory.mktemp("small")


@pytest.mark.parametrize("input_name", sorted(INPUTS))
@pytest.mark.parametrize("chunker_name", sorted(CHUNKERS))
def test_bad_input(chunker_name, input_name, folders):
    chunker = CHUNKERS[chunker_name]
    model = uses_model(chunker)
    bad = (SMALL if model else INPUTS)[input_name]
    outcome = run_input(chunker, bad, folders[1] if model else folders[0])
    expected = "clear error" if input_name in EXPECTED_ERRORS else "ok"
    assert outcome == expected


@pytest.mark.parametrize("chunker_name", sorted(CHUNKERS))
def test_random_fuzz(chunker_name):
    chunker = CHUNKERS[chunker_name]
    tried, failures = fuzz(chunker, examples=100 if uses_model(chunker) else 300, seed=7)
    assert failures == [] and tried > 0
