"""The server's Prometheus metrics, served as text at TensorFlow Serving's path
`/monitoring/prometheus/metrics` (through the `prometheus_client` package).

- `keras_attention_requests_total{status="200"}`: predict requests answered,
  by HTTP status (400, 404, 413, 500 and 503 are counted too);
- `keras_attention_request_seconds`: a histogram of predict latency, from
  the request's arrival to its answer;
- `keras_attention_batch_rows`: a histogram of the rows of each model call;
- `keras_attention_batch_seconds`: a histogram of each model call's time;
- `keras_attention_queue_rows`: rows waiting for a batch, now.

Each server has its own registry (several in one process stay apart).
"""

import prometheus_client

__all__ = ["CONTENT_TYPE", "PATH", "Metrics"]

#: TensorFlow Serving's path for Prometheus metrics.
PATH = "/monitoring/prometheus/metrics"
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The metrics of one server.

    Args:
        max_batch_size: the most rows of a batch (the batch histogram's
            buckets are the powers of two up to it).
        queue_rows: a callable giving the rows waiting now (read at each
            scrape).
    """

    def __init__(self, max_batch_size, queue_rows):
        self.registry = prometheus_client.CollectorRegistry()
        self.requests = prometheus_client.Counter(
            "keras_attention_requests", "Predict requests answered, by HTTP status.",
            ["status"], registry=self.registry)
        self.latency = prometheus_client.Histogram(
            "keras_attention_request_seconds", "Predict latency, arrival to answer.",
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        sizes = [2 ** k for k in range(max_batch_size.bit_length()) if 2 ** k < max_batch_size]
        self.batch_rows = prometheus_client.Histogram(
            "keras_attention_batch_rows", "Rows of each model call.",
            buckets=[*sizes, max_batch_size], registry=self.registry)
        self.batch_seconds = prometheus_client.Histogram(
            "keras_attention_batch_seconds", "Seconds of each model call.",
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        queue = prometheus_client.Gauge(
            "keras_attention_queue_rows", "Rows waiting for a batch.", registry=self.registry)
        queue.set_function(queue_rows)

    def answered(self, status, seconds):
        """Counts a predict request and its latency."""
        self.requests.labels(status=str(status)).inc()
        self.latency.observe(seconds)

    def batch(self, rows, seconds):
        """Counts one model call (`Batcher`'s `on_batch`)."""
        self.batch_rows.observe(rows)
        self.batch_seconds.observe(seconds)

    def text(self):
        """The Prometheus text exposition (bytes)."""
        return prometheus_client.generate_latest(self.registry)
