"""The string-to-string serving graph every SavedModel export shares:
`serving_archive(model, encode, generate, detokenize)` pads a batch of
tokenized lines as `Seq2SeqModel.generate` does and wraps the steps in a
`keras.export.ExportArchive` with TensorFlow Serving's signature
(`SIGNATURE_INPUT` -> `SIGNATURE_OUTPUT`). How each model kind encodes,
generates and detokenizes is its builder's (`savedmodel.ARCHIVES`:
`savedmodel.text_generator_archive`)."""

SIGNATURE_INPUT = "inputs"  # the serving signature's input name
SIGNATURE_OUTPUT = "outputs"  # ... and its output name


def serving_archive(model, encode, generate, detokenize, trackables=()):
    """A `keras.export.ExportArchive` serving strings to strings: the `serve`
    endpoint and the `serving_default` signature (`inputs` -> `outputs`).

    Args:
        model: the `Seq2SeqModel` (its weights are tracked).
        encode: traceable, tf.string `(B,)` -> int32 ragged `(B, None)`, the
            source ids already cut to the run's source length.
        generate: traceable, int32 `(B, S)` -> int `(B, L)`, the generated
            tokens (a `tf.function(jit_compile=True)`).
        detokenize: traceable, `(B, L)` -> tf.string `(B,)`.
        trackables: the TensorFlow resources `encode` and `detokenize` use
            (tokenizer models, lookup tables).

    The ragged sources are padded with `model.pad_token_id` to the longest
    row (at least 1), then to a multiple of `SOURCE_BUCKET`, as
    `Seq2SeqModel.generate` builds them.
    """
    import keras
    import tensorflow as tf

    from keras_attention.models.seq2seq_model import SOURCE_BUCKET

    pad_id = model.pad_token_id

    @tf.function(input_signature=[tf.TensorSpec((None,), tf.string, name=SIGNATURE_INPUT)],
                 autograph=False)
    def serve(inputs):
        ids = encode(inputs)  # ragged (B, <=S)
        width = tf.cast(tf.maximum(tf.reduce_max(ids.row_lengths()), 1), tf.int32)
        source = ids.to_tensor(default_value=pad_id,
                               shape=tf.stack([tf.shape(inputs)[0], width]))
        bucketed = (width + SOURCE_BUCKET - 1) // SOURCE_BUCKET * SOURCE_BUCKET
        source = tf.pad(source, [[0, 0], [0, bucketed - width]], constant_values=pad_id)
        return detokenize(generate(source))

    @tf.function(input_signature=serve.input_signature, autograph=False)
    def serving_default(inputs):
        return {SIGNATURE_OUTPUT: serve(inputs)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    for trackable in trackables:
        archive.track(trackable)
    archive.add_endpoint("serve", serve)
    archive.add_endpoint("serving_default", serving_default)
    return archive


__all__ = ["SIGNATURE_INPUT", "SIGNATURE_OUTPUT", "serving_archive"]
