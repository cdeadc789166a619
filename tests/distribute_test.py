"""Training under `tf.distribute`: two replicas give the one-device loss
curve, two worker processes train together, and a killed worker resumes from
`BackupAndRestore` without losing an epoch; the recipes build their models
under the strategy their config names. On JAX, `keras.distribution`'s
`DataParallel` over two CPU devices gives the one-device loss curve too,
with the variables replicated and each batch sharded.

Device layouts and clusters are set before TensorFlow starts (and JAX's
device count, `XLA_FLAGS`, before JAX starts), so each distributed run is a
subprocess (`python -m tests.distribute_test SPEC`) with a timeout: a hung
worker fails the test instead of hanging pytest.
"""

import doctest
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention import distribute
from tests import recipes

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds for one distributed run (about 25 s on 2 busy cores)
# Epochs of the one-device and two-replica loss curves: 8 steps, enough for
# the loss to fall and for a wrongly scaled gradient to show.
PARITY_EPOCHS = 2


# What the subprocesses run -------------------------------------------------


def tiny_model(architecture="transformer", optimizer="adam", jit_compile=False):
    from keras_attention.models import rnn_seq2seq, transformer_seq2seq

    if architecture == "rnn":
        model = rnn_seq2seq(16, embedding_dim=8, units=16)
    else:
        model = transformer_seq2seq(
            16, num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0
        )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=jit_compile,
    )
    return model


def tiny_dataset():
    """4 global batches of 16 ragged reverse-task examples whose two halves
    (the two replicas' shares) have the same lengths: each replica's mean
    over its unpadded tokens then averages to the global batch's mean, so
    two replicas and one device minimise the same loss."""
    from keras_attention.data import make_task

    inputs, labels = make_task("reverse", 32, seed=1)
    halves = [(inputs, labels), keras.tree.map_structure(_relabel, (inputs, labels))]
    batches = [
        keras.tree.map_structure(
            lambda *parts: np.concatenate(parts), *(half_of(h, k) for h in halves)
        )
        for k in range(4)
    ]
    data = keras.tree.map_structure(lambda *parts: np.concatenate(parts), *batches)
    return distribute.shard_by_data(tf.data.Dataset.from_tensor_slices(data).batch(16))


def half_of(data, k):
    return keras.tree.map_structure(lambda a: a[8 * k: 8 * (k + 1)], data)


def _relabel(tokens):
    """Other tokens (3..15 shifted by 5), the same lengths and padding."""
    return np.where(tokens >= 3, 3 + (tokens - 3 + 5) % 13, tokens).astype(tokens.dtype)


class Recorder(keras.callbacks.Callback):
    """Appends `{"epoch", "batch", "loss"}` per step and `{"epoch_end"}` per
    epoch to a JSON-lines file; optionally exits the process (as a crash
    would: no cleanup) when batch `exit_at[1]` of epoch `exit_at[0]` begins."""

    def __init__(self, path, exit_at=None):
        super().__init__()
        self.path, self.exit_at, self.epoch = path, exit_at, None

    def write(self, record):
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.exit_at == [self.epoch, batch]:
            os._exit(17)

    def on_train_batch_end(self, batch, logs=None):
        self.write({"epoch": self.epoch, "batch": batch, "loss": float(logs["loss"])})

    def on_epoch_end(self, epoch, logs=None):
        self.write({"epoch_end": epoch})


def record_batch_sharding(model, shardings):
    """Makes the compiled train step of `model` (JAX) append the sharding of
    its first input (a `jax.sharding.Sharding`) to `shardings` when traced."""
    import jax

    train_step = model.train_step

    def probed_train_step(state, data):
        first = jax.tree_util.tree_leaves(data)[0]
        jax.debug.inspect_array_sharding(first, callback=shardings.append)
        return train_step(state, data)

    model.train_step = probed_train_step


