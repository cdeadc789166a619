"""End-To-End Memory Network (Sukhbaatar et al. 2015) built from our layers."""

import keras

from keras_attention.layers.memory_encoding import MemoryEncoding
from keras_attention.layers.memory_hop import MemoryHop
from keras_attention.validation import check_positive_int


def memory_network(
    vocabulary_size,
    num_answers,
    *,
    hidden_dim=50,
    num_hops=3,
    max_memories=50,
    position_encoding=True,
    temporal_encoding=True,
    temporal_noise=0.1,
    pad_token_id=0,
    linear_start=False,
    seed=None,
    name="memory_network",
):
    """A question-answering End-To-End Memory Network as a functional model.

    ```
    u_1     = B(question)                                  (B, dim)
    m^k_i   = A^k(sentence_i),  c^k_i = C^k(sentence_i)     (B, M, dim)
    p^k     = softmax_i(u_k . m^k_i)   (padding sentences get exactly 0)
    u_{k+1} = u_k + sum_i p^k_i c^k_i                       k = 1..num_hops
    logits  = W u_{K+1}                                     (B, num_answers)
    ```

    Each hop is a `MemoryHop` (named `hop_1`, `hop_2`, ...): a
    `LuongAttention(score="dot")` read of the memories; every embedding is a
    `MemoryEncoding`
    (position encoding, temporal encoding and its random noise). Weights are
    tied as in the paper's "adjacent" scheme: `A^{k+1} = C^k` and `B = A^1`,
    i.e. `num_hops + 1` encodings. The answer is one class out of
    `num_answers` (multi-word answers such as `"apple,football"` are one
    class each); the output layer is a separate `W`, not `C^K` transposed,
    because answers are classes rather than words.

    Args:
        vocabulary_size: positive int, word (piece) vocabulary size.
        num_answers: positive int, the number of answer classes.
        hidden_dim: positive int, the memory size `d`.
        num_hops: positive int, `K`.
        max_memories: positive int, rows of the temporal encodings (older
            sentences share the last row).
        position_encoding, temporal_encoding: bool, see `MemoryEncoding`.
        temporal_noise: float in [0, 1), the random-noise probability.
        linear_start: bool, start with the hops' softmax removed (the
            paper's LS); train with the `LinearStart` callback, which puts
            the softmax back when the validation loss stops falling.
        pad_token_id: int.
        seed: optional int for initializers and noise.
        name: model name.

    Returns:
        A `keras.Model` with inputs `{"story": (B, M, J), "question": (B,
        J')}` (int32 word ids; stories in reading order, padded at the end)
        and output `(B, num_answers)` answer logits. `hop_attention(model)`
        gives the model of the hops' attention weights.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import memory_network
    >>> model = memory_network(vocabulary_size=30, num_answers=5, hidden_dim=8)
    >>> story = np.array([[[4, 5, 6], [7, 8, 0]]])
    >>> question = np.array([[9, 4]])
    >>> tuple(model({"story": story, "question": question}).shape)
    (1, 5)

    References:
        Sukhbaatar, Szlam, Weston, Fergus, "End-To-End Memory Networks",
        NIPS 2015.
    """
    num_hops = check_positive_int("num_hops", num_hops)
    check_positive_int("num_answers", num_answers)
    story = keras.Input((None, None), dtype="int32", name="story")
    question = keras.Input((None,), dtype="int32", name="question")
    encodings = [
        MemoryEncoding(
            vocabulary_size, hidden_dim, max_memories=max_memories,
            position_encoding=position_encoding, temporal_encoding=temporal_encoding,
            temporal_noise=temporal_noise, pad_token_id=pad_token_id,
            seed=None if seed is None else seed + k, name=f"encoding_{k}",
        )
        for k in range(num_hops + 1)
    ]
    memories = [encoding(story) for encoding in encodings]
    state = encodings[0](question)
    for k in range(num_hops):
        hop = MemoryHop(linear_start=linear_start, name=f"hop_{k + 1}")
        state, _ = hop(state, memories[k + 1], memories[k], return_attention_scores=True)
    logits = keras.layers.Dense(
        num_answers, use_bias=False, name="answer",
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.1, seed=seed),
    )(state)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    return keras.Model({"story": story, "question": question}, logits, name=name)


class LinearStart(keras.callbacks.Callback):
    """Puts the softmax back into a linear-start memory network's hops.

    After each epoch, when `monitor` (default the validation loss) has not
    improved for `patience` epochs, every `MemoryHop` of the model gets
    `softmax_on = 1` (the paper: "when the validation loss stopped
    decreasing, the softmax layers were re-inserted").

    Args:
        monitor: a logged metric, lower is better.
        patience: positive int.
    """

    def __init__(self, monitor="val_loss", patience=1):
        super().__init__()
        self.monitor = monitor
        self.patience = check_positive_int("patience", patience)
        self.best = float("inf")
        self.wait = 0
        self.switched_at = None

    def on_epoch_end(self, epoch, logs=None):
        if self.switched_at is not None or logs is None or self.monitor not in logs:
            return
        value = float(logs[self.monitor])
        if value < self.best:
            self.best, self.wait = value, 0
            return
        self.wait += 1
        if self.wait >= self.patience:
            for layer in self.model.layers:
                if isinstance(layer, MemoryHop):
                    layer.softmax_on.assign(1.0)
            self.switched_at = epoch + 1
            print(f"Epoch {epoch + 1}: linear start ends, softmax re-inserted.")


def hop_attention(model):
    """The attention weights of each hop of a `memory_network` model.

    Returns:
        A `keras.Model` with the same inputs whose output is `(B, K, M)`:
        the weights each hop put on each sentence (0 on padding).
    """
    weights = []
    k = 1
    while any(layer.name == f"hop_{k}" for layer in model.layers):
        _, hop_weights = model.get_layer(f"hop_{k}").output
        weights.append(hop_weights)
        k += 1
    if not weights:
        raise ValueError(
            "Argument `model` must be built by `memory_network` (layers `hop_1`, ...). "
            f"Received: model with layers {[layer.name for layer in model.layers]}"
        )
    stacked = keras.layers.Concatenate(axis=1, name="hop_weights")(weights)
    return keras.Model(model.inputs, stacked, name=f"{model.name}_attention")
