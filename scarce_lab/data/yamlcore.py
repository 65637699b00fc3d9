"""YAML text as the project reads every value a person types (``-S key=value``, a fork's
``--intervene`` values): the YAML 1.2 core schema's scalars, never PyYAML's YAML 1.1 ones
(which read ``010`` as 8, ``1:30`` as 90 and ``off`` as ``False``). Here, below both
:mod:`scarce_lab.config` and :mod:`scarce_lab.forks` (configs know forks, so the reader
cannot live in either without an import cycle).
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["load_yaml"]


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML with the YAML 1.2 core schema's scalars, not PyYAML's
    YAML 1.1 ones: only ``true``/``false`` are booleans (``yes``, ``on``, ``y`` stay
    text), integers are decimal as written (``0120`` is 120, not octal 80; ``0x10``
    and ``1_000`` stay text, which a number field then refuses), and ``1e3`` is a
    float.

    Raises:
        yaml.YAMLError: the text is not YAML.
    """
    import yaml

    return yaml.load(text, Loader=_core_schema_loader())  # noqa: S506 - a SafeLoader subclass


@cache
def _core_schema_loader() -> Any:
    import re

    import yaml

    class CoreSchemaLoader(yaml.SafeLoader):
        """SafeLoader with the YAML 1.2 core schema's bool, int and float."""

    CoreSchemaLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers
                if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    core = [
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("tag:yaml.org,2002:int", r"^[-+]?[0-9]+$", "-+0123456789"),
        ("tag:yaml.org,2002:float",
         r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
         "-+.0123456789"),
    ]
    for tag, rx, first in core:
        CoreSchemaLoader.add_implicit_resolver(tag, re.compile(rx), list(first))

    def construct_int(loader: Any, node: Any) -> int:
        return int(loader.construct_scalar(node))  # decimal, leading zeros allowed

    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return CoreSchemaLoader