def run_jax_parity(spec):
    """On JAX with two CPU devices: the tiny Transformer trained from the same
    weights on the same global batches on one device, then under
    `get_strategy("data_parallel")`; writes the losses and what the two
    devices held to `spec["dir"]`."""
    import jax

    strategies = {
        "one_device": distribute.get_strategy("default"),
        "data_parallel": distribute.get_strategy("data_parallel"),
    }
    report = {"jax_devices": jax.device_count(),
              "replicas": strategies["data_parallel"].num_replicas_in_sync}
    initial_weights = None
    for name, strategy in strategies.items():
        keras.utils.set_random_seed(0)
        shardings = []
        with strategy.scope():
            report[f"{name}_distribution"] = type(keras.distribution.distribution()).__name__
            model = tiny_model(optimizer=keras.optimizers.SGD(0.5), jit_compile=True)
            if initial_weights is None:
                initial_weights = model.get_weights()
            model.set_weights(initial_weights)  # the same start on both
            record_batch_sharding(model, shardings)
            log = os.path.join(spec["dir"], f"jax_{name}.jsonl")
            model.fit(tiny_dataset(), epochs=PARITY_EPOCHS, verbose=0,
                      callbacks=[Recorder(log)])
        weight = model.trainable_variables[0].value.sharding
        report[name] = {
            "weight_devices": len(weight.device_set),
            "weight_replicated": weight.is_fully_replicated,
            # The first axis of a (16, 8) batch in each device's shard.
            "batch_shards": sorted({s.shard_shape((16, 8))[0] for s in shardings}),
            "batch_devices": sorted({len(s.device_set) for s in shardings}),
        }
    report["distribution_after"] = repr(keras.distribution.distribution())
    report["generated"] = model.generate(
        np.array([[5, 6, 7, 0]], "int32"), max_length=4
    ).tolist()  # generation after the scope, on the replicated variables
    try:
        distribute.check_batch_size(15, strategies["data_parallel"])
    except ValueError as error:
        report["odd_batch_error"] = str(error)
    trimmed = distribute.trim_to_even_batches({"x": np.zeros((5, 3)), "y": np.zeros(5)},
                                              strategies["data_parallel"])
    report["trimmed"] = [len(trimmed["x"]), len(trimmed["y"])]
    try:
        distribute.get_strategy("data_parallel", devices=[])
    except ValueError as error:
        report["no_devices_error"] = str(error)
    recipe = recipes.load_recipe("translation")
    run_dir = os.path.join(spec["dir"], "odd_batch_run")
    try:  # refused before any work: no data, no run folder
        recipe.main(["--preset=quick", "--distribution=data_parallel", "--batch_size=63",
                     f"--output_dir={run_dir}"])
    except ValueError as error:
        report["recipe_odd_batch_error"] = str(error)
    report["odd_batch_run_written"] = os.path.exists(run_dir)
    with open(os.path.join(spec["dir"], "jax_report.json"), "w") as f:
        json.dump(report, f)


def run_spec(spec):
    """Runs one subprocess job described by the dict `spec`."""
    if spec["job"] == "jax_parity":
        run_jax_parity(spec)
        return
    if spec["job"] == "parity":
        # Two logical CPUs: must be set before TensorFlow initialises devices.
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
        strategies = {
            "one_device": distribute.get_strategy("default"),
            "two_replicas": distribute.get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"]),
        }
        for architecture in ("transformer", "rnn"):
            initial_weights = None
            for name, strategy in strategies.items():
                keras.utils.set_random_seed(0)
                with strategy.scope():
                    # Plain SGD: a wrongly scaled gradient would show in the loss.
                    model = tiny_model(architecture, keras.optimizers.SGD(0.5))
                if initial_weights is None:
                    initial_weights = model.get_weights()
                model.set_weights(initial_weights)  # the same start on both
                log = os.path.join(spec["dir"], f"{architecture}_{name}.jsonl")
                model.fit(tiny_dataset(), epochs=PARITY_EPOCHS, verbose=0,
                          callbacks=[Recorder(log)])
        with open(os.path.join(spec["dir"], "replicas"), "w") as f:
            f.write(str(strategies["two_replicas"].num_replicas_in_sync))
        return
    # A worker of a multi-worker cluster (TF_CONFIG is set by the test).
    strategy = distribute.get_strategy("multi_worker")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = tiny_model()
    callbacks = [Recorder(spec["log"], spec.get("exit_at"))]
    if spec.get("backup_dir"):
        callbacks.append(distribute.backup_and_restore(spec["backup_dir"], strategy))
    model.fit(tiny_dataset(), epochs=spec["epochs"], verbose=0, callbacks=callbacks)
    np.save(spec["log"] + ".weights.npy", model.get_weights()[0])
    with open(spec["log"] + ".done", "w") as f:
        f.write(json.dumps({"replicas": strategy.num_replicas_in_sync,
                            "chief": distribute.is_chief(strategy)}))


