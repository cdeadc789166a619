"""`Seq2SeqModel`: a functional encoder-decoder `keras.Model` with `generate`."""

import collections
import math

import keras
import numpy as np
from keras import ops

from keras_attention import decoding
from keras_attention.decoding.sampling import validate_generation_args
from keras_attention.validation import check_non_negative_int, check_positive_int

GenerationResult = collections.namedtuple(
    "GenerationResult", ["token_ids", "scores", "logits", "attention"]
)
GenerationResult.__doc__ = """What `generate(..., return_scores=True)` (or
`return_logits` / `return_attention`) returns.

token_ids: int `(B, L)`, or `(B, n, L)` with `num_return_sequences=n > 1`.
scores: float32 `(B,)` (or `(B, n)`): the sum of log-probabilities of the
    generated tokens, or the penalised beam score.
logits: float32 `(B, L, V)` step logits (not for beam search), else None.
attention: float32 `(B, L, S)` (or `(B, n, L, S)`) cross-attention of each
    generated token over the source, else None.
"""

SOURCE_BUCKET = 8  # encoder lengths are padded up to a multiple of this


def token_inputs():
    """The two named inputs of every `Seq2SeqModel`: int32 `(B, S)` and `(B, T)`."""
    return {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("encoder_token_ids", "decoder_token_ids")
    }


def _is_tensorflow():
    return keras.config.backend() == "tensorflow"


