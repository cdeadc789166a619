"""The evaluation examples of each recipe's file format (`TextToText.evaluate`,
`keras-attention evaluate`; the functions `keras_attention.runs.registry`
holds). The scores go through `keras_attention.metrics.scores`, with the
metrics each recipe registers."""


def translation_examples(path, limit, run):
    """`(sources, references)` of a TSV file of `source<TAB>target`."""
    from keras_attention import data

    pairs = data.load_sentence_pairs(path, max_pairs=limit)
    return [s for s, _ in pairs], [t for _, t in pairs]


def summarization_examples(path, limit, run):
    """`(documents, lists of summaries)` of a JSONL file."""
    from keras_attention import data

    records = data.load_summaries(path, max_examples=limit)
    return [r["document"] for r in records], [r["summaries"] for r in records]


def question_answering_examples(path, limit, run):
    """`(sources, lists of answers)` of SQuAD-style JSON/JSONL, each source
    made from `context` and `question` by the run's `source_format`."""
    from keras_attention import data
    from keras_attention.runs.layout import RUN_CONFIG_FILE, RunFolderError
    from keras_attention.runs.source_formats import format_source

    if run.source_format == "text":
        raise RunFolderError(
            f"Argument `run_dir` must give question answering a source format naming "
            f"context and question; its {RUN_CONFIG_FILE} has source_format='text'. "
            f"Received: run_dir={run.run_dir!r}"
        )
    records = data.load_squad(path)[:limit]
    sources = [format_source(run.source_format,
                             {"context": r["context"], "story": r["context"],
                              "question": r["question"]}) for r in records]
    return sources, [r["answers"] for r in records]


__all__ = []