# Helpers of the tests ------------------------------------------------------


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def start(spec, tmp_path, name, tf_config=None, backend="tensorflow", jax_cpu_devices=None):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT))
    env.pop("TF_CONFIG", None)
    if tf_config:
        env["TF_CONFIG"] = tf_config
    if jax_cpu_devices:  # read when JAX starts: CPU devices to split the host into
        env["XLA_FLAGS"] = (f"{env.get('XLA_FLAGS', '')} "  # after the caller's own flags
                            f"--xla_force_host_platform_device_count={jax_cpu_devices}").strip()
        env["JAX_PLATFORMS"] = "cpu"
    output = open(tmp_path / f"{name}.out", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.distribute_test", json.dumps(spec)],
        cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
    )
    process.output_path = tmp_path / f"{name}.out"
    return process


def tail(process, lines=25):
    text = process.output_path.read_text(errors="replace").splitlines()
    kept = [line for line in text if not line.startswith(("I0000", "W0000"))]
    return "\n".join(kept[-lines:])


def wait_all(processes, timeout=TIMEOUT):
    """Waits for every process; kills them all on timeout or when one fails
    (its peers would wait for it forever). Returns the exit codes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        codes = [p.poll() for p in processes]
        if all(c is not None for c in codes) or any(c not in (None, 0) for c in codes):
            break
        time.sleep(0.2)
    codes = [p.poll() for p in processes]
    for p in processes:
        if p.poll() is None:
            p.kill()
        p.wait()
    return codes


def start_cluster(spec_of, tmp_path, attempt):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    return [
        start(spec_of(i), tmp_path, f"attempt{attempt}_worker{i}",
              tf_config=distribute.tf_config(workers, i))
        for i in range(2)
    ]


def read_log(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def step_losses(records):
    return [r["loss"] for r in records if "loss" in r]


def finished_epochs(records):
    return [r["epoch_end"] for r in records if "epoch_end" in r]


# Tests ---------------------------------------------------------------------


@pytest.mark.large
def test_two_mirrored_replicas_follow_the_one_device_loss_curve(tmp_path):
    process = start({"job": "parity", "dir": str(tmp_path)}, tmp_path, "parity")
    assert wait_all([process]) == [0], tail(process)
    assert (tmp_path / "replicas").read_text() == "2"
    for architecture in ("transformer", "rnn"):
        one = step_losses(read_log(tmp_path / f"{architecture}_one_device.jsonl"))
        two = step_losses(read_log(tmp_path / f"{architecture}_two_replicas.jsonl"))
        assert len(one) == len(two) == 8  # 2 epochs of 4 global batches of 16
        assert one[-1] < 0.97 * one[0], architecture  # it learns
        # The same updates up to float rounding (the gradients are summed in
        # another order).
        np.testing.assert_allclose(two, one, rtol=1e-5, err_msg=architecture)


@pytest.mark.large
def test_jax_data_parallel_on_two_devices_follows_the_one_device_loss_curve(tmp_path):
    process = start({"job": "jax_parity", "dir": str(tmp_path)}, tmp_path, "jax_parity",
                    backend="jax", jax_cpu_devices=2)
    assert wait_all([process]) == [0], tail(process)
    report = json.loads((tmp_path / "jax_report.json").read_text())
    assert report["jax_devices"] == 2 and report["replicas"] == 2
    # keras.distribution is set inside scope() only, and restored after it.
    assert report["data_parallel_distribution"] == "DataParallel"
    assert report["one_device_distribution"] == "NoneType"
    assert report["distribution_after"] == "None"
    # The variables are replicated on both devices; each batch of 16 is split 8 + 8.
    assert report["data_parallel"] == {"weight_devices": 2, "weight_replicated": True,
                                       "batch_shards": [8], "batch_devices": [2]}
    assert report["one_device"] == {"weight_devices": 1, "weight_replicated": True,
                                    "batch_shards": [16], "batch_devices": [1]}
    one = step_losses(read_log(tmp_path / "jax_one_device.jsonl"))
    two = step_losses(read_log(tmp_path / "jax_data_parallel.jsonl"))
    assert len(one) == len(two) == 8  # 2 epochs of 4 global batches of 16
    assert one[-1] < 0.97 * one[0]  # it learns
    # One XLA program over the global batch: the loss is the global mean on
    # both, up to float rounding (2e-7 measured).
    np.testing.assert_allclose(two, one, rtol=1e-5)
    assert np.array(report["generated"]).shape == (1, 4)
    error = report["odd_batch_error"]
    assert error.startswith("Argument `batch_size`") and "Received: batch_size=15" in error
    assert report["trimmed"] == [4, 4]  # NumPy inputs: the last batch splits evenly too
    assert report["no_devices_error"].endswith("Received: devices=[]")
    assert "Received: batch_size=63" in report["recipe_odd_batch_error"]
    assert report["odd_batch_run_written"] is False


@pytest.fixture(scope="module")
def killed_and_resumed_cluster(tmp_path_factory):
    """A two-worker cluster trained twice over the same 4 epochs with
    `BackupAndRestore`: in the first attempt worker 1 dies (exits) as the
    second step of epoch 2 begins (epochs 0 and 1 are backed up on both
    workers), and the second attempt resumes. Returns `dir` (each worker's
    log `attempt{1,2}_worker{i}.jsonl`, with `.done` and `.weights.npy` once
    it finished), `backup_dir`, `codes` (the exit codes of the attempts) and
    `backups_after_the_crash`. One cluster run for the two tests below: its
    workers train one model together, and resume without losing an epoch."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    backup_dir = str(tmp_path / "backup")

    def spec_of(attempt):
        def spec(i):
            return {
                "job": "worker", "log": str(tmp_path / f"attempt{attempt}_worker{i}.jsonl"),
                "epochs": 4, "backup_dir": backup_dir,
                "exit_at": [2, 1] if attempt == 1 and i == 1 else None,
            }

        return spec

    first = start_cluster(spec_of(1), tmp_path, attempt=1)
    codes = wait_all(first)  # worker 0 is left waiting for worker 1: killed
    assert codes[1] == 17, "\n---\n".join(tail(p) for p in first)
    backups_after_the_crash = sorted(os.listdir(backup_dir))
    second = start_cluster(spec_of(2), tmp_path, attempt=2)
    codes = {"first": codes, "second": wait_all(second)}
    assert codes["second"] == [0, 0], "\n---\n".join(tail(p) for p in second)
    return {"dir": tmp_path, "backup_dir": backup_dir, "codes": codes,
            "backups_after_the_crash": backups_after_the_crash}


