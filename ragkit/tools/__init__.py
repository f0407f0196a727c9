"""The tools: everything with a command line, kept apart from the library.

The library (`ragkit.text`, `ragkit.chunkers`, ... `ragkit.report`) never imports this package;
the tools import the library. Each module here is reached through the one ``ragkit`` command
(`ragkit.tools.cli`) and also runs as ``python -m ragkit.tools.<name>``:

- `cli` — ``ragkit chunk | eval | show`` on your own documents, and the door to the others;
- `bench` — ``ragkit bench NAME``: Chroma's and Anthropic's baselines re-measured, chunker and
  encoder speed, and (`bench_late`, `bench_context`) late chunking's cost and preamble speed;
- `preambles` — ``ragkit preambles``: fill a committed preamble cache;
- `reproduce` — ``ragkit reproduce``: run the notebooks; `readme` — ``ragkit readme``;
- `robustness` — ``ragkit robustness``: bad inputs and fuzzing, per area;
- `golden` — ``ragkit golden``: quotes to span-anchored gold;
- `docs` — ``ragkit docs`` (``make docs``): the API reference from the docstrings (pdoc).
"""
