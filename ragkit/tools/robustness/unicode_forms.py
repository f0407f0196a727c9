"""Unicode forms: one quote or id written in NFC ("é" as one character) and in NFD ("e" and a
combining accent) is one string.

Each case checks one promise: a quote is found whatever the forms of quote and document, with
offsets into the document's text exactly as read (``text[start:end]`` is the stored quote,
chunks still satisfy ``source[start:end] == chunk.text``); question ids that differ only in form
are a duplicate; a doc_id or a file name in NFD names the NFC document; and no file changed.
"""

from __future__ import annotations

import json
import unicodedata
import warnings
from pathlib import Path

from .base import Area, Context, expect
from .golden_evidence import cli_case, unchanged
from .inputs import uses_model


def run(ctx: Context) -> Area:
    return unicode_forms_area(ctx.folder, ctx.chunkers, quick=ctx.quick)


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


MENU = nfc("# Menu du café\n\nCafé crème: 3 € le matin.\n\n"
           "Thé glacé: 2 €, crêpe: 4 €.\n")
FORMS = {"NFC": nfc, "NFD": nfd}


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def unicode_forms_area(folder: Path, chunkers: dict, quick: bool = False) -> Area:
    from ...chunkers.code import CodeParseWarning
    from ...evaluate.benchmarks import load_folder
    from ...evaluate.golden import build_golden, check_questions, read_golden, validate_golden
    from ...types import Document, check_chunks

    area = Area("unicode forms")
    for (dn, dform), (qn, qform) in [(d, q) for d in FORMS.items() for q in FORMS.items()]:
        def located(dform=dform, qform=qform, tag=f"{dn}-{qn}"):
            text = dform(MENU)
            docs = {"menu": Document("menu", text)}
            path = _jsonl(folder / f"quotes-{tag}.jsonl", [
                {"id": "a", "question": "?", "evidence": [{"quote": qform("Café crème: 3 €")}]},
                {"id": "b", "question": "?",
                 "evidence": [{"doc_id": "menu", "quote": qform("Thé  glacé:\n2 €")}]}])
            same = unchanged([path])
            records, problems = check_questions(path, docs)
            expect(problems == [], f"problems: {[str(p) for p in problems]}")
            for r in records:
                [e] = r["evidence"]
                expect(text[e["start"]:e["end"]] == e["quote"], "a span is not its quote")
            expect([nfc(r["evidence"][0]["quote"]) for r in records]
                   == [nfc("Café crème: 3 €"), nfc("Thé glacé: 2 €")],
                   f"wrong text found: {[r['evidence'][0]['quote'] for r in records]}")
            out = folder / f"golden-{tag}.jsonl"
            build_golden(path, docs, out)
            expect(validate_golden(out, docs) == [] and len(read_golden(out, docs)) == 2,
                   "the golden file written does not read back")
            same()
        area.case(f"{qn} quote in an {dn} document", located)

    def ids():
        docs = {nfc("café"): Document(nfc("café"), nfc(MENU))}
        path = _jsonl(folder / "ids.jsonl", [
            {"id": nfc("qé"), "question": "?", "evidence": [{"doc_id": nfd("café"),
                                                            "quote": "Thé"}]},
            {"id": nfd("qé"), "question": "?", "evidence": [{"quote": "crêpe"}]}])
        records, problems = check_questions(path, docs)
        expect([r["id"] for r in records] == [nfc("qé")], f"kept {[r['id'] for r in records]}")
        expect(len(problems) == 1 and problems[0].line == 2
               and "duplicate id" in problems[0].message, f"problems: {problems}")
    area.case("question ids in NFC and NFD are one id; a doc_id in NFD names its document", ids)

    corpus = folder / "nfd-docs"
    corpus.mkdir(exist_ok=True)
    (corpus / (nfd("menu-café") + ".md")).write_text(nfd(MENU), encoding="utf-8")
    questions = _jsonl(folder / "nfd-file.jsonl", [
        {"id": nfd("café-1"), "question": "?", "evidence": [
            {"doc_id": nfc("menu-café"), "quote": nfc("crêpe: 4 €")}]}])

    def file_names():
        same = unchanged([corpus, questions])
        bench, errors, problems = load_folder(corpus, questions)
        expect(errors == [] and problems == [], f"{errors} {problems}")
        [doc] = bench.documents
        expect(doc.id == nfc("menu-café"), f"doc id {doc.id!r} is not NFC")
        expect(doc.text == nfd(MENU), "the document's text was changed")
        [q] = bench.queries
        expect(q.id == nfc("café-1") and doc.text[q.gold[0].start:q.gold[0].end]
               == nfd("crêpe: 4 €"), "the quote is not anchored to the NFD text")
        cheap = [c for c in chunkers.values() if not uses_model(c)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CodeParseWarning)  # a code chunker on prose
            for chunker in (cheap[:3] if quick else cheap):
                check_chunks(doc, chunker.chunk(doc), complete=True)  # source[start:end] == text
        same()
    area.case("a file named in NFD: an NFC id, its NFD text kept, chunks exact", file_names)
    cli_case(area, "ragkit golden: an NFD corpus and NFC quotes",
             ["golden", str(corpus), str(questions), str(folder / "out-nfd.jsonl")], 0,
             "1 questions written", [corpus, questions], stream="stdout")
    return area