@pytest.mark.large
def test_two_worker_processes_train_one_model_together(killed_and_resumed_cluster):
    """Both attempts of the killed-and-resumed cluster: the two workers make
    the same steps (one synchronous model) and end with the same weights."""
    tmp_path = killed_and_resumed_cluster["dir"]
    done = [json.loads((tmp_path / f"attempt2_worker{i}.jsonl.done").read_text())
            for i in range(2)]
    assert [d["replicas"] for d in done] == [2, 2]
    assert [d["chief"] for d in done] == [True, False]
    # The steps of epochs 0 and 1 (finished on both before the crash), then
    # those of the resumed epochs 2 and 3.
    losses = [step_losses(read_log(tmp_path / f"attempt1_worker{i}.jsonl"))[:8]
              + step_losses(read_log(tmp_path / f"attempt2_worker{i}.jsonl"))
              for i in range(2)]
    assert len(losses[0]) == 16 and losses[0] == losses[1]  # one synchronous model
    assert losses[0][-1] < 0.9 * losses[0][0]
    weights = [np.load(tmp_path / f"attempt2_worker{i}.jsonl.weights.npy") for i in range(2)]
    np.testing.assert_array_equal(weights[0], weights[1])


@pytest.mark.large
def test_a_killed_worker_resumes_from_backup_and_restore_without_losing_an_epoch(
    killed_and_resumed_cluster
):
    tmp_path = killed_and_resumed_cluster["dir"]
    codes = killed_and_resumed_cluster["codes"]["first"]
    assert codes[0] != 0 and not (tmp_path / "attempt1_worker0.jsonl.done").exists()
    assert killed_and_resumed_cluster["backups_after_the_crash"] == ["worker_0", "worker_1"]
    for i in range(2):
        before = finished_epochs(read_log(tmp_path / f"attempt1_worker{i}.jsonl"))
        after_records = read_log(tmp_path / f"attempt2_worker{i}.jsonl")
        after = finished_epochs(after_records)
        assert before == [0, 1] and after == [2, 3], (i, before, after)
        assert after_records[0]["epoch"] == 2  # the restart begins after the last backup
    # Training completed: each worker removed its backup.
    assert os.listdir(killed_and_resumed_cluster["backup_dir"]) == []


