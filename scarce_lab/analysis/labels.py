"""Short labels for conditions in charts: only the parts that tell them apart.

A condition label (``scarce_lab.config.base``) is the primary condition, then
``name=value`` settings: ``ballots_fixed_mem-cross,workers=2,...``. Charts cut long
labels to the same text for different conditions, so they show, for a set of
conditions, only the parts that differ from the most common value of that part
(:func:`differing_parts`). Tables keep the full label.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any


def condition_parts(condition: str) -> list[str]:
    """A condition label's parts: the primary condition, then ``name=value`` settings,
    split at the commas outside brackets and quotes (``tasks=["rev","tac"]`` is one)."""
    parts, depth, quoted, cur = [], 0, False, []
    for ch in condition:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "[{(":
            depth += 1
        elif not quoted and ch in "]})":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def part_key(part: str) -> str:
    """``name`` of a ``name=value`` part; the primary condition (no ``=``) is ``""``."""
    return part.split("=", 1)[0] if "=" in part else ""


def differing_parts(conditions: Iterable[str]) -> dict[str, list[str]]:
    """For each condition, its parts whose value differs from the most common value of
    that part among ``conditions`` (ties: an unset ``=None`` value, then sorted order),
    in the order of the part names (primary first). Two different conditions always get
    different lists unless one of them is empty."""
    conds = sorted(set(conditions))
    parts = {c: {part_key(p): p for p in condition_parts(c)} for c in conds}
    keys = sorted({k for ps in parts.values() for k in ps})
    mode = {}
    for k in keys:
        counts = Counter(ps.get(k) for ps in parts.values())
        top = max(counts.values())
        mode[k] = sorted((v for v, n in counts.items() if n == top),
                         key=lambda v: (v is None, not (v or "").endswith("=None"), v or ""))[0]
    return {c: [parts[c][k] for k in keys if parts[c].get(k) is not None and parts[c][k] != mode[k]]
            for c in conds}


def condition_label(code: str, names: Mapping[str, str], *, with_settings: bool = False) -> str:
    """Readable name of a condition label from an environment's ``names`` table (e.g.
    ``kcpr_m`` -> ``KCPR-M (king may misreport)``).

    With ``with_settings=False`` the whole ``code`` is looked up and an unknown code is
    returned unchanged (SovSim's charts, whose condition column holds base conditions).
    With ``with_settings=True`` the primary condition is looked up (unknown: its
    ``-``/``_`` read as spaces) and the label's ``name=value`` settings follow in
    brackets: ``none,bid_scheme=holland`` -> ``full economy (bid_scheme=holland)``
    (Economy of Minds' panels).
    """
    if not with_settings:
        return names.get(code, code)
    base, _, rest = code.partition(",")
    name = names.get(base, base.replace("-", " ").replace("_", " "))
    return f"{name} ({rest.replace(',', ', ')})" if rest else name


def departures(dataset: Any, environment: str) -> dict[str, Any]:
    """The settings that every ``environment`` run of ``dataset`` shares and that depart
    from the environment's defaults (its config's defaults, which are the paper's
    settings): ``{dotted setting: value}``, sorted.

    A run's settings are the ``condition_settings`` its manifest recorded (every
    condition-defining setting, as sent); a departure is one whose value differs from
    the default config's (:meth:`~scarce_lab.config.base.ExperimentConfig.condition_settings_defaults`)
    or that a default run does not record at all (a composition of seats, a newcomer),
    the label field (the condition the table groups by) and derived settings left out.
    Settings that differ between runs are not departures of the table: its condition
    labels name them. A published layout (no manifests) has none of ours: ``{}``.

    Raises:
        ValueError: the environment's config cannot be built with its defaults (named).
    """
    from ..registry import get

    cls = get(environment).config
    try:
        defaults = cls().condition_settings_defaults()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{cls.__name__}() cannot be built from its defaults ({exc}): no paper defaults to "
                         "compare the runs with") from None
    skip = {getattr(cls, "LABEL_FIELD", None)}
    derived = tuple(getattr(cls, "DERIVED_SETTINGS", ()))
    shared: dict[str, Any] | None = None
    for m in getattr(dataset, "manifests", ()):
        if m.environment != environment:
            continue
        mine = {k: v for k, v in (m.condition_settings or {}).items()
                if k not in skip and not (derived and k.startswith(derived))
                and (k not in defaults or defaults[k] != v)}
        shared = mine if shared is None else {k: v for k, v in shared.items() if k in mine and mine[k] == v}
    return dict(sorted((shared or {}).items()))


def format_departures(settings: Mapping[str, Any]) -> str:
    """One sentence naming ``settings`` (:func:`departures`): "Every run departs from the
    paper's defaults in: rounds=3, workers=4."; empty for none."""
    if not settings:
        return ""
    import json

    def short(v: Any) -> str:
        return json.dumps(v, separators=(",", ":"), sort_keys=True) if isinstance(v, list | dict) else str(v)

    return "Every run departs from the paper's defaults in: " + ", ".join(
        f"{k}={short(v)}" for k, v in settings.items()) + "."


def displayed_markdown(text: str) -> str:
    r"""``text`` with every ``$`` outside code spans written as three backslashes and
    ``$``, as every Markdown output of the project is displayed: JupyterLab typesets
    ``$...$`` as TeX after rendering the Markdown, so "$0.04 to $0.22" showed as the italic
    formula "0.04to0.22" (a Markdown ``\$`` or ``&#36;`` still reaches MathJax as a bare
    ``$``); the Markdown renders ``\\\$`` as ``\$``, which MathJax (``processEscapes``)
    shows as ``$``."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("$", "\\\\\\$") for p in parts)
