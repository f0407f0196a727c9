"""`ragkit.models.load_llama` on a CPU with AMX: llama.cpp's extra buffer types off, said in a
warning, and llama_cpp's defaults left as they were."""

import pytest

from ragkit import models


def test_amx_flag_is_read_from_the_flags_line_only():
    assert models.cpu_has_amx("flags\t: fpu avx2 amx_int8 amx_tile\n")
    assert not models.cpu_has_amx("model name : amx_int8 lookalike\nflags : avx2 avx512f\n")
    assert not models.cpu_has_amx("")


@pytest.mark.parametrize("amx", [True, False])
def test_load_llama_turns_extra_buffers_off_only_with_amx(amx, monkeypatch, recwarn):
    low = pytest.importorskip("llama_cpp.llama_cpp")
    import llama_cpp

    seen = {}

    class FakeLlama:
        def __init__(self, **kw):
            seen["params"] = low.llama_model_default_params()
            seen["kw"] = kw

    monkeypatch.setattr(models, "cpu_has_amx", lambda: amx)
    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    default = low.llama_model_default_params
    models.load_llama("model.gguf", n_ctx=512, n_threads=1)
    assert low.llama_model_default_params is default  # restored
    assert seen["params"].use_extra_bufts is (not amx)
    assert seen["kw"]["n_ctx"] == 512 and seen["kw"]["verbose"] is False
    assert [w.category for w in recwarn.list if w.category is models.AmxWarning] == (
        [models.AmxWarning] if amx else [])
