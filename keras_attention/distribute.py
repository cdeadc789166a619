"""Training on several devices or hosts: `tf.distribute` on TensorFlow,
`keras.distribution` on JAX.

A recipe picks a strategy by name, builds, compiles and fits its model under
`strategy.scope()`: each global batch is split across the replicas.

```
strategy = get_strategy("mirrored")        # TensorFlow: every local GPU (or the CPU)
strategy = get_strategy("data_parallel")   # JAX: every local GPU (or CPU device)
batch_size = check_batch_size(64, strategy)
with strategy.scope():
    model = transformer_seq2seq(...)       # variables on every replica
    model.compile(...)
    model.fit(dataset)                     # dataset batches are global batches
```

A training-side module, not used by any layer. Which names mean something
depends on the Keras backend (`BACKENDS`): the `tf.distribute` strategies
on TensorFlow, `"data_parallel"` (`keras.distribution.DataParallel`, set
only inside `scope()`) on JAX, and `"default"` everywhere (on JAX and torch
a `SingleDevice`, touching no `tf.distribute`). The others are refused.
"""

import contextlib
import json
import os

import keras
import tensorflow as tf

from keras_attention.validation import check_choice, check_positive_int

DISTRIBUTION_STRATEGIES = ("default", "mirrored", "multi_worker", "tpu", "data_parallel")
# The Keras backends on which each of `DISTRIBUTION_STRATEGIES` means something.
BACKENDS = {
    "default": ("tensorflow", "jax", "torch"),
    "mirrored": ("tensorflow",),
    "multi_worker": ("tensorflow",),
    "tpu": ("tensorflow",),
    "data_parallel": ("jax",),
}


def get_strategy(name="default", *, devices=None, tpu=None):
    """The strategy named `name`, for the current Keras backend.

    Args:
        name: one of
            - `"default"`: `tf.distribute.get_strategy()`, one device (or the
              strategy of an enclosing `scope()`);
            - `"mirrored"`: `MirroredStrategy`, synchronous data parallelism
              over every local GPU (the CPU where there is none);
            - `"multi_worker"`: `MultiWorkerMirroredStrategy`, the same over
              several hosts described by the `TF_CONFIG` environment
              variable (one worker when it is unset); every worker runs the
              same program;
            - `"tpu"`: `TPUStrategy` on the TPU found by `TPUClusterResolver`;
            - `"data_parallel"` (JAX): `JaxDataParallel`, synchronous data
              parallelism over every local GPU (every CPU device where there
              is none) with `keras.distribution.DataParallel`.
            `"default"` is `SingleDevice` on JAX and torch; `BACKENDS` says
            where each name means something.
        devices: for `"mirrored"`, the devices to use (e.g. `["/gpu:0",
            "/gpu:1"]`); `None` means every local GPU. For
            `"data_parallel"`, a list of Keras device names (e.g.
            `["gpu:0", "gpu:1"]`) or JAX devices; `None` means
            `keras.distribution.list_devices()`.
        tpu: TPU name or address for `"tpu"` (`None` asks the environment,
            e.g. Colab or a Cloud TPU VM; `"local"` on a TPU VM).

    Returns:
        A `tf.distribute.Strategy` on TensorFlow; a `JaxDataParallel` or a
        `SingleDevice` on JAX; a `SingleDevice` on torch.

    Raises:
        ValueError: `name` is not one of `DISTRIBUTION_STRATEGIES`, or means nothing
            under the current Keras backend (the error names the argument
            `distribution`, the recipes' setting), or `devices` is empty.
        RuntimeError: `name="tpu"` and no TPU is reachable.

    Example:

    >>> from keras_attention.distribute import get_strategy
    >>> strategy = get_strategy("default")
    >>> strategy.num_replicas_in_sync
    1
    >>> with strategy.scope():
    ...     pass  # build and compile the model here
    >>> get_strategy("gpus")
    Traceback (most recent call last):
    ...
    ValueError: Argument `name` must be one of ...Received: name='gpus'
    """
    name = check_choice("name", name, DISTRIBUTION_STRATEGIES)
    backend = keras.config.backend()
    _check_backend(name, backend)
    if name == "data_parallel":
        return JaxDataParallel(devices)
    if backend != "tensorflow":
        return SingleDevice()
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        return MultiWorkerMirroredStrategy()
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as error:
        raise RuntimeError(
            f"No TPU is reachable (tpu={tpu!r}): {type(error).__name__}: "
            f"{str(error).rstrip('.')}. "
            "Run on a Cloud TPU VM or Colab TPU runtime, or pass the TPU name or "
            "address; use name='mirrored' for GPUs."
        ) from error
    return tf.distribute.TPUStrategy(resolver)


