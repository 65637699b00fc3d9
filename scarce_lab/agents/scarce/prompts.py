"""Render the SCARCE prompt templates (``templates/*.j2``) and tool specs (``tools.yaml``)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["tojson_compact"] = lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    env.filters["minutes"] = lambda s: f"{float(s) / 60:.1f} min"
    return env


def render(name: str, **context: Any) -> str:
    """Render ``templates/<name>`` with ``context``.

    Raises:
        jinja2.TemplateNotFound: no such template.
        jinja2.UndefinedError: the template needs a variable not in ``context``.
    """
    return _env().get_template(name).render(**context).strip()


@lru_cache(maxsize=1)
def tool_specs() -> list[dict[str, Any]]:
    """OpenAI-style function specs of the solver's tools (from ``templates/tools.yaml``)."""
    data = yaml.safe_load((TEMPLATES / "tools.yaml").read_text())
    return [{"type": "function", "function": f} for f in data["tools"]]
