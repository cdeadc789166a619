"""
The summarization recipe's extractive summarizer (`--summarizer=extractive`):
pick the sentence of the abstract that is the TLDR.

SciTLDR's TLDRs restate one sentence of the abstract more often than they
invent one: the best single sentence (the extractive oracle) scores about
50 / 30 / 43 ROUGE-1/2/L on the test split, where the first sentence
(lead-1) scores 32 / 13 / 25, because abstracts open with background. So the
summarizer here is a classifier over sentences
(`keras_attention.models.extractive_summarizer`: a Transformer over the
document's tokens, an attention pooling per sentence, a Transformer over
the sentences), trained with cross-entropy on each training document's
oracle sentence. The run folder it saves answers `keras-attention generate`
with the chosen sentence.
"""

import keras
import numpy as np

from keras_attention import data, distribute, metrics, runtime
from keras_attention.models import chosen_sentences, extractive_summarizer
from keras_attention.recipes import checks, skeleton
from keras_attention.runs import registry


def selection_settings(config):
    """How a saved run reads a document, as the run folder records it (`selection`)."""
    return {"max_length": config["max_source_length"], "max_sentences": config["max_sentences"]}


def encode(records, tokenizer, config):
    """`(inputs, kept_sentences, oracle_labels)` of summary records."""
    inputs, kept = data.encode_sentence_documents(
        [record["document"] for record in records], tokenizer, **selection_settings(config))
    labels = data.oracle_sentence_indices(kept, [record["summaries"] for record in records])
    return inputs, kept, labels


def build_model(config, tokenizer):
    return extractive_summarizer(
        tokenizer.vocabulary_size(), max_sentences=config["max_sentences"],
        max_length=config["max_source_length"], num_layers=config["num_layers"],
        num_sentence_layers=config["sentence_layers"], hidden_dim=config["hidden_dim"],
        num_heads=config["num_heads"], intermediate_dim=config["intermediate_dim"],
        dropout=config["dropout"], pad_token_id=data.special_token_ids(tokenizer)["pad_token_id"],
    )


def train(config, splits, strategy, execution, extra_callbacks):
    """The extractive summarizer trained on the training records of `splits`
    (train, validation, test), as a `skeleton.Trained` whose `extra` holds the
    `selection` a saved run reads documents with."""
    train_records, validation, _ = splits
    tokenizer = checks.train_tokenizer(
        [text for record in train_records for text in [record["document"], *record["summaries"]]],
        config["vocabulary_size"],
    )
    (train_x, _, train_y), (val_x, _, val_y) = (
        encode(records, tokenizer, config) for records in (train_records, validation))
    # Where batches must split evenly between devices (data_parallel on JAX),
    # the last batch too.
    fit_train, fit_validation = (
        distribute.trim_to_even_batches(split, strategy)
        for split in ((train_x, train_y), (val_x, val_y)))
    print(f"The oracle sentence is the first in {np.mean(train_y == 0):.0%} of the training "
          f"documents (at most {config['max_sentences']} sentences kept).")
    with strategy.scope():
        with runtime.dtype_policy_scope(execution["dtype_policy"]):
            model = build_model(config, tokenizer)
        model.compile(
            optimizer=keras.optimizers.Adam(config["learning_rate"]),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"], jit_compile=execution["jit_compile"],
        )
        callbacks = []
        if config["backup_dir"]:
            callbacks.append(distribute.backup_and_restore(config["backup_dir"], strategy))
        if config["keep_best_epoch"]:
            callbacks.append(keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=config["epochs"], restore_best_weights=True))
        print(f"Training an extractive summarizer with {model.count_params():,} parameters "
              f"on {strategy.num_replicas_in_sync} replica(s).")
        runtime.build_optimizer_before_fit(model)  # one trace of the train step on TensorFlow
        history = model.fit(*fit_train, validation_data=fit_validation,
                            batch_size=config["batch_size"], epochs=config["epochs"],
                            shuffle=True, verbose=2, callbacks=callbacks + extra_callbacks)
    return skeleton.Trained(model, tokenizer, tokenizer, history,
                            extra={"selection": selection_settings(config)})


def evaluate(trained, splits, config):
    """ROUGE of the chosen sentences on the test split, next to lead-1 and
    the oracle (and the same on the validation split)."""
    _, validation, test = splits
    model, tokenizer = trained.model, trained.source_tokenizer
    (val_x, val_kept, _), (test_x, test_kept, test_y) = (
        encode(records, tokenizer, config) for records in (validation, test))
    print(f"Sentences per document (kept, at most {config['max_sentences']}): mean "
          f"{np.mean([len(k) for k in test_kept]):.1f} on the test split.")
    references = [record["summaries"] for record in test]
    test_logits = model.predict(test_x, batch_size=64, verbose=0)
    summaries = chosen_sentences(test_logits, test_kept)
    val_logits = model.predict(val_x, batch_size=64, verbose=0)

    def rouge(hypotheses, references):  # the recipe's metrics, as `evaluate` scores a run
        return metrics.scores(registry.recipe("summarization").metrics, hypotheses, references)

    scores = {
        "model": rouge(summaries, references),
        "lead_1": rouge([kept[0] for kept in test_kept], references),
        "oracle": rouge([kept[i] for kept, i in zip(test_kept, test_y)], references),
        "oracle_accuracy": float(np.mean(np.argmax(test_logits, axis=-1) == test_y)),
        # The same comparison on the validation documents: a margin that is
        # not an accident of the test split.
        "validation": {
            "model": rouge(chosen_sentences(val_logits, val_kept),
                           [record["summaries"] for record in validation]),
            "lead_1": rouge([kept[0] for kept in val_kept],
                            [record["summaries"] for record in validation]),
        },
        "test_examples": len(test),
    }
    for name in ("model", "lead_1", "oracle"):
        rouge = scores[name]
        print(f"{name:>7}: ROUGE-1 {rouge['rouge1']:.1f}  ROUGE-2 {rouge['rouge2']:.1f}  "
              f"ROUGE-L {rouge['rougeL']:.1f}")
    for name in ("model", "lead_1"):
        rouge = scores["validation"][name]
        print(f"{name:>7} on the validation split: ROUGE-1 {rouge['rouge1']:.1f}  "
              f"ROUGE-2 {rouge['rouge2']:.1f}  ROUGE-L {rouge['rougeL']:.1f}")
    print(f"(rouge-score F1, best reference of {sum(map(len, references))} for {len(test)} "
          f"documents); the oracle sentence chosen for {scores['oracle_accuracy']:.0%}.")
    for record, summary in list(zip(test, summaries))[:3]:
        print(f"\n  document: {record['document'][:200]!r}...\n  summary:  {summary!r}\n"
              f"  reference: {record['summaries'][0]!r}")
    return scores
