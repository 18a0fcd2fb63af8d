"""The YAML reader for user files: libyaml's C parser when present, duplicate keys refused, `4e6` a number.

- Speed: the C parser (`yaml.CSafeLoader`, PyYAML built with libyaml) reads a 3 MB job file about 10x faster
  than the pure-Python one; the Python parser is the fallback.
- Duplicate keys (`model:` twice) are an error naming both lines: YAML 1.1 loaders keep the last silently.
- YAML 1.1 (what PyYAML implements) reads `4e6` and `1e-3` as strings because its float pattern needs a dot;
  YAML 1.2 and JSON read them as numbers, and so do we.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
C_PARSER = _BASE is not yaml.SafeLoader

# YAML 1.2 core-schema floats without a dot (1e6, -2.5E-3 is already a float in 1.1).
_EXP_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class DuplicateKeyError(yaml.YAMLError):
    """A mapping names the same key twice."""

    def __init__(self, key: object, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key {key!r} on line {line} (first given on line {first_line})")


class UserLoader(_BASE):  # type: ignore[misc, valid-type]
    """Safe loader for job files and catalog overlays (see module doc)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise DuplicateKeyError(key, line, seen[key])
                seen[key] = line
            except TypeError:  # an unhashable key: the base class reports it
                continue
        return super().construct_mapping(node, deep=deep)


UserLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXP_FLOAT, list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """Parse YAML text with `UserLoader` (raises yaml.YAMLError, including DuplicateKeyError)."""
    return yaml.load(text, Loader=UserLoader)  # noqa: S506  (UserLoader is a SafeLoader)
