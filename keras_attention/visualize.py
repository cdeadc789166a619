"""Attention heatmaps and training curves, rendered off-screen with Agg.

Figures are built with matplotlib's object-oriented API on an explicit Agg
canvas (`matplotlib.backends.backend_agg.FigureCanvasAgg`): no window is
ever opened, `pyplot` is not used, and the global backend of the
caller (an interactive session, a notebook) is left untouched. Each
function returns the `matplotlib.figure.Figure` and
optionally saves it as a PNG.
"""

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from keras_attention.files import write_atomically


def _new_figure(figsize):
    figure = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save_png(figure, path):
    """Writes `figure` to `path` atomically (temporary file, then rename).

    Parent folders are created; on failure the temporary file is removed,
    so no half-written PNG is left behind and an existing file at `path`
    is kept.
    """
    write_atomically(path, lambda file: figure.savefig(file, format="png"))


def _to_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    try:
        from keras import ops

        return np.asarray(ops.convert_to_numpy(x))
    except Exception:
        return np.asarray(x)


def _tokens(name, tokens):
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(
            f"Argument `{name}` must be a list of tokens. Received: {name}={tokens!r}"
        )
    tokens = [str(token) for token in tokens]
    if not tokens:
        raise ValueError(f"Argument `{name}` must not be empty. Received: {name}=[]")
    return tokens


def plot_attention(weights, source_tokens, target_tokens, path=None, title=None,
                   xlabel="source", ylabel="target"):
    """Plots an attention matrix as a heatmap of target over source tokens.

    Rows are the target tokens (y axis, first token at the top), columns
    the source tokens (x axis, labels rotated); the colour scale is fixed to
    [0, 1], with a colorbar.

    When `weights` is larger than the token lists (padded batches, a
    `max_length` longer than the output), it is trimmed to its top-left
    `(len(target_tokens), len(source_tokens))` block; it cannot be smaller.

    Args:
        weights: float array or tensor `(T, S)`, e.g. one row of
            `generate(..., return_attention=True).attention`, or `(H, T, S)`
            per-head weights, averaged over the heads.
        source_tokens: `S` source tokens (labels of the columns).
        target_tokens: `T` target tokens (labels of the rows).
        path: optional PNG path; parent folders are created and the file is
            written atomically.
        title: optional figure title.
        xlabel, ylabel: the axis titles.

    Returns:
        the `matplotlib.figure.Figure`, sized for its labels (long tokens or
        sentences widen it).

    Example:

    >>> import numpy as np
    >>> from keras_attention.visualize import plot_attention
    >>> figure = plot_attention(np.full((2, 3), 1 / 3), ["a", "b", "c"], ["x", "y"])
    >>> [t.get_text() for t in figure.axes[0].get_xticklabels()]
    ['a', 'b', 'c']
    >>> [t.get_text() for t in figure.axes[0].get_yticklabels()]
    ['x', 'y']
    """
    source_tokens = _tokens("source_tokens", source_tokens)
    target_tokens = _tokens("target_tokens", target_tokens)
    values = _to_numpy(weights).astype("float32")
    if values.ndim == 3:
        values = values.mean(axis=0)
    if values.ndim != 2:
        raise ValueError(
            "`weights` must have shape (target_len, source_len) or "
            f"(num_heads, target_len, source_len). Received: shape {values.shape}"
        )
    rows, columns = len(target_tokens), len(source_tokens)
    if values.shape[0] < rows or values.shape[1] < columns:
        raise ValueError(
            "`weights` must have at least len(target_tokens) rows and "
            "len(source_tokens) columns. Received: weights shape "
            f"{values.shape[-2:]}, len(target_tokens)={rows}, "
            f"len(source_tokens)={columns}"
        )
    values = values[:rows, :columns]

    # Room for the labels: about 0.08 inch per character of the longest one.
    row_labels = 0.08 * max(len(token) for token in target_tokens)
    column_labels = 0.08 * max(len(token) for token in source_tokens)
    figure = _new_figure((max(3.0, 0.5 * columns + 1.5 + row_labels),
                          max(2.5, 0.4 * rows + 1.2 + column_labels)))
    axes = figure.add_subplot()
    image = axes.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(columns), labels=source_tokens, rotation=90)
    axes.set_yticks(range(rows), labels=target_tokens)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title is not None:
        axes.set_title(str(title))
    figure.colorbar(image, ax=axes)
    if path is not None:
        _save_png(figure, path)
    return figure


def _history_dict(history):
    logs = getattr(history, "history", history)
    if not isinstance(logs, dict):
        raise TypeError(
            "Argument `history` must be a `keras.callbacks.History` or its "
            f"`.history` dict. Received: history={history!r}"
        )
    if not logs:
        raise ValueError("Argument `history` holds no metrics. Received: history={}")
    return logs


def plot_history(history, path=None, metrics=None):
    """Plots training curves, one subplot per metric.

    Each subplot pairs a training metric with its `val_` counterpart (e.g.
    `loss` and `val_loss`); a validation-only metric such as `val_bleu`
    from `keras_attention.metrics.GenerationMetricsCallback` gets a subplot
    of its own. Epochs are counted from 1; a series recorded only on some
    epochs (`fit(validation_freq=k)`, `GenerationMetricsCallback(every=k)`)
    is plotted against its own count of values, as `History` does not keep
    the epoch numbers.

    Args:
        history: a `keras.callbacks.History` (what `fit` returns) or its
            `.history` dict of name -> list of values.
        path: optional PNG path; parent folders are created and the file is
            written atomically.
        metrics: optional list of metric names to plot, in order (with or
            without the `val_` prefix); by default every metric, in the
            order of `history`.

    Returns:
        the `matplotlib.figure.Figure`, with one axes per metric.

    Example:

    >>> from keras_attention.visualize import plot_history
    >>> figure = plot_history({"loss": [1.0, 0.5], "val_loss": [1.1, 0.7],
    ...                        "val_bleu": [10.0, 20.0]})
    >>> [axes.get_title() for axes in figure.axes]
    ['loss', 'bleu']
    """
    logs = _history_dict(history)
    groups = {}
    for key in logs:
        name = key[4:] if key.startswith("val_") else key
        groups.setdefault(name, []).append(key)
    if metrics is None:
        names = list(groups)
    else:
        if isinstance(metrics, str):
            metrics = [metrics]
        names = []
        for metric in metrics:
            name = metric[4:] if metric.startswith("val_") else metric
            if name not in groups:
                raise ValueError(
                    f"Metric {metric!r} is not in `history`; available: "
                    f"{sorted(groups)}. Received: metrics={list(metrics)!r}"
                )
            if name not in names:
                names.append(name)
        if not names:
            raise ValueError("Argument `metrics` must not be empty. Received: metrics=[]")

    columns = min(len(names), 3)
    rows = math.ceil(len(names) / columns)
    figure = _new_figure((4.0 * columns, 3.0 * rows))
    for index, name in enumerate(names):
        axes = figure.add_subplot(rows, columns, index + 1)
        for key in sorted(groups[name], key=lambda k: k.startswith("val_")):
            values = np.asarray(logs[key], dtype="float64").reshape(-1)
            epochs = np.arange(1, len(values) + 1)
            axes.plot(epochs, values, marker="o", markersize=3, label=key)
        axes.set_title(name)
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.legend()
    if path is not None:
        _save_png(figure, path)
    return figure


__all__ = [
    "plot_attention",
    "plot_history",
]