class Seq2SeqModel(keras.Model):
    """An encoder-decoder model made with the functional API, plus `generate`.

    Inputs are a dict `{"encoder_token_ids": (B, S), "decoder_token_ids":
    (B, T)}` of int tokens; the output is logits `(B, T, vocab)`. The token
    ids (pad, start, end) live in the model's config, so `generate` needs
    none. Subclasses build the graph and implement three hooks used by
    generation:

    - `encode(encoder_token_ids) -> (memory, memory_mask)`, where `memory`
      is a tensor or a nested structure of tensors with batch first,
    - `init_decoder_state(memory, memory_mask, max_length) -> state`,
    - `decode_step(token_ids (N,), index, state) -> (logits (N, V), state,
      attention (N, S))`.

    `generate` encodes once, then runs one `keras.ops.while_loop` over
    fixed-size caches, compiled with XLA (`jit_compile=True`, TensorFlow
    backend) and traced once per shape bucket: batch size, source length
    rounded up to a multiple of 8, and the static generation arguments.
    """

    def __init__(self, *args, pad_token_id=0, start_token_id=1, end_token_id=2, **kwargs):
        super().__init__(*args, **kwargs)
        ids = {
            "pad_token_id": pad_token_id,
            "start_token_id": start_token_id,
            "end_token_id": end_token_id,
        }
        for name, value in ids.items():
            check_non_negative_int(name, value)
        if len(set(ids.values())) != 3:
            raise ValueError(
                "`pad_token_id`, `start_token_id` and `end_token_id` must "
                f"differ. Received: {ids}"
            )
        self.pad_token_id = pad_token_id
        self.start_token_id = start_token_id
        self.end_token_id = end_token_id
        self._generate_functions = {}

    # Hooks implemented by subclasses -----------------------------------
    def encode(self, encoder_token_ids):
        raise NotImplementedError

    def init_decoder_state(self, memory, memory_mask, max_length):
        raise NotImplementedError

    def decode_step(self, token_ids, index, state):
        raise NotImplementedError

    @property
    def target_vocabulary_size(self):
        raise NotImplementedError

    # Generation ----------------------------------------------------------
    def generate(
        self,
        encoder_token_ids,
        max_length,
        strategy="greedy",
        *,
        num_beams=4,
        num_return_sequences=1,
        length_penalty=0.0,
        coverage_penalty=0.0,
        k=50,
        p=0.9,
        temperature=1.0,
        seed=None,
        decoder_prompt=None,
        batch_size=None,
        return_scores=False,
        return_logits=False,
        return_attention=False,
        jit_compile=True,
        verbose=0,
    ):
        """Generates target tokens for a batch of source sequences.

        Args:
            encoder_token_ids: int array `(B, S)`, padded with
                `pad_token_id`.
            max_length: int `L`, the number of target tokens to produce
                (after the start token; includes the prompt).
            strategy: `"greedy"`, `"beam"`, `"top_k"`, `"top_p"` or
                `"sample"`.
            num_beams: beam width `K` (beam search).
            num_return_sequences: `n <= K` best hypotheses per source (beam).
            length_penalty: GNMT `alpha >= 0` (beam).
            coverage_penalty: GNMT `beta >= 0` (beam).
            k: top-k size, in [1, vocab].
            p: top-p mass, in (0, 1].
            temperature: >= 0; 0 means greedy, for every sampling strategy.
            seed: int, the seed of sampling; the same seed gives the same
                tokens (default 0).
            decoder_prompt: optional int array `(B, P)` of target tokens
                forced at the first `P` positions (not scored, cannot end a
                row).
            batch_size: split the sources into batches of this size (the
                last batch is padded, so all batches share one compiled
                function); a progress bar is shown with `verbose=1`.
            return_scores, return_logits, return_attention: return a
                `GenerationResult` instead of the token ids alone.
            jit_compile: compile the loop with XLA (TensorFlow backend).
            verbose: 0 or 1 (a progress bar over batches).

        Returns:
            int32 token ids `(B, L)` (`(B, n, L)` when `n > 1`), padded with
            `pad_token_id` after each row's end token; or a
            `GenerationResult` when any `return_*` flag is set.
        """
        source = np.asarray(encoder_token_ids)
        if source.ndim != 2 or not np.issubdtype(source.dtype, np.integer):
            raise ValueError(
                "`encoder_token_ids` must be an integer array of shape "
                f"(batch, source_len). Received: shape {source.shape}, "
                f"dtype {source.dtype}"
            )
        prompt = None
        if decoder_prompt is not None:
            prompt = np.asarray(decoder_prompt, "int32")
            if prompt.ndim != 2 or prompt.shape[0] != source.shape[0]:
                raise ValueError(
                    "`decoder_prompt` must have shape (batch, prompt_len) "
                    f"with batch={source.shape[0]}. Received: shape {prompt.shape}"
                )
        validate_generation_args(
            strategy=strategy,
            max_length=max_length,
            prompt_length=0 if prompt is None else prompt.shape[1],
            num_beams=num_beams,
            num_return_sequences=num_return_sequences,
            k=k,
            p=p,
            temperature=temperature,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
            vocab_size=self.target_vocabulary_size,
        )
        if return_logits and strategy == "beam":
            raise ValueError(
                "`return_logits` is not available with beam search. "
                "Received: return_logits=True, strategy='beam'"
            )
        seed = 0 if seed is None else check_non_negative_int("seed", seed)
        static = {
            "strategy": strategy,
            "max_length": int(max_length),
            "num_beams": int(num_beams) if strategy == "beam" else 1,
            "num_return_sequences": int(num_return_sequences),
            "k": int(k) if strategy == "top_k" else 0,
            "return_logits": bool(return_logits),
            "return_attention": bool(return_attention),
            "jit_compile": bool(jit_compile),
        }
        dynamic = {
            "temperature": np.float32(temperature),
            "p": np.float32(p),
            "length_penalty": np.float32(length_penalty),
            "coverage_penalty": np.float32(coverage_penalty),
            "seed": np.int32(seed),
        }
        results = [
            self._generate_batch(source[i], None if prompt is None else prompt[i], static, dynamic)
            for i in self._batches(source.shape[0], batch_size, verbose)
        ]
        result = GenerationResult(
            *(
                None if parts[0] is None else np.concatenate(parts, axis=0)
                for parts in zip(*results)
            )
        )
        if num_return_sequences == 1 and strategy == "beam":
            result = result._replace(
                token_ids=result.token_ids[:, 0],
                scores=result.scores[:, 0],
                attention=None if result.attention is None else result.attention[:, 0],
            )
        if return_scores or return_logits or return_attention:
            return result
        return result.token_ids

    @staticmethod
    def _batches(total, batch_size, verbose):
        """Index slices of the batches, with an optional progress bar."""
        if batch_size is None:
            yield slice(0, total)
            return
        batch_size = check_positive_int("batch_size", batch_size)
        steps = math.ceil(total / batch_size)
        bar = keras.utils.Progbar(steps, verbose=verbose, unit_name="batch") if verbose else None
        for step in range(steps):
            yield slice(step * batch_size, min(total, (step + 1) * batch_size))
            if bar is not None:
                bar.update(step + 1)

    def _generate_batch(self, source, prompt, static, dynamic):
        rows, source_length = source.shape
        source = self._bucket_source(source)
        function = self._generate_function(static)
        outputs = function(
            source,
            prompt if prompt is not None else np.zeros((rows, 0), "int32"),
            dynamic["temperature"],
            dynamic["p"],
            dynamic["length_penalty"],
            dynamic["coverage_penalty"],
            dynamic["seed"],
        )
        token_ids, scores, logits, attention = (
            None if x is None else np.asarray(x) for x in outputs
        )
        if attention is not None:
            attention = attention[..., :source_length]
        return token_ids, scores, logits, attention

    def _bucket_source(self, source):
        """Pads the source length up to a multiple of SOURCE_BUCKET (padding
        is masked, so results do not change) to limit retracing."""
        length = max(1, source.shape[1])
        bucketed = math.ceil(length / SOURCE_BUCKET) * SOURCE_BUCKET
        return np.pad(
            source.astype("int32"),
            ((0, 0), (0, bucketed - source.shape[1])),
            constant_values=self.pad_token_id,
        )

    def _generate_function(self, static):
        key = tuple(sorted(static.items()))
        if key not in self._generate_functions:
            def run(source, prompt, temperature, p, length_penalty, coverage_penalty, seed):
                return self._search(
                    source, prompt, static, temperature, p, length_penalty,
                    coverage_penalty, seed,
                )

            if _is_tensorflow():
                import tensorflow as tf

                run = tf.function(run, jit_compile=static["jit_compile"], autograph=False)
            self._generate_functions[key] = run
        return self._generate_functions[key]

    def generate_trace_count(self):
        """How many times the compiled generation functions were traced."""
        return sum(
            getattr(f, "experimental_get_tracing_count", lambda: 0)()
            for f in self._generate_functions.values()
        )

    def _search(self, source, prompt, static, temperature, p, length_penalty,
                coverage_penalty, seed):
        """Encodes once, then runs the decoding loop; returns a SearchOutput.

        `B` and `S` come from the static shape of `source`, or at run time
        where it has none (a serving graph over a `(None,)` batch of strings).
        """
        batch_size, source_length = source.shape
        if batch_size is None or source_length is None:
            batch_size, source_length = ops.shape(source)
        prompt = prompt if prompt.shape[1] > 0 else None
        memory, memory_mask = self.encode(source)
        max_length = static["max_length"]
        ids = dict(start_id=self.start_token_id, end_id=self.end_token_id, pad_id=self.pad_token_id)
        if static["strategy"] == "beam":
            beams = static["num_beams"]
            tile = lambda x: ops.repeat(x, beams, axis=0)  # noqa: E731
            memory = keras.tree.map_structure(tile, memory)
            memory_mask = tile(memory_mask)
            state = self.init_decoder_state(memory, memory_mask, max_length)
            return decoding.beam_search(
                self.decode_step,
                state,
                batch_size=batch_size,
                num_beams=beams,
                max_length=max_length,
                vocab_size=self.target_vocabulary_size,
                length_penalty=length_penalty,
                coverage_penalty=coverage_penalty,
                source_mask=memory_mask,
                source_length=source_length,
                num_return_sequences=static["num_return_sequences"],
                prompt=prompt,
                collect_attention=static["return_attention"],
                **ids,
            )
        state = self.init_decoder_state(memory, memory_mask, max_length)

        def select(logits, index):
            return decoding.select_tokens(
                logits,
                strategy=static["strategy"],
                k=static["k"],
                p=p,
                temperature=temperature,
                seed=seed,
                step=index,
            )

        return decoding.sampling_search(
            self.decode_step,
            state,
            batch_size=batch_size,
            max_length=max_length,
            select=select,
            prompt=prompt,
            vocab_size=self.target_vocabulary_size,
            source_length=source_length,
            collect_logits=static["return_logits"],
            collect_attention=static["return_attention"],
            **ids,
        )

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "pad_token_id": self.pad_token_id,
            "start_token_id": self.start_token_id,
            "end_token_id": self.end_token_id,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
