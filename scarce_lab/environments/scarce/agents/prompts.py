"""Render the SCARCE prompt templates (``templates/*.j2``) and the tool descriptions (``tools.yaml``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ....llm.quoting import template_env

TEMPLATES = Path(__file__).parent / "templates"
#: The retrospective interview's questions (:func:`scarce_lab.agents.interviews.interview_messages`).
INTERVIEW_TEMPLATE = TEMPLATES / "interview.j2"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = template_env(TEMPLATES, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
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
def tool_descriptions() -> dict[str, str]:
    """Tool name -> its description (prompt text of native tool calling; from
    ``templates/tools.yaml``). The argument schemas come from the state's action mask
    (:func:`scarce_lab.environments.scarce.agents.masks.tool_specs_for`)."""
    data = yaml.safe_load((TEMPLATES / "tools.yaml").read_text())
    return {t["name"]: t["description"] for t in data["tools"]}
