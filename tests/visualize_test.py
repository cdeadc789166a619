import doctest
import os

import keras
import numpy as np
import pytest
from matplotlib.figure import Figure

from keras_attention import visualize
from keras_attention.visualize import plot_attention, plot_history

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SOURCE = ["le", "chat", "est", "assis", "</s>"]
TARGET = ["the", "cat", "sat", "</s>"]


def attention(rows, columns, seed=0):
    x = np.random.default_rng(seed).random((rows, columns)).astype("float32")
    return x / x.sum(-1, keepdims=True)


def labels(axes):
    return (
        [t.get_text() for t in axes.get_xticklabels()],
        [t.get_text() for t in axes.get_yticklabels()],
    )


def test_docstring_examples_run():
    result = doctest.testmod(visualize, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_plot_attention_writes_a_png(tmp_path):
    path = tmp_path / "new" / "folder" / "attention.png"
    figure = plot_attention(attention(4, 5), SOURCE, TARGET, path=path, title="example")
    assert isinstance(figure, Figure)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5_000
    assert os.listdir(path.parent) == ["attention.png"]  # no temporary file left
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as a plain open() gives
    # Overwriting works (os.replace) and accepts a str path.
    plot_attention(attention(4, 5, seed=1), SOURCE, TARGET, path=str(path))
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert os.listdir(path.parent) == ["attention.png"]


def test_plot_attention_axes_tokens_colorbar_and_scale():
    weights = attention(4, 5)
    figure = plot_attention(weights, SOURCE, TARGET, title="example")
    axes, colorbar = figure.axes  # the heatmap and the colorbar
    assert labels(axes) == (SOURCE, TARGET)
    assert all(t.get_rotation() == 90 for t in axes.get_xticklabels())
    assert axes.get_title() == "example"
    image = axes.get_images()[0]
    assert image.get_clim() == (0.0, 1.0)
    np.testing.assert_allclose(image.get_array(), weights)
    assert colorbar is image.colorbar.ax


def test_plot_attention_accepts_tensors_and_averages_heads():
    heads = np.stack([attention(4, 5, seed=s) for s in range(3)])
    figure = plot_attention(keras.ops.convert_to_tensor(heads), SOURCE, TARGET)
    np.testing.assert_allclose(figure.axes[0].get_images()[0].get_array(), heads.mean(0),
                               rtol=1e-6)


def test_plot_attention_trims_padding():
    weights = np.zeros((6, 8), "float32")
    weights[:4, :5] = attention(4, 5)
    figure = plot_attention(weights, SOURCE, TARGET)
    np.testing.assert_allclose(figure.axes[0].get_images()[0].get_array(), weights[:4, :5])
    assert labels(figure.axes[0]) == (SOURCE, TARGET)


def test_plot_attention_shape_errors(tmp_path):
    path = tmp_path / "bad.png"
    with pytest.raises(ValueError, match=r"len\(target_tokens\)=4, len\(source_tokens\)=5"):
        plot_attention(attention(3, 5), SOURCE, TARGET, path=path)
    with pytest.raises(ValueError, match="Received: weights shape"):
        plot_attention(attention(4, 4), SOURCE, TARGET)
    with pytest.raises(ValueError, match=r"Received: shape \(5,\)"):
        plot_attention(np.ones(5), SOURCE, TARGET)
    with pytest.raises(ValueError, match=r"Received: shape \(1, 2, 4, 5\)"):
        plot_attention(np.ones((1, 2, 4, 5)), SOURCE, TARGET)
    with pytest.raises(ValueError, match="source_tokens=\\[\\]"):
        plot_attention(attention(4, 5), [], TARGET)
    with pytest.raises(TypeError, match="list of tokens"):
        plot_attention(attention(4, 5), "le chat", TARGET)
    assert not path.exists()


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    def broken_savefig(self, file, **kwargs):
        file.write(b"\x89PNG partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    with pytest.raises(RuntimeError, match="disk full"):
        plot_attention(attention(4, 5), SOURCE, TARGET, path=tmp_path / "attention.png")
    assert os.listdir(tmp_path) == []


HISTORY = {
    "loss": [1.0, 0.6, 0.4],
    "accuracy": [0.2, 0.5, 0.7],
    "val_loss": [1.1, 0.8, 0.7],
    "val_accuracy": [0.1, 0.4, 0.6],
    "val_bleu": [5.0, 12.0, 20.0],
}


def curves(axes):
    return {line.get_label(): list(line.get_ydata()) for line in axes.get_lines()}


def test_plot_history_one_axes_per_metric_with_val_curves(tmp_path):
    path = tmp_path / "plots" / "history.png"
    figure = plot_history(HISTORY, path=path)
    assert [axes.get_title() for axes in figure.axes] == ["loss", "accuracy", "bleu"]
    loss, accuracy, bleu = figure.axes
    assert curves(loss) == {"loss": HISTORY["loss"], "val_loss": HISTORY["val_loss"]}
    assert curves(accuracy) == {"accuracy": HISTORY["accuracy"],
                                "val_accuracy": HISTORY["val_accuracy"]}
    assert curves(bleu) == {"val_bleu": HISTORY["val_bleu"]}
    assert list(loss.get_lines()[0].get_xdata()) == [1, 2, 3]
    assert loss.get_legend() is not None
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5_000


def test_plot_history_from_a_keras_history_and_metric_selection():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    x = np.ones((8, 2), "float32")
    history = model.fit(x, x[:, :1], validation_data=(x, x[:, :1]), epochs=2, verbose=0)
    figure = plot_history(history)
    assert [axes.get_title() for axes in figure.axes] == ["loss", "mae"]
    assert set(curves(figure.axes[0])) == {"loss", "val_loss"}
    figure = plot_history(history, metrics=["val_mae"])
    assert [axes.get_title() for axes in figure.axes] == ["mae"]
    assert set(curves(figure.axes[0])) == {"mae", "val_mae"}


def test_plot_history_errors():
    with pytest.raises(ValueError, match=r"'bleu' is not in `history`.*Received: metrics"):
        plot_history({"loss": [1.0]}, metrics=["bleu"])
    with pytest.raises(ValueError, match="holds no metrics"):
        plot_history({})
    with pytest.raises(ValueError, match="must not be empty"):
        plot_history({"loss": [1.0]}, metrics=[])
    with pytest.raises(TypeError, match="Received: history=\\[1.0\\]"):
        plot_history([1.0])
