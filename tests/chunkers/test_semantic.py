

def test_using_gives_the_same_chunker_with_another_embedder():
    from ragkit.chunkers import SemanticChunker
    from ragkit.chunkers.semantic import LexicalEmbedder

    a, b = LexicalEmbedder(), LexicalEmbedder()
    base = SemanticChunker(hard=64, embedder=a)
    twin = base.using(b)
    assert twin.label == base.label and twin.embedder_model is b and base.embedder_model is a
