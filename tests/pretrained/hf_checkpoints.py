"""Tiny random `transformers` checkpoints saved with `save_pretrained`, and
their reference outputs, for the converter tests.

`transformers` and torch are test-only dependencies (the `test` extra).
"""

import numpy as np
import torch
import transformers

# The reason of `slow_on("jax", reason=LOGITS_ON_TENSORFLOW)`.
LOGITS_ON_TENSORFLOW = (
    "a converted model's outputs and logits against transformers' are compared eagerly on "
    "TensorFlow (on JAX every op would compile); on JAX every family's compiled greedy and beam "
    "tokens equal transformers' generate, and each layer's outputs TensorFlow's "
    "(tests/layers/cross_backend_test.py)")

FAMILIES = {
    "marian": (transformers.MarianConfig, transformers.MarianMTModel),
    "bart": (transformers.BartConfig, transformers.BartForConditionalGeneration),
    "mbart": (transformers.MBartConfig, transformers.MBartForConditionalGeneration),
    "t5": (transformers.T5Config, transformers.T5ForConditionalGeneration),
    "mt5": (transformers.MT5Config, transformers.MT5ForConditionalGeneration),
    "pegasus": (transformers.PegasusConfig, transformers.PegasusForConditionalGeneration),
    "m2m_100": (transformers.M2M100Config, transformers.M2M100ForConditionalGeneration),
}
#: The families of T5's layout, and those that save a fixed sinusoidal table.
T5_LAYOUT = ("t5", "mt5")
SINUSOIDAL = ("marian", "pegasus")
VOCAB = 40


def ids(family):
    """`(pad, end, decoder start)` of a tiny checkpoint: Marian's pad id is
    the last id and starts the decoder; BART's decoder starts with its end."""
    if family == "marian":
        return VOCAB - 1, 0, VOCAB - 1
    if family in T5_LAYOUT + ("pegasus",):
        return 0, 1, 0
    return 1, 2, 2


def save_checkpoint(folder, family, generation=None, seed=0, zero_pad_row=False, **options):
    """A random tiny `family` model saved in `folder` with a generation
    config (`generation` overrides); returns the torch model (eval mode).
    Its encoder and decoder differ, as deep-encoder / shallow-decoder
    serving models do: 2 encoder layers of 2 heads and FFN 32, 1 decoder
    layer of 4 heads and FFN 24 (T5: 2 + 1 layers, its heads and FFN
    shared), d=16. `zero_pad_row`: the token table's pad row is zeros, as
    in OPUS-MT's Marian checkpoints (whose decoder starts from a zero
    embedding, which CTranslate2 assumes)."""
    pad, end, start = ids(family)
    arguments = dict(
        vocab_size=VOCAB, d_model=16, encoder_layers=2, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=4, encoder_ffn_dim=32,
        decoder_ffn_dim=24, max_position_embeddings=64, pad_token_id=pad, eos_token_id=end,
        bos_token_id=0, decoder_start_token_id=start, forced_eos_token_id=None,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    )
    if family in T5_LAYOUT:
        arguments = dict(
            vocab_size=VOCAB, d_model=16, d_kv=8, num_heads=2, d_ff=32, num_layers=2,
            num_decoder_layers=1, relative_attention_num_buckets=8,
            relative_attention_max_distance=16, dropout_rate=0.0, pad_token_id=pad,
            eos_token_id=end, decoder_start_token_id=start,
        )
    arguments.update(options)
    config = FAMILIES[family][0](**arguments)
    torch.manual_seed(seed)
    model = FAMILIES[family][1](config).eval()
    # Random values everywhere (norms and biases too, which would hide a
    # swapped weight at their ones and zeros), but small enough inside the
    # blocks that the tokens depend on the source rather than repeating one id.
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if family in SINUSOIDAL and "embed_positions" in name:
                continue  # Marian's and Pegasus's fixed sinusoidal tables
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name and name.endswith("weight"):
                parameter.copy_(1.0 + 0.2 * noise)
            elif "embed" in name or "shared" in name or "lm_head" in name:
                parameter.copy_(noise)
            else:
                parameter.copy_(0.3 * noise)
        if zero_pad_row:
            model.get_input_embeddings().weight[model.config.pad_token_id] = 0.0
    model.generation_config = transformers.GenerationConfig(**{
        "decoder_start_token_id": start, "eos_token_id": end, "pad_token_id": pad,
        "bos_token_id": None if family in T5_LAYOUT else 0, "max_length": 12, "num_beams": 1,
        "do_sample": False,
        **(generation or {}),
    })
    model.save_pretrained(folder)
    return model


def source_ids(family):
    """Two source rows, the second padded."""
    pad, end, _ = ids(family)
    return np.array([[5, 6, 7, 8, 9, 10, end], [11, 12, 13, end, pad, pad, pad]], "int32")


def reference_outputs(model, source, target, pad):
    """`transformers`' encoder outputs `(B, S, D)` and logits `(B, T, V)`
    with padding masks on both sides."""
    with torch.no_grad():
        out = model(input_ids=torch.as_tensor(source),
                    attention_mask=torch.as_tensor(source != pad),
                    decoder_input_ids=torch.as_tensor(target),
                    decoder_attention_mask=torch.as_tensor(target != pad))
    return out.encoder_last_hidden_state.numpy(), out.logits.numpy()


def reference_generate(model, source, pad):
    """`transformers`' `generate` with the saved generation config, without
    the decoder start token (our `generate` leaves it out)."""
    with torch.no_grad():
        tokens = model.generate(input_ids=torch.as_tensor(source),
                                attention_mask=torch.as_tensor(source != pad))
    return tokens.numpy()[:, 1:]


def labels(family):
    """Two target rows as `transformers` labels: each ends with the end
    token, the second padded with -100 (ignored by its loss)."""
    _, end, _ = ids(family)
    return np.array([[3, 4, 5, 6, 7, end], [8, 9, end, -100, -100, -100]], "int64")


def reference_training_outputs(model, source, labels, pad):
    """`transformers`' teacher-forced logits `(B, T, V)` and loss of
    `model(input_ids, attention_mask, labels=labels)`: it shifts `labels`
    right with `decoder_start_token_id` and masks nothing in the decoder."""
    with torch.no_grad():
        out = model(input_ids=torch.as_tensor(source),
                    attention_mask=torch.as_tensor(source != pad),
                    labels=torch.as_tensor(labels))
    return out.logits.numpy(), float(out.loss)


def teacher_forcing_inputs(labels, start, pad):
    """Our decoder input `[start] + target[:-1]` and targets of `labels`
    (-100 as `pad`)."""
    target = np.where(labels == -100, pad, labels).astype("int32")
    decoder = np.concatenate([np.full((len(target), 1), start, "int32"), target[:, :-1]], 1)
    return decoder, target


def converted_on_first_use(tmp_path_factory, configurations):
    """`name -> (torch model, our model, info)`: the seed-0 checkpoint of
    `configurations[name]` (`(family, save_checkpoint options)`) and its
    conversion (`load_pretrained`), made the first time a test asks for it
    and kept for the caller's fixture scope, for the tests that only read
    them."""
    from keras_attention.pretrained import load_pretrained

    made = {}

    def get(name):
        if name not in made:
            family, options = configurations[name]
            folder = tmp_path_factory.mktemp(name)
            reference = save_checkpoint(folder, family, **options)
            made[name] = (reference, *load_pretrained(folder))
        return made[name]

    return get
