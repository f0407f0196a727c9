"""``ragkit docs``: the module list handed to pdoc reaches every public module once."""

import pkgutil
import warnings

import pytest

import ragkit
from ragkit.tools.docs import modules


def test_pdoc_reaches_every_public_module_once():
    extract = pytest.importorskip("pdoc.extract")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reached = extract.walk_specs(modules())
    assert not [str(w.message) for w in caught]
    public = {"ragkit"} | {m.name for m in pkgutil.walk_packages(ragkit.__path__, "ragkit.")
                           if not any(p.startswith("_") for p in m.name.split("."))}
    assert set(reached) == public
    assert len(reached) == len(set(reached))


def test_docs_out_never_removes_a_folder_it_did_not_make(tmp_path):
    """Issue 51, case 1: ``ragkit docs --out mywork`` removed mywork/notes.txt. A folder of the
    reader's (and a file: case 13, NotADirectoryError) is refused; new, empty, marked and
    pre-marker pdoc folders are the ones it may replace."""
    from ragkit.tools.docs import _pdoc_only, build
    from ragkit.tools.outputs import MARKERS, OutputError, check_folder

    mine = tmp_path / "mywork"
    mine.mkdir()
    (mine / "notes.txt").write_text("notes\n")
    with pytest.raises(OutputError, match="ragkit docs did not make"):
        build(mine)
    assert (mine / "notes.txt").read_text() == "notes\n"
    (tmp_path / "FILE").write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        build(tmp_path / "FILE")
    with pytest.raises(OutputError, match="FILE is a file, not a folder"):
        build(tmp_path / "FILE" / "api")
    for name, contents in (("new", None), ("empty", []), ("marked", [MARKERS["docs"], "x.html"]),
                           ("old pdoc", ["index.html", "search.js", "ragkit"])):
        folder = tmp_path / name
        if contents is not None:
            folder.mkdir()
            for entry in contents:
                (folder / entry).write_text("")
        assert check_folder(folder, "--out", "docs", also=_pdoc_only(folder)) == folder
