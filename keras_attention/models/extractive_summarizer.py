"""An extractive summarizer: which sentence of a document to keep."""

import keras
import numpy as np
from keras import ops

from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.token_and_position_embedding import TokenAndPositionEmbedding
from keras_attention.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_attention.validation import check_positive_int


def extractive_summarizer(
    vocabulary_size,
    *,
    max_sentences=16,
    max_length=512,
    num_layers=2,
    num_sentence_layers=1,
    hidden_dim=128,
    num_heads=4,
    intermediate_dim=256,
    dropout=0.1,
    pad_token_id=0,
    name="extractive_summarizer",
):
    """Scores each sentence of a document; the summary is the best one.

    ```
    h     = Encoder(E[tokens] + P)                     (B, T, dim)  over the whole document
    m_s   = mean of h over sentence s's tokens         (B, S, dim)
    v_s   = LayerNorm(m_s + MHA(m_s, h, mask: sentence s's tokens))
    u     = SentenceEncoder(v + P_sentence)            (B, S, dim)  attention over sentences
    logit = w . u_s                                    (B, S), padding sentences: -1e9
    ```

    The tokens attend over the whole document (so a sentence is read in its
    context); each sentence vector is an attention pooling of its own tokens,
    queried by their mean (the multi-head attention's masked rows are the
    padding sentences: zeros, never NaN); the sentence encoder sees the
    sentences' order through a learned position embedding (where in an
    abstract a summary sentence tends to be). Trained with cross-entropy
    against the oracle sentence (`data.oracle_sentence_indices`), as
    SummaRuNNer and BertSum are with one sentence to keep.

    Args:
        vocabulary_size: positive int.
        max_sentences: positive int, `S`, sentences scored per document
            (`data.encode_sentence_documents` keeps at most as many).
        max_length: positive int, the longest document in tokens.
        num_layers: positive int, Transformer blocks over tokens.
        num_sentence_layers: positive int, Transformer blocks over sentences.
        hidden_dim, num_heads, intermediate_dim: the blocks' sizes
            (`num_heads` divides `hidden_dim`).
        dropout: float in [0, 1).
        pad_token_id: int.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"token_ids": (B, T), "sentence_ids":
        (B, T)}` (int32, as `data.encode_sentence_documents` makes them) and
        output `(B, S)` float32 sentence logits.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import extractive_summarizer
    >>> model = extractive_summarizer(30, max_sentences=4, hidden_dim=8, num_heads=2,
    ...                               intermediate_dim=16, num_layers=1)
    >>> logits = model({"token_ids": np.array([[5, 6, 7, 8, 0]]),
    ...                 "sentence_ids": np.array([[1, 1, 2, 2, 0]])})
    >>> tuple(logits.shape), bool(logits[0, 2] < -1e8)
    ((1, 4), True)
    """
    for argument, value in (("vocabulary_size", vocabulary_size),
                            ("max_sentences", max_sentences), ("max_length", max_length),
                            ("num_layers", num_layers),
                            ("num_sentence_layers", num_sentence_layers),
                            ("hidden_dim", hidden_dim), ("num_heads", num_heads),
                            ("intermediate_dim", intermediate_dim)):
        check_positive_int(argument, value)
    if hidden_dim % num_heads:
        raise ValueError(f"Argument `num_heads` must divide `hidden_dim`. "
                         f"Received: num_heads={num_heads}, hidden_dim={hidden_dim}")
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    sentence_ids = keras.Input((None,), dtype="int32", name="sentence_ids")
    token_mask = ops.not_equal(token_ids, pad_token_id)  # (B, T)
    states = TokenAndPositionEmbedding(vocabulary_size, hidden_dim, "sinusoidal", max_length,
                                       pad_token_id, name="token_embedding")(token_ids)
    states = keras.layers.Dropout(dropout, name="token_dropout")(states)
    for i in range(num_layers):
        states = TransformerEncoderBlock(intermediate_dim, num_heads, dropout=dropout,
                                         name=f"token_block_{i}")(states, x_mask=token_mask)

    # (B, S, T): True where token t belongs to sentence s (ids 1..S; 0 = padding).
    membership = ops.transpose(ops.one_hot(sentence_ids, max_sentences + 1)[..., 1:], (0, 2, 1))
    sentence_mask = ops.any(ops.not_equal(membership, 0), axis=-1)  # (B, S)
    counts = ops.sum(membership, axis=-1, keepdims=True)  # (B, S, 1)
    means = ops.einsum("bst,btd->bsd", ops.cast(membership, states.dtype), states)
    means = means / ops.cast(ops.maximum(counts, 1), states.dtype)
    pooled = MultiHeadAttention(num_heads, hidden_dim // num_heads, dropout=dropout,
                                name="sentence_pooling")(
        means, states, attention_mask=ops.not_equal(membership, 0))
    sentences = keras.layers.LayerNormalization(name="sentence_norm")(means + pooled)
    order = ops.cumsum(ops.ones_like(sentence_mask, dtype="int32"), axis=-1) - 1  # (B, S)
    sentences = sentences + keras.layers.Embedding(
        max_sentences, hidden_dim, name="sentence_position")(order)
    sentences = keras.layers.Dropout(dropout, name="sentence_dropout")(sentences)
    for i in range(num_sentence_layers):
        sentences = TransformerEncoderBlock(intermediate_dim, num_heads, dropout=dropout,
                                            name=f"sentence_block_{i}")(
            sentences, x_mask=sentence_mask)
    logits = keras.layers.Dense(1, name="sentence_score")(sentences)[..., 0]
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    logits = ops.where(sentence_mask, logits, -1e9)
    return keras.Model({"token_ids": token_ids, "sentence_ids": sentence_ids}, logits,
                       name=name)


def chosen_sentences(logits, sentences):
    """The sentence of the highest logit of each document.

    Args:
        logits: `(N, S)` array, an `extractive_summarizer`'s output.
        sentences: list of `N` lists of a document's kept sentences (as
            `data.encode_sentence_documents` returns them).

    Returns:
        list of `N` str.
    """
    return [kept[int(i)] for kept, i in zip(sentences, np.argmax(logits, axis=-1))]
