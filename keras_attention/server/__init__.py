"""`keras-attention serve`: a run folder behind TensorFlow Serving's REST
protocol, with requests from many clients decoded together.

```
keras-attention serve RUN_DIR [--port 8501] [--max_batch_size 32] [--batch_timeout_ms 5]
curl -d '{"instances": ["March 3, 2021"]}' localhost:8501/v1/models/RUN_NAME:predict
```

A client written for TensorFlow Serving (or KServe v1) talks to it unchanged,
and moves unchanged to TensorFlow Serving with the folder `keras-attention
export` writes (docs/guides/serving.md). One module per job:

- `protocol`: the paths, request bodies and answers (no HTTP);
- `served_model`: `ServedModel`, the run's model in bucketed, pre-compiled shapes;
- `batcher`: `Batcher`, the rows of concurrent requests gathered into batches;
- `monitoring`: the Prometheus metrics;
- `app`: the aiohttp application tying them together;
- `running`: `serve`, from binding the port to draining on SIGTERM.

Needs the `serve` extra (`pip install 'keras-attention-kit[serve]'`:
aiohttp and prometheus_client).
"""

from keras_attention.server.running import ServerSettings, serve

__all__ = ["ServerSettings", "serve"]
