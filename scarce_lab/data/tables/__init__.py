"""Tidy per-environment tables derived from trajectory datasets.

Every tidy table carries three condition columns:

- ``base_condition``: the environment's primary condition (SovSim power condition,
  SCARCE scheduler/mechanism, Economy ablation or baseline);
- ``settings``: every condition-defining setting of the run (canonical JSON of the
  manifest's ``condition_settings``); two rows belong to the same condition exactly
  when ``base_condition`` and ``settings`` are equal;
- ``condition``: a readable label, unique per (base_condition, settings) within the
  table: the base condition followed by the settings that *vary among the table's runs*
  (``kcpr,rounds=2``), so runs that differ are never shown, or grouped, as one.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

__all__ = ["DERIVED", "fork_label", "label_conditions", "label_value", "settings_json"]


def settings_json(settings: dict[str, Any]) -> str:
    """Canonical JSON of a run's condition settings (sorted keys, no spaces)."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def label_value(v: Any) -> str:
    """A setting's value in a condition label: a whole float as an integer, a list or
    mapping as compact JSON, anything else as text."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, list | dict):
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


#: Setting prefixes whose absence from a run is itself a condition (a run without seats,
#: or without a newcomer, is another composition than one with them; a run that is no
#: fork is another condition than its forks).
PRESENCE_MATTERS: tuple[str, ...] = ("seats.", "newcomer.", "fork.")
#: The condition settings of a fork (:mod:`scarce_lab.forks`): shown as one label part.
FORK: str = "fork."


def fork_label(settings: dict[str, Any]) -> str | None:
    """A fork's part of a condition label from its dotted condition settings
    (``fork.at``, ``fork.intervention.*``): ``fork@<at>:<kind>[:<target>]``, e.g.
    ``fork@3:rule:misreport=false``, ``fork@2:seat_model:king=openai/gpt-4o``,
    ``fork@2:replace_decision:a1``; ``None`` for a run that is no fork."""
    if "fork.at" not in settings:
        return None
    iv = {k[len("fork.intervention."):]: v for k, v in settings.items() if k.startswith("fork.intervention.")}
    kind = iv.get("kind")
    value = iv.get("value", {k[len("value."):]: v for k, v in iv.items() if k.startswith("value.")})
    shown = str(value).lower() if isinstance(value, bool) else label_value(value)
    target = {"replace_message": iv.get("agent"), "replace_decision": iv.get("agent"), "remove_agent": iv.get("agent"),
              "seat_model": f"{iv.get('seat')}={iv.get('model')}", "rule": f"{iv.get('setting')}={shown}",
              "add_agent": f"{iv.get('model')}" + (f":{iv['role']}" if iv.get("role") else "")}.get(str(kind))
    return f"fork@{settings['fork.at']}:{kind}" + (f":{target}" if target is not None else "")
#: Settings recorded for the record gate but fully set by others (an interview's or a
#: program call's answer budget follows from ``interviews`` / the task): compared for
#: pooling like every setting, never shown in a label.
DERIVED: tuple[str, ...] = ("purpose_max_tokens",)


def _name(key: str) -> str:
    """A setting's name in a label: the last part, or for seat and newcomer settings
    the part after ``seats.`` (``a0.model``) / the whole key (``newcomer.episode``)."""
    if key.startswith("seats."):
        return key[len("seats."):]
    if key.startswith("newcomer."):
        return key
    return key.split(".")[-1]


def _separate_collisions(labels: dict, parsed: dict, models: dict | None) -> dict:
    """Labels made unique per ``(base_condition, settings)`` wherever the rows could be
    grouped together: two pairs that share a label and (when the table has a ``model``
    column) a model, e.g. a run with a setting that only some runs record (``talk``,
    ``seats``) beside one without it, or a mixed population beside a uniform run of one
    of its models. Each such pair gets the settings that tell them apart; a pair still
    sharing its label after that gets its settings' hash. Pairs of different models may
    share a label (tables group by model and condition: a scripted model's missing
    sampling settings are no other condition)."""
    import hashlib

    def clash(p, q) -> bool:
        return models is None or bool(models[p] & models[q])

    by_label: dict[str, list] = {}
    for pair, lab in labels.items():
        by_label.setdefault(lab, []).append(pair)
    out = dict(labels)
    for lab, pairs in by_label.items():
        hit = [p for p in pairs if any(q != p and clash(p, q) for q in pairs)]
        if not hit:
            continue
        members = [parsed[s] for _, s in hit]
        # skipped settings too: the base condition was meant to name them, and here it did
        # not tell the runs apart (e.g. a composition label by short model names)
        keys = sorted({k for m in members for k in m})
        differ = [k for k in keys
                  if len({settings_json({"v": m[k]}) if k in m else "<absent>" for m in members}) > 1]
        differ = _fewest_that_tell_apart(differ, members)
        for base, s in hit:
            extra = [f"{_name(k)}={label_value(parsed[s][k])}" for k in differ if k in parsed[s]]
            out[(base, s)] = ",".join([lab, *extra])
    by_label = {}
    for pair, lab in out.items():
        by_label.setdefault(lab, []).append(pair)
    for lab, pairs in by_label.items():
        for base, s in pairs:
            if any(q != (base, s) and clash((base, s), q) for q in pairs):
                out[(base, s)] = f"{lab}[{hashlib.sha256(str(s).encode()).hexdigest()[:8]}]"
    return out


def _fewest_that_tell_apart(keys: list[str], members: list[dict]) -> list[str]:
    """A short list of ``keys`` whose values tell ``members`` apart: keys are taken
    greedily (the one that splits the most, then top-level before nested, then by
    name) until every member reads differently or no key splits further; e.g. the
    Economy's ``preset`` alone, not every setting the preset changes."""
    def sig(m: dict, ks: list[str]) -> str:
        return settings_json({k: m.get(k, "<absent>") for k in ks})

    chosen: list[str] = []
    left = list(keys)
    while left and len({sig(m, chosen) for m in members}) < len({sig(m, keys) for m in members}):
        best = max(left, key=lambda k: (len({sig(m, [*chosen, k]) for m in members}), -k.count("."),
                                         [-ord(c) for c in k]))
        if len({sig(m, [*chosen, best]) for m in members}) == len({sig(m, chosen) for m in members}):
            break
        chosen.append(best)
        left.remove(best)
    return [k for k in keys if k in chosen]