class SingleDevice:
    """What a recipe uses of a strategy, for one device under a Keras backend
    other than TensorFlow: a `scope()` that does nothing, one replica, no
    cluster (so `is_chief` is True and `backup_and_restore` uses
    `backup_dir` itself)."""

    num_replicas_in_sync = 1
    cluster_resolver = None

    def scope(self):
        """A context in which nothing changes."""
        return contextlib.nullcontext()


class JaxDataParallel:
    """`keras.distribution.DataParallel` as a strategy, for JAX: `scope()`
    sets it as Keras' distribution inside the block and restores the
    previous one after it.

    Build, compile and fit the model inside `scope()`: the variables are
    replicated on every device (created there), and `fit` shards each global
    batch along its first axis between the devices (while the distribution
    is set). The step is one XLA program over the global batch, so the loss
    is the global batch's mean, as on one device. Each global batch must
    split evenly (`check_batch_size`). After the block the model generates,
    evaluates and saves as usual, on the replicated variables. One process;
    JAX's multi-host setup (`jax.distributed.initialize`) is not covered.

    Args:
        devices: Keras device names (e.g. `["gpu:0", "gpu:1"]`) or JAX
            devices; `None` means `keras.distribution.list_devices()`.
    """

    cluster_resolver = None  # one process: it writes the run folder

    def __init__(self, devices=None):
        devices = keras.distribution.list_devices() if devices is None else list(devices)
        if not devices:
            raise ValueError(
                f"Argument `devices` must name at least one device. Received: devices={devices!r}"
            )
        self.distribution = keras.distribution.DataParallel(devices=devices)

    @property
    def num_replicas_in_sync(self):
        """The number of devices each global batch is split between."""
        return int(self.distribution.device_mesh.devices.size)

    def scope(self):
        """A context in which `self.distribution` is Keras' distribution."""
        return self.distribution.scope()


def _check_backend(name, backend):
    if backend in BACKENDS[name]:
        return
    usable = tuple(n for n in DISTRIBUTION_STRATEGIES if backend in BACKENDS[n])
    if name == "data_parallel":
        why = f"{name!r} is keras.distribution.DataParallel, for KERAS_BACKEND=jax"
    else:
        why = f"{name!r} is a tf.distribute strategy, for KERAS_BACKEND=tensorflow"
    hint = {
        "jax": "JAX distributes through keras.distribution: use 'data_parallel'",
        "tensorflow": "TensorFlow distributes through tf.distribute: use 'mirrored'",
    }.get(backend, f"the recipes train on one device under KERAS_BACKEND={backend}")
    raise ValueError(
        f"Argument `distribution` (the strategy `name`) must be one of {usable} under "
        f"KERAS_BACKEND={backend}: {why}; {hint}. Received: distribution={name!r}"
    )


def check_batch_size(batch_size, strategy):
    """`batch_size` (a global batch), checked to split evenly between the
    devices of `strategy` where it must: under `JaxDataParallel` every
    device takes an equal share of each batch. (`tf.distribute` splits
    uneven batches itself.)

    Raises:
        ValueError: naming `batch_size`, before any training.

    Example:

    >>> from keras_attention.distribute import check_batch_size, get_strategy
    >>> check_batch_size(64, get_strategy("default"))
    64
    """
    batch_size = check_positive_int("batch_size", batch_size)
    replicas = strategy.num_replicas_in_sync
    if needs_even_batches(strategy) and batch_size % replicas:
        raise ValueError(
            f"Argument `batch_size` (the global batch) must be a multiple of the number of "
            f"devices, {replicas}, under distribution='data_parallel': each device takes an "
            f"equal share of every batch. Received: batch_size={batch_size}"
        )
    return batch_size


def needs_even_batches(strategy):
    """True where every batch `fit` sees must split evenly between the
    devices of `strategy` (`JaxDataParallel`): a last, smaller batch of a
    dataset must then be padded to the full batch size."""
    return isinstance(strategy, JaxDataParallel) and strategy.num_replicas_in_sync > 1


