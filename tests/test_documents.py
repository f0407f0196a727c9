import pytest

from ragkit.text import DocumentError, load_corpus, load_document, parse_markdown

SAMPLE = """# Refund Policy\r
\r
Intro paragraph\r
over two lines.\r

## Refund eligibility by tier

| Tier | Refund window | Fee |
|------|---------------|-----|
| Gold | 14 days | 0% |
| Silver | 7 days | 5% |

- level 1
  - level 2
    - level 3
- another

```python
# this is a comment, not a heading
def f():
    return 1
```

<details>
<summary>More</summary>
Hidden text.
</details>

> quoted text

---

[ref]: https://example.com/refunds
Setext heading
==============
"""


def kinds(blocks):
    return [b.kind for b in blocks]


def test_every_block_is_its_exact_span():
    blocks = parse_markdown(SAMPLE)
    for b in blocks:
        assert SAMPLE[b.start:b.end] == b.text
        assert b.text == b.text.strip() and b.text


def test_block_kinds_and_levels():
    blocks = parse_markdown(SAMPLE)
    assert kinds(blocks) == ["heading", "paragraph", "heading", "table", "list", "code", "html",
                             "quote", "rule", "paragraph", "heading"]
    assert blocks[0].level == 1 and blocks[2].level == 2
    assert blocks[4].level == 3  # nested three deep
    assert blocks[10].meta["title"] == "Setext heading"


def test_fenced_hash_lines_are_code_not_headings():
    code = [b for b in parse_markdown(SAMPLE) if b.kind == "code"][0]
    assert "# this is a comment" in code.text and code.meta["info"] == "python"


def test_table_rows_and_list_items_have_spans():
    blocks = parse_markdown(SAMPLE)
    table = blocks[3]
    rows = [SAMPLE[s:e] for s, e in table.meta["rows"]]
    assert rows[0].startswith("| Tier") and rows[1].startswith("| Gold") and len(rows) == 3
    items = [SAMPLE[s:e] for s, e in blocks[4].meta["items"]]
    assert items[0].startswith("- level 1") and "level 3" in items[0] and items[1] == "- another"


def test_unparsed_text_is_kept_not_dropped():
    blocks = parse_markdown(SAMPLE)
    ref = [b for b in blocks if b.meta.get("unparsed")]
    assert ref and "[ref]: https://example.com/refunds" in ref[0].text


def test_no_non_whitespace_character_is_lost():
    blocks = parse_markdown(SAMPLE)
    covered = set()
    for b in blocks:
        covered.update(range(b.start, b.end))
    lost = [i for i, ch in enumerate(SAMPLE) if not ch.isspace() and i not in covered]
    assert lost == []


def test_front_matter_becomes_metadata(tmp_path):
    p = tmp_path / "fees.md"
    p.write_text("---\ndoc_id: fees-2024\neffective_date: 2024-03-01\nregion: eu\n---\n"
                 "# Fees\n\nBody.\n", encoding="utf-8")
    doc = load_document(p)
    assert doc.id == "fees-2024"
    assert doc.metadata["effective_date"] == "2024-03-01" and doc.metadata["region"] == "eu"
    assert doc.text == "# Fees\n\nBody.\n"
    assert doc.where(doc.text.index("Body")) == f"{p}:8"  # 5 front-matter lines


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"---\ntitle: x\n---\n   \n", "empty"),
    (b"# Title\n\ncaf\xe9 is not utf-8\n", "not valid UTF-8"),
    (b"---\ntitle: [unclosed\n---\nbody\n", "front matter is not valid YAML"),
    (b"---\n- a\n- b\n---\nbody\n", "must be a mapping"),
    (b"---\ntitle: x\nbody without closing\n", "never closed"),
    (b"---\ndoc_id: 42\n---\nbody\n", "doc_id must be a non-empty string"),
])
def test_bad_input_gets_a_clear_error_naming_the_file(tmp_path, content, message):
    p = tmp_path / "bad.md"
    p.write_bytes(content)
    with pytest.raises(DocumentError, match=message) as e:
        load_document(p)
    assert str(e.value).startswith(f"{p}:")


