"""Training on several devices or hosts with `tf.distribute`.

A recipe picks a strategy by name, builds and compiles its model under
`strategy.scope()`, and calls `fit` as usual: Keras splits each global batch
of a `tf.data.Dataset` across the replicas itself.

```
strategy = get_strategy("mirrored")        # every local GPU (or the CPU)
with strategy.scope():
    model = transformer_seq2seq(...)       # variables mirrored on every replica
    model.compile(...)
model.fit(dataset)                         # dataset batches are global batches
```

TensorFlow only: this is a training-side module, not used by any layer.
Under another Keras backend, `get_strategy("default")` gives `SingleDevice`
(one device, touching no `tf.distribute`), and the other names are refused:
JAX distributes through `keras.distribution` (e.g. `DataParallel`), which
the recipes do not use yet.
"""

import contextlib
import json
import os

import keras
import tensorflow as tf

from keras_attention.validation import check_choice, check_positive_int

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def get_strategy(name="default", *, devices=None, tpu=None):
    """The `tf.distribute.Strategy` named `name`.

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
            - `"tpu"`: `TPUStrategy` on the TPU found by `TPUClusterResolver`.
        devices: for `"mirrored"`, the devices to use (e.g. `["/gpu:0",
            "/gpu:1"]`); `None` means every local GPU.
        tpu: TPU name or address for `"tpu"` (`None` asks the environment,
            e.g. Colab or a Cloud TPU VM; `"local"` on a TPU VM).

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: `name` is not one of `STRATEGIES`, or is not
            `"default"` under a Keras backend other than TensorFlow (there
            `"default"` gives a `SingleDevice`).
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
    name = check_choice("name", name, STRATEGIES)
    backend = keras.config.backend()
    if backend != "tensorflow":
        return _single_device_on(backend, name)
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


def _single_device_on(backend, name):
    if name != "default":
        raise ValueError(
            f"Argument `distribution` (tf.distribute strategy `name`) must be 'default' "
            f"under KERAS_BACKEND={backend}: {name!r} is a tf.distribute strategy, for "
            f"KERAS_BACKEND=tensorflow only. JAX distributes through keras.distribution "
            f"(e.g. keras.distribution.DataParallel), which the recipes do not use yet. "
            f"Received: distribution={name!r}"
        )
    return SingleDevice()


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
