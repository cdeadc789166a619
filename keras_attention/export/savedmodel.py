"""`export_run`: a saved run as a TensorFlow SavedModel that maps strings to
strings (`keras-attention export RUN_DIR EXPORT_DIR`, the default format).

How each model kind builds its graph is one table, `ARCHIVES`
(`register_archive` adds a kind): a recipe's run here (`recipe_archive`), a
converted checkpoint's in `keras_attention.export.converted`; both serve
through `serving_graph.serving_archive`.
"""

import hashlib
import os

from keras_attention.export.converted import converted_archive
from keras_attention.export.serving_graph import serving_archive
from keras_attention.runs.generation import SEARCH_STRATEGIES  # sampling is not exported


def export_run(run_dir, export_dir, *, strategy=None, num_beams=None):
    """Writes a SavedModel that turns a batch of strings into generated strings.

    The graph does what `keras-attention generate RUN_DIR` does: SentencePiece
    tokenization with the run's `source.spm`, sources cut to the recipe's
    source length, the model's cached generation with the recipe's decoding
    settings (strategy, beams, length and coverage penalties, target length,
    the token ids never generated: `suppress_token_ids`), then the tokens up
    to the end token detokenized with `target.spm`. The generation loop is a
    nested `tf.function(jit_compile=True)`: tokenization runs outside XLA,
    generation inside.

    The export folder is written atomically (a temporary sibling folder
    renamed at the end), so a failure leaves nothing behind.

    Args:
        run_dir: a run folder saved by the translation, summarization or
            question-answering recipe (a `Seq2SeqModel`: transformer, RNN or
            pointer-generator), or by `keras-attention convert` (its
            checkpoint's tokenizer and generation settings; see
            `keras_attention.export.converted`). The run's model kind
            builds the graph (`ARCHIVES`).
        export_dir: where to write the SavedModel; must not exist or be an
            empty folder (and not the working directory or a parent of it).
        strategy: `"greedy"` or `"beam"`; default: the recipe's.
        num_beams: positive int, the beam width; default: the recipe's.

    Returns:
        The export folder, as a `str`. The SavedModel's `serve` function and
        its `serving_default` signature take `inputs`: tf.string `(B,)` and
        return tf.string `(B,)` (the signature names its output `outputs`).

    Raises:
        ValueError: naming the argument, for a backend other than TensorFlow
            (`Received: backend=...`), a missing run folder or file
            (a `keras_attention.runs.RunFolderError` naming the file, also
            for a corrupt one), an unknown recipe, a model without cached generation, an export
            folder that exists and is not empty, or a bad `strategy` or
            `num_beams`.
        OSError: naming `export_dir`, when the SavedModel cannot be written
            (e.g. a full disk); the destination is left as it was.

    Example:

    ```
    export_run("runs/translation", "exported/translation", strategy="beam")

    # Then, in any process with TensorFlow and TensorFlow Text:
    import tensorflow as tf
    import tensorflow_text  # registers the SentencePiece ops
    translator = tf.saved_model.load("exported/translation")
    translator.serve(tf.constant(["March 3, 2021"]))  # tf.string (1,)
    ```
    """
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    from keras_attention import files, runs
    from keras_attention.validation import check_positive_int

    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "Exporting writes a TensorFlow SavedModel and needs the TensorFlow backend: run it "
            "with KERAS_BACKEND=tensorflow (e.g. `KERAS_BACKEND=tensorflow keras-attention "
            f"export ...`). Received: backend={keras.backend.backend()!r}"
        )
    run_dir, export_dir = os.fspath(run_dir), os.fspath(export_dir)
    if not os.path.isdir(run_dir):
        raise ValueError(
            "Argument `run_dir` must be a run folder saved by a recipe. "
            f"Received: run_dir={run_dir!r} (no such folder)"
        )
    if files.is_working_directory_or_parent(export_dir):
        raise ValueError(
            "Argument `export_dir` must not be the working directory or one of its parents. "
            f"Received: export_dir={export_dir!r}"
        )
    if os.path.lexists(export_dir) and (
            not os.path.isdir(export_dir) or os.listdir(export_dir)):
        what = "a file" if not os.path.isdir(export_dir) else "a folder that is not empty"
        raise ValueError(
            "Argument `export_dir` must not exist or be an empty folder. "
            f"Received: export_dir={export_dir!r} ({what})"
        )
    if strategy is not None and strategy not in SEARCH_STRATEGIES:
        raise ValueError(
            f"Argument `strategy` must be one of {', '.join(map(repr, SEARCH_STRATEGIES))} "
            f"or None (the recipe's). Received: strategy={strategy!r}"
        )
    num_beams = check_positive_int("num_beams", num_beams, allow_none=True)
    run = runs.SavedRun(run_dir)
    _check_model(run)
    archive = ARCHIVES[run.kind.name](run, strategy, num_beams)
    _write(archive, export_dir)
    return export_dir


