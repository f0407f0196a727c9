"""The course map names real modules and real notebooks, and draws."""

import importlib
from pathlib import Path

from ragkit.report import STAGES

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_every_stage_names_a_module_and_existing_notebooks():
    numbers = {p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.py")}
    for st in STAGES:
        importlib.import_module(st.module)
        assert st.notebooks and set(st.notebooks) <= numbers, st
        assert all(f"({n})" in st.change for n in st.notebooks), st  # the text says which does what


def test_pipeline_diagram_draws_a_box_per_stage():
    import matplotlib

    matplotlib.use("Agg")
    from ragkit.report import pipeline_diagram

    fig = pipeline_diagram(STAGES, title="map")
    bold = [t.get_text() for t in fig.axes[0].texts if t.get_fontweight() == "bold"]
    assert bold == [s.name for s in STAGES]
    assert len(fig.axes[0].patches) == len(STAGES)
