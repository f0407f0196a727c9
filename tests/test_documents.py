import pytest

from ragkit.documents import DocumentError, load_corpus, load_document, parse_markdown

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
