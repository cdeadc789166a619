"""Tests of `keras_attention.runs`, one module per module of the package."""