def test_non_utf8_error_names_the_line(tmp_path):
    p = tmp_path / "bad.md"
    p.write_bytes(b"line one\nline two\nline \xff three\n")
    with pytest.raises(DocumentError, match=r"bad.md:3: not valid UTF-8"):
        load_document(p)


def test_corpus_reports_every_bad_file(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\ntext\n", encoding="utf-8")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    (tmp_path / "latin.md").write_bytes(b"caf\xe9\n")
    with pytest.raises(DocumentError) as e:
        load_corpus(tmp_path)
    assert "empty.md" in str(e.value) and "latin.md" in str(e.value)
    corpus = load_corpus(tmp_path, strict=False)
    assert [d.id for d in corpus.documents] == ["good"] and len(corpus.errors) == 2


def test_crlf_offsets_are_into_the_original_text():
    text = "# A\r\n\r\npara one\r\nline two\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n"
    blocks = parse_markdown(text)
    assert [b.text for b in blocks] == ["# A", "para one\r\nline two",
                                        "| a | b |\r\n|---|---|\r\n| 1 | 2 |"]


@pytest.mark.parametrize("front, message", [
    ("region: [eu, us]\n", r"bad.md:3: front matter field 'region' must be a string"),
    ("effective_date: yesterday\n", r"bad.md:3: effective_date must be a date"),
    ("superseded_by: {a: 1}\n", r"bad.md:3: front matter field 'superseded_by'"),
])
def test_front_matter_with_wrong_types_names_the_line(tmp_path, front, message):
    p = tmp_path / "bad.md"
    p.write_text(f"---\ntitle: ok\n{front}---\nbody\n", encoding="utf-8")
    with pytest.raises(DocumentError, match=message):
        load_document(p)


# --------------------------------------------------------------------- issue 19: folders, text

import os  # noqa: E402
from pathlib import Path  # noqa: E402

from ragkit.text import walk_files  # noqa: E402
from ragkit.text.documents import data_lines  # noqa: E402

GOOD = b"---\ntitle: Good\n---\n# Good\n\nGold pays 2%.\n"


@pytest.mark.parametrize("front, line", [
    ("effective_date: 2024-02-30\n", 2),  # unquoted: YAML's own date, a day that does not exist
    ("effective_date: '2024-02-30'\n", 2),  # quoted
    ('effective_date: "2023-02-29"\n', 2),
    ("title: x\neffective_date: 2024-13-01\n", 3),
])
def test_impossible_dates_are_a_clear_error_quoted_or_not(tmp_path, front, line):
    p = tmp_path / "bad.md"
    p.write_text(f"---\n{front}---\nbody\n", encoding="utf-8")
    with pytest.raises(DocumentError, match="not a valid date") as e:
        load_document(p)
    assert str(e.value).startswith(f"{p}:{line}:")


def test_a_bad_date_skips_one_file_not_the_folder(tmp_path):
    (tmp_path / "good.md").write_bytes(GOOD)
    (tmp_path / "bad.md").write_bytes(b"---\neffective_date: 2024-02-30\n---\nbody\n")
    corpus = load_corpus(tmp_path, strict=False)
    assert [d.id for d in corpus.documents] == ["good"]
    assert len(corpus.errors) == 1 and "bad.md:2: " in corpus.errors[0]


@pytest.mark.parametrize("sidecar, docs, needle", [
    (b"path,title\nx.py,caf\xe9\n", {"good", "x"}, "metadata.csv:2: not valid UTF-8"),
    (b"path,doc_type,effective_date\nx.py,code,2024-02-30\n", {"good"}, "not a valid date"),
    (b"path,doc_type,effective_date\nx.py\n", {"good"}, "1 fields, but the header has 3"),
    (b"file,title\nx.py,X\n", {"good", "x"}, "no 'path' column"),
])
def test_a_broken_sidecar_is_reported_and_the_folder_still_loads(tmp_path, sidecar, docs,
                                                                 needle):
    (tmp_path / "good.md").write_bytes(GOOD)
    (tmp_path / "x.py").write_bytes(b"x = 1\n")
    (tmp_path / "metadata.csv").write_bytes(sidecar)
    corpus = load_corpus(tmp_path, strict=False)
    assert {d.id for d in corpus.documents} == docs
    assert len(corpus.errors) == 1 and needle in corpus.errors[0]


def test_a_sidecar_saved_with_a_byte_order_mark_keeps_its_path_column(tmp_path):
    (tmp_path / "x.py").write_bytes(b"x = 1\n")
    (tmp_path / "metadata.csv").write_bytes(b"\xef\xbb\xbfpath,doc_type\nx.py,code\n")
    corpus = load_corpus(tmp_path, strict=False)
    assert corpus.errors == [] and corpus.documents[0].metadata["doc_type"] == "code"


def test_unreadable_files_and_folders_are_skipped_and_listed(tmp_path, monkeypatch):
    (tmp_path / "good.md").write_bytes(GOOD)
    (tmp_path / "locked.md").write_bytes(GOOD.replace(b"Good", b"Locked"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inside.md").write_bytes(b"# Inside\n")
    real_read, real_scandir = Path.read_bytes, os.scandir

    def read_bytes(self):  # root ignores permission bits: fail the read as chmod 000 would
        if self.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    def scandir(path="."):
        if Path(path).name == "sub":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(os, "scandir", scandir)
    corpus = load_corpus(tmp_path, strict=False)
    assert [d.id for d in corpus.documents] == ["good"]
    assert len(corpus.errors) == 2
    assert any("locked.md:1: cannot be read (Permission denied)" in e for e in corpus.errors)
    assert any("sub:1: folder cannot be read" in e for e in corpus.errors)


def test_dangling_and_looping_links_are_listed(tmp_path):
    (tmp_path / "good.md").write_bytes(GOOD)
    os.symlink("nowhere.md", tmp_path / "dangling.md")
    os.symlink("self.md", tmp_path / "self.md")
    (tmp_path / "sub").mkdir()
    os.symlink("..", tmp_path / "sub" / "up")
    os.symlink("good.md", tmp_path / "alias.md")
    files, problems = walk_files(tmp_path)
    assert sorted(p.name for p in files) == ["alias.md", "good.md"]
    text = "\n".join(problems)
    assert len(problems) == 3 and "dangling" in text and "loops" in text and "a loop" in text
    corpus = load_corpus(tmp_path, strict=False)
    assert {d.id for d in corpus.documents} == {"good"}  # a link to a file: read once
    assert [s.path for s in corpus.skipped] == [str(tmp_path / "alias.md")]
    assert len(corpus.errors) == 3


@pytest.mark.parametrize("data, needle", [
    ("# Fees\n\nGold pays 2%.\n".encode("utf-16-le"), "UTF-16"),
    ("# Fees\n\nGold pays 2%.\n".encode("utf-16-be"), "UTF-16"),
    (b"# Fees\n\n" + b"\x00" * 500, "binary content"),
    (b"\x00\x00\x00\x01binary", "binary content"),
])
def test_utf16_without_bom_and_nul_filled_files_are_not_text(tmp_path, data, needle):
    p = tmp_path / "x.md"
    p.write_bytes(data)
    with pytest.raises(DocumentError, match=needle):
        load_document(p)


def test_utf16_with_a_bom_is_read(tmp_path):
    p = tmp_path / "x.md"
    p.write_bytes("# Fees\n\nGold pays 2%.\n".encode("utf-16"))
    assert load_document(p).text == "# Fees\n\nGold pays 2%.\n"


def test_cr_only_line_endings(tmp_path):
    raw = "---\rdoc_id: cr\rregion: eu\r---\r# Fees\r\rGold pays 2%.\rSilver 3%.\r\rBronze.\r"
    p = tmp_path / "cr.md"
    p.write_bytes(raw.encode())
    doc = load_document(p)
    assert doc.id == "cr" and doc.metadata["region"] == "eu"
    body = raw[raw.index("# Fees"):]
    assert len(doc.text) == len(body) and doc.text == body.replace("\r", "\n")
    assert [b.kind for b in parse_markdown(doc.text)] == ["heading", "paragraph", "paragraph"]
    assert doc.where(doc.text.index("Bronze")) == f"{p}:10"


def test_data_lines_split_on_newline_only():
    assert data_lines('{"a": "x\u2028y"}\r\n{"b": "\u0085"}\n') == [
        '{"a": "x\u2028y"}', '{"b": "\u0085"}', ""]
    assert data_lines("a\rb\r") == ["a", "b", ""]


# --------------------------------------------------------------- what a folder load leaves out
# (issue 36: every file skipped is counted and named; hidden and backup files are excluded
# unless asked for; a file reached through links is one document)


def _skipped(corpus, kind):
    return sorted(s.path for s in corpus.skipped if s.kind == kind)


def test_a_readme_is_skipped_but_counted_and_named(tmp_path):
    (tmp_path / "good.md").write_bytes(GOOD)
    (tmp_path / "README.md").write_bytes(b"# About these notes\n\nNot a document.\n")
    corpus = load_corpus(tmp_path, strict=False)
    assert [d.id for d in corpus.documents] == ["good"] and corpus.errors == []
    assert _skipped(corpus, "readme") == [str(tmp_path / "README.md")]
    assert any("README.md" in line for line in corpus.summary())


def _checkpointed(tmp_path):
    (tmp_path / "a.md").write_bytes(b"---\ndoc_id: a\n---\n# A\n\nnew text\n")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.md").write_bytes(
        b"---\ndoc_id: a\n---\n# A\n\nstale text\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD.md").write_bytes(b"# head\n\nref\n")
    (tmp_path / ".git" / "notes.txt").write_bytes(b"notes\n")
    (tmp_path / ".hidden.md").write_bytes(b"# Hidden\n\ntext\n")
    for name in ("b.md.bak", "b.md~", "b.md.orig", "#b.md#"):
        (tmp_path / name).write_bytes(b"# B\n\nbackup\n")


def test_hidden_folders_and_backup_files_are_excluded_and_counted(tmp_path):
    _checkpointed(tmp_path)
    corpus = load_corpus(tmp_path, strict=False)
    # the stale checkpoint copy no longer wins doc_id 'a'; .git is not indexed
    assert [(d.id, Path(d.path).name) for d in corpus.documents] == [("a", "a.md")]
    assert corpus.errors == [] and corpus.ignored == []
    assert sum(s.files for s in corpus.skipped if s.kind == "hidden") == 4
    assert sum(s.files for s in corpus.skipped if s.kind == "backup") == 4
    text = "\n".join(corpus.summary())
    assert "8 hidden/backup file(s) excluded" in text
    assert ".ipynb_checkpoints" in text and ".git" in text and "b.md~" in text


def test_include_hidden_reads_hidden_and_backup_files(tmp_path):
    _checkpointed(tmp_path)
    corpus = load_corpus(tmp_path, strict=False, include_hidden=True)
    ids = {d.id for d in corpus.documents}
    assert {"a", "HEAD", "notes", ".hidden"} <= ids
    assert not [s for s in corpus.skipped if s.kind in ("hidden", "backup")]


def test_symlinked_copies_of_a_file_are_one_document_and_named(tmp_path):
    (tmp_path / "a.md").write_bytes(b"# A\n\ntext\n")
    os.symlink("a.md", tmp_path / "link1.md")
    os.symlink("a.md", tmp_path / "0link.md")  # sorts before the real file
    os.link(tmp_path / "a.md", tmp_path / "hard.md")
    corpus = load_corpus(tmp_path, strict=False)
    assert [(d.id, Path(d.path).name) for d in corpus.documents] == [("a", "a.md")]
    assert corpus.errors == []
    assert [Path(p).name for p in _skipped(corpus, "duplicate")] == [
        "0link.md", "hard.md", "link1.md"]
    assert "3 duplicate(s) of files already read" in "\n".join(corpus.summary())


def test_a_linked_folder_is_read_once_from_its_real_path(tmp_path):
    (tmp_path / "zreal").mkdir()
    (tmp_path / "zreal" / "x.md").write_bytes(b"# X\n\ntext\n")
    os.symlink("zreal", tmp_path / "alias")  # walked first by name, but it is the copy
    corpus = load_corpus(tmp_path, strict=False)
    assert [Path(d.path).parent.name for d in corpus.documents] == ["zreal"]
    assert corpus.errors == [] and [Path(p).name for p in _skipped(corpus, "duplicate")] == [
        "alias"]
