"""A question-answering Universal Transformer over story facts (Dehghani et al. 2019)."""

import keras
from keras import ops

from keras_attention.layers.sentence_encoding import SentenceEncoding, sentence_mask
from keras_attention.layers.universal_transformer import UniversalTransformerEncoder
from keras_attention.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_attention")
class FactEncoding(SentenceEncoding):
    """Embeds each sentence (fact) as one vector with a learned positional mask.

    As in the Universal Transformer's bAbI model: each word embedding is
    multiplied element-wise by a learned vector of its position in the
    sentence, and the sentence is their sum:

    ```
    f_i = sqrt(dim) * sum_j M_j * E[x_ij]     M (max_words, dim), initialised to 1
    ```

    (`E` starts at `N(0, 1/dim)`; the `sqrt(dim)` scale, as tensor2tensor's
    embeddings, puts facts on the scale of the sinusoidal signals.)

    Words beyond `max_words` share the last row of `M`; pad tokens add
    nothing. A rank-2 input `(B, J)` (a question) gives `(B, dim)`. (The
    sum, the padding and the masks are those of `SentenceEncoding`, the
    base it shares with `MemoryEncoding`.)

    Masks: for `(B, M, J)` sentences, the output's Keras mask is `(B, M)`,
    True for sentences with at least one non-pad token.

    Args:
        vocab_size: positive int.
        dim: positive int.
        max_words: positive int, rows of the positional mask.
        pad_token_id: int, the padding id.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        token_ids: int tensor, `(B, M, J)` sentences or `(B, J)` one sentence.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_attention.models import FactEncoding
    >>> encode = FactEncoding(vocab_size=20, dim=8)
    >>> facts = encode(np.array([[[4, 5, 6], [7, 8, 0], [0, 0, 0]]]))
    >>> tuple(facts.shape), keras.ops.convert_to_numpy(facts._keras_mask).tolist()
    ((1, 3, 8), [[True, True, False]])
    """

    def __init__(self, vocab_size, dim, max_words=20, pad_token_id=0, **kwargs):
        super().__init__(vocab_size, dim, pad_token_id=pad_token_id, **kwargs)
        self.max_words = check_positive_int("max_words", max_words)

    def build(self, token_ids_shape):
        self.check_token_ids_shape(token_ids_shape)
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.dim),
            initializer=keras.initializers.RandomNormal(stddev=self.dim**-0.5),
        )
        self.position_mask = self.add_weight(
            name="position_mask", shape=(self.max_words, self.dim), initializer="ones",
        )

    def call(self, token_ids):
        token_ids, word_mask = self.ids_and_word_mask(token_ids)
        words = ops.take(ops.cast(self.embeddings, self.compute_dtype), token_ids, axis=0)
        positions = ops.minimum(ops.arange(ops.shape(token_ids)[-1]), self.max_words - 1)
        mask = ops.take(ops.cast(self.position_mask, self.compute_dtype), positions, axis=0)
        total = self.sum_words(words, word_mask, mask)  # (..., dim)
        return total * ops.cast(self.dim**0.5, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "max_words": self.max_words}