def trim_to_even_batches(data, strategy):
    """`data` (arrays, or a tuple or dict of them, examples along the first
    axis) without its last `n % devices` examples where batches must split
    evenly between the devices of `strategy` (`needs_even_batches`);
    unchanged elsewhere. With a batch size that is a multiple of the device
    count (`check_batch_size`), the last, smaller batch `fit` makes of the
    arrays then splits evenly too.

    Example:

    >>> import numpy as np
    >>> from keras_attention.distribute import get_strategy, trim_to_even_batches
    >>> x, y = trim_to_even_batches((np.zeros((5, 3)), np.zeros(5)), get_strategy())
    >>> x.shape, y.shape  # one device: nothing to trim
    ((5, 3), (5,))
    """
    if not needs_even_batches(strategy):
        return data
    devices = strategy.num_replicas_in_sync
    return keras.tree.map_structure(lambda a: a[: len(a) - len(a) % devices], data)


class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`tf.distribute.MultiWorkerMirroredStrategy` whose `reduce` accepts
    what Keras 3's `fit` passes it when there are several workers
    (keras-team/keras#20585, #20329): a nested structure (the first batch,
    reduced to build the model) and scalars with `axis=0` (the metrics).
    Without this, `fit` fails on its first step with any model."""

    def reduce(self, reduce_op, value, axis):
        def reduce_one(v):
            rank = self.experimental_local_results(v)[0].shape.rank
            return super(MultiWorkerMirroredStrategy, self).reduce(
                reduce_op, v, axis=None if rank == 0 else axis
            )

        return tf.nest.map_structure(reduce_one, value)


def global_batch_size(per_replica_batch_size, strategy):
    """The batch size to give the dataset so that each replica gets
    `per_replica_batch_size` examples per step.

    `fit` splits every dataset batch across `strategy.num_replicas_in_sync`
    replicas, so dataset batches are global batches: the same global batch
    gives the same updates on any number of devices; a fixed per-replica
    batch uses each added device fully (then scale the learning rate).
    """
    per_replica_batch_size = check_positive_int("per_replica_batch_size", per_replica_batch_size)
    return per_replica_batch_size * strategy.num_replicas_in_sync


def shard_by_data(dataset):
    """`dataset` set to be split between workers by element.

    `tf.data` shards a multi-worker input by file by default; a dataset made
    in memory (from lists of examples, as the recipes make theirs) has no
    files, so every worker reads it all and keeps its share of each batch.
    Setting this explicitly avoids tf.data's fallback warning.
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def is_chief(strategy):
    """True on the worker that writes files: the chief, worker 0 of a
    cluster without a chief, or the only process."""
    resolver = strategy.cluster_resolver
    if resolver is None or resolver.task_type in (None, "chief"):
        return True
    return (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )


def backup_and_restore(backup_dir, strategy):
    """A `keras.callbacks.BackupAndRestore` that resumes an interrupted `fit`
    from its last completed epoch.

    Each worker backs up into its own subfolder of `backup_dir` (Keras 3's
    callback would otherwise let every worker write the same files); the
    weights are the same on every worker, so each restores its own copy.
    Restart every worker of the job with the same `backup_dir`.
    """
    resolver = strategy.cluster_resolver
    if resolver is not None and resolver.task_type is not None:
        backup_dir = os.path.join(backup_dir, f"{resolver.task_type}_{resolver.task_id}")
    return keras.callbacks.BackupAndRestore(backup_dir)


def tf_config(workers, index):
    """The `TF_CONFIG` value (a JSON string) of one worker of a cluster.

    Args:
        workers: list of `"host:port"`, one per worker, the same on all.
        index: this worker's position in `workers` (worker 0 is the chief:
            it writes the run folder).

    Example:

    >>> from keras_attention.distribute import tf_config
    >>> print(tf_config(["10.0.0.1:12345", "10.0.0.2:12345"], 1))  # doctest: +NORMALIZE_WHITESPACE
    {"cluster": {"worker": ["10.0.0.1:12345", "10.0.0.2:12345"]},
     "task": {"type": "worker", "index": 1}}
    """
    workers = list(workers)
    if not workers:
        raise ValueError(f"Argument `workers` must not be empty. Received: workers={workers!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(workers):
        raise ValueError(
            f"Argument `index` must be an int in [0, {len(workers)}). Received: index={index!r}"
        )
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


__all__ = [
    "BACKENDS",
    "DISTRIBUTION_STRATEGIES",
    "JaxDataParallel",
    "MultiWorkerMirroredStrategy",
    "SingleDevice",
    "backup_and_restore",
    "check_batch_size",
    "get_strategy",
    "global_batch_size",
    "is_chief",
    "needs_even_batches",
    "shard_by_data",
    "tf_config",
    "trim_to_even_batches",
]