def test_get_strategy_names_and_errors():
    assert distribute.get_strategy().num_replicas_in_sync == 1
    mirrored = distribute.get_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    assert distribute.is_chief(mirrored)
    assert distribute.global_batch_size(8, mirrored) == 8 * mirrored.num_replicas_in_sync
    with pytest.raises(ValueError, match=r"Argument `name` .*Received: name='gpu'"):
        distribute.get_strategy("gpu")
    with pytest.raises(RuntimeError, match="No TPU is reachable"):
        distribute.get_strategy("tpu")
    with pytest.raises(ValueError, match=r"Argument `distribution` .*keras.distribution"
                                         r".*use 'mirrored'.*Received: distribution='data_paral"):
        distribute.get_strategy("data_parallel")  # JAX only
    assert distribute.check_batch_size(7, mirrored) == 7  # tf.distribute splits unevenly
    with pytest.raises(ValueError, match="Received: index=2"):
        distribute.tf_config(["a:1", "b:2"], 2)
    result = doctest.testmod(distribute, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("name", ["translation", "summarization", "question_answering"])
def test_recipes_refuse_keras_distribution_on_tensorflow_before_training(name, tmp_path):
    recipe = recipes.load_recipe(name)
    config = recipe.parse_settings(["--preset=quick", "--distribution=data_parallel",
                                    f"--output_dir={tmp_path / 'run'}"])
    with pytest.raises(ValueError, match=r"^Argument `distribution`.*Received: distribution="):
        recipe.train_and_evaluate(config)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["translation", "summarization"])
def test_recipes_build_and_compile_under_the_strategy_of_their_config(
    name, monkeypatch, tmp_path
):
    recipe = recipes.load_recipe(name)
    assert recipe.recipe_config.get_config()["distribution"] == "default"
    # A run folder of its own: `runs/<recipe>` may hold a user's earlier run (`make demo`).
    config = recipe.parse_settings(["--preset=quick", "--distribution=mirrored",
                                    f"--backup_dir={tmp_path / 'backup'}",
                                    f"--output_dir={tmp_path / 'run'}"])
    assert config["distribution"] == "mirrored"
    assert config["backup_dir"] == str(tmp_path / "backup")

    class Stop(Exception):
        pass

    seen = {}
    build_model = recipe.build_model

    def build_and_stop_at_fit(*args):
        model = build_model(*args)
        seen.update(model=model, strategy=tf.distribute.get_strategy())

        def fit(*args, **kwargs):  # the subprocess tests train
            seen["callbacks"] = kwargs["callbacks"]
            raise Stop

        model.fit = fit
        return model

    monkeypatch.setattr(recipe, "build_model", build_and_stop_at_fit)
    config.update(num_examples=200, max_test_examples=4)
    with pytest.raises(Stop):
        recipe.train_and_evaluate(config)
    assert isinstance(seen["strategy"], tf.distribute.MirroredStrategy)
    model = seen["model"]
    # Model weights and the optimizer's (made by compile) live on the replicas.
    for variable in (model.trainable_variables[0], model.optimizer.iterations):
        assert isinstance(variable.value, tf.distribute.DistributedValues), variable.path
    backups = [c for c in seen["callbacks"] if isinstance(c, keras.callbacks.BackupAndRestore)]
    assert len(backups) == 1


if __name__ == "__main__":
    run_spec(json.loads(sys.argv[1]))