def label_conditions(df: pl.DataFrame, *, skip: tuple[str, ...] = ()) -> pl.DataFrame:
    """Set ``condition`` from ``base_condition`` and ``settings`` (see the module
    docstring). Rows whose ``settings`` is null or ``"{}"`` (published layouts without
    settings) keep ``base_condition`` as their label. ``skip`` names settings never
    shown (those already in the base condition).
    """
    if df.height == 0 or "settings" not in df.columns:
        return df
    # the key columns as a frame of their own (a query on the whole frame would first
    # gather every column of a frame read in pieces into one)
    key = pl.DataFrame([df["base_condition"], df["settings"]])
    distinct = key.unique().rows()
    parsed = {s: json.loads(s) if s else {} for _, s in distinct}
    ours = [s for _, s in distinct if parsed[s]]  # published layouts carry no settings
    keys = sorted({k for s in ours for k in parsed[s]})
    # a setting varies when the runs that have it hold different values (a run without
    # it, e.g. a scripted model's sampling temperature, is not a different condition);
    # a seat or newcomer setting also varies when some runs lack it (a run without seats
    # or without a newcomer is another composition)
    varying = [
        k for k in keys
        if k not in skip and not k.startswith(DERIVED) and (len({settings_json({"v": parsed[s][k]}) for s in ours if k in parsed[s]}) > 1
                              or (k.startswith(PRESENCE_MATTERS) and any(k not in parsed[s] for s in ours)))
    ]
    labels = {}
    for base, s in distinct:
        extra = [f"{_name(k)}={label_value(parsed[s].get(k))}" for k in varying
                 if k in parsed[s] and not k.startswith(FORK)]
        forked = fork_label(parsed[s]) if any(k.startswith(FORK) for k in varying) else None
        labels[(base, s)] = ",".join([str(base), *extra, *([forked] if forked else [])])
    models = None
    if "model" in df.columns and len(set(labels.values())) < len(labels):  # needed only where labels collide
        models = {}
        for b, s, m in key.with_columns(df["model"]).unique().rows():
            models.setdefault((b, s), set()).add(m)
    labels = _separate_collisions(labels, parsed, models)
    mapping = pl.DataFrame(
        [{"base_condition": b, "settings": s, "condition": lab} for (b, s), lab in labels.items()],
        schema={"base_condition": pl.String, "settings": pl.String, "condition": pl.String},
    )
    if all(lab == base for (base, _), lab in labels.items()):  # no settings shown: no join
        return df.with_columns(df["base_condition"].alias("condition")) if "condition" in df.columns else df
    # only the key columns go through the join: the other columns are kept, not copied
    condition = key.join(
        mapping, on=["base_condition", "settings"], how="left", nulls_equal=True, maintain_order="left")["condition"]
    return df.with_columns(condition) if "condition" in df.columns else df  # as before: no column added
