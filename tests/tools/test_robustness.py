"""Every chunker on every bad input: correct chunks, or a clear error naming file and line."""

import pytest

from ragkit.config import get_settings
from ragkit.tools.robustness import bad_inputs, default_chunkers, fuzz, run_input, uses_model

BIG_LINE_MB = get_settings().big_line_mb  # the script uses 10
CHUNKERS = default_chunkers()
INPUTS = {b.name: b for b in bad_inputs(BIG_LINE_MB)}
SMALL = {b.name: b for b in bad_inputs(0.05)}
EXPECTED_ERRORS = {"not_utf8", "front_matter_wrong_types", "front_matter_not_mapping", "empty",
                   *(b.name for b in INPUTS.values() if b.expect == "error")}


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


@pytest.mark.long
@pytest.mark.parametrize("chunker_name", sorted(CHUNKERS))
def test_random_fuzz(chunker_name):
    chunker = CHUNKERS[chunker_name]
    tried, failures = fuzz(chunker, examples=100 if uses_model(chunker) else 300, seed=7)
    assert failures == [] and tried > 0


@pytest.fixture(scope="module")
def million():
    from ragkit.embed import LateEmbedder
    from ragkit.tools.robustness import million_token_text
    from ragkit.types import Document

    late = LateEmbedder(cache=False)
    doc = Document("million", million_token_text(1_000_000))
    return late, doc, late.tokenize(doc.text)


# one chunk per page makes one chunk of a document without pages, by design (and says so)
@pytest.mark.parametrize("chunker_name", sorted(n for n, c in CHUNKERS.items()
                                                if not uses_model(c) and n != "pages"))
def test_a_million_token_document_maps_onto_late_chunking_windows(chunker_name, million):
    from ragkit.tools.robustness import late_input

    late, doc, tokens = million
    assert len(tokens) >= 1_000_000
    got = late_input(CHUNKERS[chunker_name], doc, late, tokens)
    # the document needs thousands of windows; every chunk got its own token range
    assert got["tokens"] == len(tokens) and got["windows"] > 2000 and got["chunks"] > 1000


def test_late_input_catches_a_chunker_that_loses_text(million):
    from ragkit.tools.robustness import late_input
    from ragkit.types import Chunk

    late, doc, tokens = million

    class DropsTheEnd:
        def chunk(self, d):
            return [Chunk.make(d, 0, len(d.text) // 2, "broken")]

    with pytest.raises(ValueError, match="lost"):
        late_input(DropsTheEnd(), doc, late, tokens)


@pytest.mark.parametrize("area", ["folders", "golden files", "CLI", "caches", "caps",
                                  "concurrency", "environment", "output paths",
                                  "golden evidence", "unicode forms", "numeric limits",
                                  "reader data"])
def test_robustness_area_quick(area, tmp_path):
    """The suite's areas beyond single documents (`ragkit robustness` runs them all
    at full size): every case passes."""
    from ragkit.tools.robustness import run_areas

    [got] = run_areas(tmp_path, CHUNKERS, quick=True, only=(area,))
    assert got.tried > 0 and got.failures == []


def test_robustness_main_prints_tried_and_failed_per_area(capsys, tmp_path):
    from ragkit.tools.robustness import main

    assert main(["--areas", "golden files,caches", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "golden files" in out and "caches" in out and "total:" in out and ", 0 failed" in out


def test_a_recorded_run_becomes_the_readme_reliability_table(tmp_path, monkeypatch):
    """`ragkit robustness --record` (make fuzz) writes per-area counts; the README's reliability
    table is generated from them, between its own markers, leaving the rest alone."""
    import json

    from ragkit.config import get_settings
    from ragkit.tools import readme
    from ragkit.tools.robustness import main

    assert main(["--areas", "caches", "--quick", "--record"]) == 0
    folder = get_settings().results_dir
    run = json.loads((folder / "robustness.json").read_text())
    [caches] = run["areas"]
    assert caches["area"] == "caches" and caches["tried"] > 0 and caches["failed"] == 0
    assert caches["checks"].startswith("Caches:")
    table = readme.reliability_table(folder)
    assert f"| caches | {caches['checks']} | {caches['tried']:,} | {caches['tried']:,} | none |" \
        in table and "0 failed" in table and "--quick" in table
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{readme.RELIABILITY[0]}\nstale table\n{readme.RELIABILITY[1]}\nrest\n"
                    f"{readme.START}\n{readme.END}\n")
    monkeypatch.setattr(readme, "generated", lambda: "results")
    monkeypatch.setattr(readme, "reliability_table", lambda: table)
    assert readme.update_readme(page)
    text = page.read_text()
    assert text.startswith("intro\n") and "stale table" not in text and table in text
    assert "rest\n" in text and "results" in text
