"""How the `"converted"` model kind exports (`export.savedmodel.ARCHIVES`):
a converted Hugging Face checkpoint's run folder as a SavedModel serving
strings to strings (`keras-attention export RUN_DIR EXPORT_DIR`).

The graph encodes with the checkpoint's tokenizer as TensorFlow ops
(`graph_tokenizers.graph_tokenizer`), decodes with the run's generation
settings as `keras-attention generate` does (the run's `GenerationConfig`
and its `generate_kwargs`: the Hugging Face beam form, the generation
rules, `decoder_start_token_id`, the suppressed ids) through
`Seq2SeqModel.search` compiled with XLA, and detokenizes as
`batch_decode(..., skip_special_tokens=True)`.

Example:

```
from keras_attention import export

export.export_run("runs/opus-mt-en-de", "exported/opus-mt-en-de")

import tensorflow as tf
import tensorflow_text  # registers the SentencePiece ops
translator = tf.saved_model.load("exported/opus-mt-en-de")
translator.serve(tf.constant(["I am a small frog."]))  # tf.string (1,)
```
"""

from keras_attention.export.serving_graph import serving_archive
from keras_attention.runs.generation import RULE_KEYS

#: The `generate` keyword arguments the exported graph passes to the search
#: itself, beyond `sampler` and `max_length`; the other `RULE_KEYS` of
#: `GenerationConfig.generate_kwargs`'s output are `decoding.GenerationRules`.
_SEARCH_KEYS = ("suppress_token_ids", "decoder_start_token_id")
_RULE_KEYS = tuple(key for key in RULE_KEYS if key not in _SEARCH_KEYS)


def converted_archive(run, strategy, num_beams):
    """The `keras.export.ExportArchive` of a converted run.

    Args:
        run: a `runs.SavedRun` of the `"converted"` kind.
        strategy: `"greedy"`, `"beam"` or None (the checkpoint's).
        num_beams: positive int or None (the checkpoint's).

    Raises:
        ValueError: before any work, for a setting the graph cannot honour
            (naming it: `Received: name=value`), e.g. a beam sampler
            returning several sequences.
    """
    import tensorflow as tf

    from keras_attention.decoding import GenerationRules
    from keras_attention.pretrained.graph_tokenizers import graph_tokenizer
    generation = run.generation.with_search(strategy, num_beams)
    kwargs = generation.generate_kwargs()
    sampler, max_length = kwargs.pop("sampler"), kwargs.pop("max_length")
    unknown = sorted(set(kwargs) - set(_SEARCH_KEYS) - set(_RULE_KEYS))
    if unknown:
        raise ValueError(
            f"Argument `run_dir`: the exported graph cannot honour the generation setting "
            f"{unknown[0]!r}. Received: {unknown[0]}={kwargs[unknown[0]]!r}")
    if getattr(sampler, "num_return_sequences", 1) != 1:
        raise ValueError(
            "Argument `num_beams`: the exported graph answers each line with one line. "
            f"Received: num_return_sequences={sampler.num_return_sequences}")
    rules = GenerationRules(**{key: kwargs[key] for key in _RULE_KEYS if key in kwargs})
    search = {key: kwargs[key] for key in _SEARCH_KEYS if key in kwargs}
    model = run.model
    source_length = generation.source_length
    source_tokens = graph_tokenizer(run.source_tokenizer)
    target_tokens = (source_tokens if run.target_tokenizer is run.source_tokenizer
                     else graph_tokenizer(run.target_tokenizer))
    end_id = model.end_token_id

    def encode(inputs):
        # As `tokenizer.encode_lines` (the checkpoint tokenizer's
        # `truncate`): a row longer than `source_length` keeps its first
        # `source_length - 1` ids and its end token.
        ids = source_tokens.encode(inputs)  # ragged (B, None)
        positions = tf.ragged.range(ids.row_lengths())
        last = tf.expand_dims(ids.row_lengths() - 1, 1)
        keep = (positions < source_length - 1) | (positions == last)
        return tf.ragged.boolean_mask(ids, keep)

    @tf.function(jit_compile=True, autograph=False)
    def generate(source):
        return model.search(source, sampler, max_length, rules=rules, **search).token_ids

    def detokenize(tokens):
        # The tokens before the first end token (the tokenizer drops the
        # special ones).
        tokens = tf.cast(tokens, tf.int32)
        ended = tf.cumsum(tf.cast(tokens == end_id, tf.int32), axis=1, exclusive=True)
        return target_tokens.decode(tf.ragged.boolean_mask(tokens, ended == 0))

    trackables = [source_tokens] + ([] if target_tokens is source_tokens else [target_tokens])
    return serving_archive(model, encode, generate, detokenize, trackables=trackables)


__all__ = ["converted_archive"]
