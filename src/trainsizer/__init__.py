"""trainsizer: size, cost and accept hardware for AI training jobs."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `trainsizer.plan(job) -> Plan`: the plan package is callable; loaded on first use.
    if name == "plan":
        from importlib import import_module

        return import_module("trainsizer.plan")
    raise AttributeError(f"module 'trainsizer' has no attribute {name!r}")
