"""What a model name means (one rule: a local folder, a path, or a hub id), and what identifies a
local model folder in cache keys (every byte of every file)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ragkit

TREE = str(Path(ragkit.__file__).parents[1])  # the ragkit under test

ROOT = Path(__file__).resolve().parents[1]
NOT_CACHED = "ragkit-test/no-such-model"  # a hub id that is in no local Hugging Face cache


# -- the rule --------------------------------------------------------------------------------
@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_an_existing_folder_is_local_however_it_is_spelled(tmp_path, monkeypatch):
    from ragkit.models import locate_model

    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert locate_model("org/name") == "org/name"              # looks like a hub id: a folder
    assert locate_model(str(tmp_path / "org")) == str(tmp_path / "org")
    assert locate_model(tmp_path / "org" / "name") == str(tmp_path / "org" / "name")


@pytest.mark.parametrize("name", ["./missing", "../missing", "~/ragkit-missing-model",
                                  "/no/such/model", "org/name/extra", "org/name/",
                                  "models\\minilm", "my model"])
def test_a_path_that_is_not_there_is_named(name, offline):
    from ragkit.models import ModelNotFound, locate_model

    with pytest.raises(ModelNotFound, match="no such folder") as e:
        locate_model(name, "--embedder")
    assert str(e.value).startswith(f"--embedder {name}:") and "\n" not in str(e.value)


def test_a_file_is_not_a_model_folder(tmp_path):
    from ragkit.models import ModelNotFound, locate_model

    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelNotFound, match="not a folder"):
        locate_model(str(tmp_path / "weights.bin"))


@pytest.mark.parametrize("name", [NOT_CACHED, "ragkit-no-such-model"])
def test_a_hub_id_offline_says_so_and_asks_for_a_folder(name, offline):
    from ragkit.models import ModelNotFound, locate_model

    with pytest.raises(ModelNotFound, match=r"hub is offline \(HF_HUB_OFFLINE=1\).*pass a "
                                            "local folder instead"):
        locate_model(name)
    assert locate_model(name, check_hub=False) == name  # the syntax alone: a hub id


def test_a_hub_id_online_is_passed_on_as_given(monkeypatch):
    from ragkit.models import locate_model

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert locate_model("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"


def test_the_embedder_and_the_reranker_follow_the_rule(offline):
    """`Embedder("org/name")` and `make_reranker(..., "org/name")` are hub ids: offline, a
    clear error, not a path error and not a traceback from deep in the hub client."""
    from ragkit.embed import Embedder
    from ragkit.models import ModelNotFound
    from ragkit.retrieve import make_reranker

    with pytest.raises(ModelNotFound, match="embedder ragkit-test/no-such-model: .*offline"):
        Embedder(NOT_CACHED, cache=False)
    with pytest.raises(ModelNotFound, match="reranker ragkit-test/no-such-model: .*offline"):
        make_reranker(None, NOT_CACHED)


def _ragkit(args, env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGKIT_")}
    return subprocess.run([sys.executable, "-m", "ragkit", *args], capture_output=True,
                          text=True, timeout=300,
                          env={**clean, "PYTHONPATH": TREE, "HF_HUB_OFFLINE": "1", **env})


@pytest.mark.parametrize("how", ["--embedder", "RAGKIT_EMBEDDER"])
def test_the_command_line_says_the_hub_is_offline(how, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# A\n\nsome text\n")
    args, env = ["chunk", str(doc)], {}
    if how == "--embedder":
        args += ["--embedder", NOT_CACHED]
    else:
        env["RAGKIT_EMBEDDER"] = NOT_CACHED
    proc = _ragkit(args, env)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(err) == 1 and f"{how} {NOT_CACHED}" in err[0] and "offline" in err[0], err


# -- the fingerprint of a local folder ----------------------------------------------------------
@pytest.fixture
def model_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * (3 * 4096))  # 3 MiB
    return folder


def _flip_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        old = f.read(1)
        f.seek(offset)
        f.write(bytes([old[0] ^ 0xFF]))


def test_a_byte_changed_past_the_first_mib_changes_the_fingerprint(model_folder):
    """The weights edited in place (same size): the old embedding cache must not be reused."""
    from ragkit.embed import Embedder
    from ragkit.embed.encoders import _fingerprint

    weights = model_folder / "model.safetensors"
    before = _fingerprint(str(model_folder))
    assert Embedder(model_folder, cache=False).fingerprint == before
    size = weights.stat().st_size
    _flip_byte(weights, 2 * 1024 * 1024 + 17)
    assert weights.stat().st_size == size
    assert _fingerprint(str(model_folder)) != before
    assert Embedder(model_folder, cache=False).fingerprint != before


def test_every_file_counts_and_an_identical_copy_keeps_its_key(model_folder, tmp_path):
    from ragkit.embed.encoders import _fingerprint

    before = _fingerprint(str(model_folder))
    copy = tmp_path / "copy"
    shutil.copytree(model_folder, copy, copy_function=shutil.copyfile)  # new mtimes, same bytes
    assert _fingerprint(str(copy)) == before
    (copy / "tokenizer.model").write_bytes(b"new file")  # any file, not only known suffixes
    assert _fingerprint(str(copy)) != before
    (copy / "tokenizer.model").unlink()
    (copy / ".git").mkdir()  # not the model
    (copy / ".git" / "index").write_bytes(b"git")
    assert _fingerprint(str(copy)) == before


def test_a_known_folder_is_not_read_again(model_folder, monkeypatch, tmp_path):
    """Cheap for the bundled model, fingerprinted on every run: hashes are remembered by stat."""
    from ragkit import models
    from ragkit.embed.encoders import _fingerprint

    old = os.stat(model_folder / "model.safetensors").st_mtime_ns - 10**10
    for f in model_folder.rglob("*"):  # written long ago (not inside the racy window)
        if f.is_file():
            os.utime(f, ns=(old, old))
    models._HASHES.clear()
    before = _fingerprint(str(model_folder))
    models._HASHES.clear()  # a new process: the memo file alone
    assert (tmp_path / "cache" / "file_hashes.json").is_file()
    real_open = Path.open

    def guarded(self, *a, **kw):
        if model_folder in self.parents:
            raise AssertionError(f"a remembered file was read again: {self}")
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", guarded)
    assert _fingerprint(str(model_folder)) == before