def register_archive(kind, build):
    """Makes the runs of the model kind named `kind`
    (`keras_attention.runs.registry.ModelKind`, with `exports=True`)
    exportable: `build(run, strategy, num_beams)` -> the
    `keras.export.ExportArchive` of a `runs.SavedRun` (a bad setting is a
    `ValueError` raised before any work); returns `build`."""
    if not callable(build):
        raise ValueError(f"Argument `build` must be callable. Received: build={build!r}")
    ARCHIVES[kind] = build
    return build


def recipe_archive(run, strategy, num_beams):
    """How the `"seq2seq"` model kind exports (`ARCHIVES`): the
    `keras.export.ExportArchive` of a recipe's run, its SentencePiece
    `source.spm` / `target.spm` as TensorFlow Text ops, searching as the
    run's `GenerationConfig` with `strategy` and `num_beams` says."""
    generation = run.generation.with_search(strategy, num_beams)
    return _build_archive(run.model, run.source_tokenizer, run.target_tokenizer, generation)


def _write(archive, export_dir):
    """Writes the SavedModel atomically; a write that fails (a full disk:
    TensorFlow's writer raises its own `ResourceExhaustedError`) is an
    `OSError` naming `export_dir`, and nothing is left in its place."""
    import tensorflow as tf

    from keras_attention import files

    try:
        files.write_folder_atomically(export_dir,
                                      lambda folder: archive.write_out(folder, verbose=False))
    except (OSError, tf.errors.OpError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else (
            getattr(error, "message", None) or str(error))
        failure = OSError(
            f"Argument `export_dir`: the SavedModel could not be written ({reason}); nothing "
            f"was left in its place. Received: export_dir={export_dir!r}")
        failure.errno = getattr(error, "errno", None)  # ENOSPC for a full disk
        raise failure from None


def _check_model(run):
    if not run.kind.exports or run.kind.name not in ARCHIVES:
        raise ValueError(
            f"Argument `run_dir` must hold a `Seq2SeqModel` (transformer, RNN or "
            f"pointer-generator) to export; its model is "
            f"{run.kind.description}, which has no cached generation. "
            f"Received: run_dir={run.run_dir!r}"
        )


def _build_archive(model, source_tokenizer, target_tokenizer, generation):
    import tensorflow as tf

    from keras_attention import data

    source_proto, target_proto = _proto(source_tokenizer), _proto(target_tokenizer)
    source_pieces = _sentencepiece(source_proto)
    target_pieces = (
        source_pieces if target_proto == source_proto  # one shared vocabulary
        else _sentencepiece(target_proto)
    )
    special = data.special_token_ids(target_tokenizer)
    source_length = generation.source_length
    search = generation.generate_kwargs()  # max_length, sampler, suppress_token_ids

    @tf.function(jit_compile=True, autograph=False)
    def generate(source):
        # The model's own cached search, as `generate` runs it, on int32
        # `source (B, S)` with `B` and `S` known only at run time: the best
        # hypothesis of each row `(B, L)`, padded after its end token.
        return model.search(source, search["sampler"], search["max_length"],
                            suppress_token_ids=search["suppress_token_ids"]).token_ids

    def encode(inputs):
        # Sources as `tokenizer.encode_lines` builds them with a
        # `data.SentencePieceModel`: cut to `source_length` tokens.
        return source_pieces.tokenize(inputs)[:, :source_length]  # ragged (B, <=S)

    def detokenize(tokens):
        # Keep the tokens before the first end token, without pad or start.
        ended = tf.cumsum(tf.cast(tokens == special["end_token_id"], tf.int32), axis=1)
        keep = (ended == 0) & (tokens != special["pad_token_id"]) & (
            tokens != special["start_token_id"])
        return target_pieces.detokenize(tf.ragged.boolean_mask(tokens, keep))

    return serving_archive(model, encode, generate, detokenize,
                           trackables=[source_pieces, target_pieces])


def _proto(tokenizer):
    """The serialized SentencePiece model of a keras-hub tokenizer (what
    `data.save_tokenizer` writes to `source.spm` / `target.spm`)."""
    proto = tokenizer.proto
    if isinstance(proto, str):  # loaded from a path
        with open(proto, "rb") as f:
            proto = f.read()
    return bytes(proto)


def _sentencepiece(proto):
    """A TensorFlow Text tokenizer over a serialized SentencePiece model.

    Its op is named after the model's hash: within one reloaded SavedModel,
    SentencePiece model resources created under the same op name are one
    resource, so the source and target models would silently share the first
    one loaded (TensorFlow Text 2.21).
    """
    import tensorflow as tf
    import tensorflow_text as tf_text

    name = f"sentencepiece_{hashlib.sha256(proto).hexdigest()[:16]}"
    return tf_text.SentencepieceTokenizer(model=proto, out_type=tf.int32, name=name)


#: `{model kind name: build(run, strategy, num_beams)}`: how each kind exports.
ARCHIVES = {"seq2seq": recipe_archive, "converted": converted_archive}

__all__ = ["ARCHIVES", "export_run", "recipe_archive", "register_archive"]