def universal_transformer_qa(
    vocabulary_size,
    num_answers,
    *,
    hidden_dim=128,
    num_heads=4,
    intermediate_dim=256,
    max_steps=6,
    act=True,
    ponder_cost=0.01,
    dropout=0.1,
    max_words=20,
    pad_token_id=0,
    name="universal_transformer_qa",
):
    """A question-answering Universal Transformer as a functional model.

    ```
    q   = F(question),  f_i = F(sentence_i)           FactEncoding  (B, dim)
    h   = UT([q, f_n, f_{n-1}, ..., f_1, pad...])      (B, 1 + M, dim), padded facts masked
    logits = W h_0                                     (B, num_answers)
    ```

    The question comes first and the `n` facts of a story follow from the
    most recent to the oldest, so the position signal says how recent a
    fact is (as the memory network's temporal encoding), whatever the
    story's length.
    The encoder is a `UniversalTransformerEncoder` named
    `"universal_transformer"` (its halting steps: `halting_steps(model)`).
    The answer is one class of `num_answers`, read from the question's
    output position.

    Args:
        vocabulary_size: positive int, words.
        num_answers: positive int, answer classes.
        hidden_dim, num_heads, intermediate_dim: the shared block's sizes.
        max_steps, act, ponder_cost: see `UniversalTransformerEncoder`.
        dropout: float in [0, 1), on the inputs and in the block.
        max_words: positive int, rows of the facts' positional mask.
        pad_token_id: int.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"story": (B, M, J), "question": (B,
        J')}` (int32 word ids, as `data.encode_stories` makes them) and
        output `(B, num_answers)` answer logits (float32).

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import universal_transformer_qa
    >>> model = universal_transformer_qa(30, 5, hidden_dim=8, num_heads=2,
    ...                                  intermediate_dim=16, max_steps=2)
    >>> story = np.array([[[4, 5, 6], [7, 8, 0]]])
    >>> tuple(model({"story": story, "question": np.array([[9, 4]])}).shape)
    (1, 5)

    References:
        Dehghani, Gouws, Vinyals, Uszkoreit, Kaiser, "Universal
        Transformers", ICLR 2019, section 3.1 (bAbI).
    """
    check_positive_int("num_answers", num_answers)
    story = keras.Input((None, None), dtype="int32", name="story")
    question = keras.Input((None,), dtype="int32", name="question")
    encode = FactEncoding(vocabulary_size, hidden_dim, max_words=max_words,
                          pad_token_id=pad_token_id, name="fact_encoding")
    facts = encode(story)  # (B, M, dim)
    query = encode(question)  # (B, dim)
    fact_mask = sentence_mask(story, pad_token_id)  # (B, M)
    facts = most_recent_first(facts, fact_mask)
    sequence = ops.concatenate([ops.expand_dims(query, 1), facts], axis=1)  # (B, 1 + M, dim)
    mask = ops.concatenate([ops.ones_like(fact_mask[:, :1]), fact_mask], axis=1)
    sequence = keras.layers.Dropout(dropout, name="input_dropout")(sequence)
    encoder = UniversalTransformerEncoder(
        intermediate_dim=intermediate_dim, num_heads=num_heads, max_steps=max_steps, act=act,
        ponder_cost=ponder_cost, dropout=dropout, name="universal_transformer",
    )
    states, _ = encoder(sequence, x_mask=mask, return_halting=True)
    logits = keras.layers.Dense(num_answers, name="answer")(states[:, 0])
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    return keras.Model({"story": story, "question": question}, logits, name=name)


def most_recent_first(facts, fact_mask):
    """`facts` `(B, M, dim)` with each story's real facts (the first `n` of
    `fact_mask`, stories padded at the end) in reverse order: `f_n .. f_1`,
    then the padding."""
    count = ops.sum(ops.cast(fact_mask, "int32"), axis=-1, keepdims=True)  # (B, 1)
    slots = ops.cumsum(ops.ones_like(fact_mask, dtype="int32"), axis=-1) - 1  # (B, M)
    order = ops.where(slots < count, count - 1 - slots, slots)  # (B, M)
    return ops.take_along_axis(facts, ops.expand_dims(order, -1), axis=1)


def halting_steps(model):
    """The steps the Universal Transformer of a `universal_transformer_qa`
    model took at each position.

    Returns:
        A `keras.Model` with the same inputs whose output is `(B, 1 + M)`:
        the question's steps, then each fact's in reading order (0 on
        padding).
    """
    names = [layer.name for layer in model.layers]
    if not {"universal_transformer", "fact_encoding"} <= set(names):
        raise ValueError(
            "Argument `model` must be built by `universal_transformer_qa` (layers "
            f"`fact_encoding`, `universal_transformer`). Received: model with layers {names}"
        )
    _, steps = model.get_layer("universal_transformer").output  # (B, 1 + M), recent first
    # A layer, not loose ops: a reloaded model's op names would clash with new ones.
    in_order = _ReadingOrder(model.get_layer("fact_encoding").pad_token_id,
                             name=f"{model.name}_reading_order")
    return keras.Model(model.inputs, in_order(steps, model.input["story"]),
                       name=f"{model.name}_halting")


class _ReadingOrder(keras.layers.Layer):
    """Per-position values `(B, 1 + M)` (question, facts most recent first)
    -> the question's, then the facts' in reading order."""

    def __init__(self, pad_token_id, **kwargs):
        super().__init__(**kwargs)
        self.pad_token_id = pad_token_id

    def call(self, values, story):
        fact_mask = sentence_mask(story, self.pad_token_id)  # (B, M)
        facts = most_recent_first(ops.expand_dims(values[:, 1:], -1), fact_mask)[..., 0]
        return ops.concatenate([values[:, :1], facts], axis=1)
