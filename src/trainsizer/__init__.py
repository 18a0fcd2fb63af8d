"""trainsizer: size, cost and accept hardware for AI training jobs."""

__version__ = "0.1.0"
