"""Migrations of older trajectory files to :data:`~.base.SCHEMA_VERSION`.

A reader calls :func:`check_version` on each manifest, then :func:`migrate_event` on
each event line of a run written by an older version. Files are never rewritten in
place by reading; ``scarce-lab migrate PATH`` rewrites a dataset to the current
version.

Version history:

- **1** (scarce_lab 0.1.0): payloads were free-form dicts; SCARCE payloads carried
  ``visibility`` (``public``/``private``/``scheduler``/``researcher``) and
  ``visible_to`` inside the payload; dicts keyed by agent (SCARCE budgets, deadlines
  and balances; Economy bids, wealth, per-agent episode summaries; SovSim roles).
- **2**: typed payload per kind (:mod:`scarce_lab.data.events`); ``visibility`` and
  ``visible_to`` are envelope fields (``scheduler`` became ``researcher``); dicts keyed
  by agent became lists of records; the manifest gained ``condition_settings``;
  SCARCE's private-message ``round`` became ``private_round`` (no payload field shares
  a name with an envelope field: Economy births and deaths carry the agent in the
  envelope only).
- **3**: SCARCE ``tactic_intent`` events (researcher-only ground truth of the strategic
  scripted negotiators: a new kind); LLM call records gained ``dropped_params`` (settings asked
  for that litellm did not send) and ``structured_output`` (the form the schema was sent
  in); ``params`` hold what litellm sent after its mapping; new outcomes
  ``request_refused``, ``cost_cap`` and ``text_for_tool``; the manifest's ``llm`` config
  gained ``structured_output``, ``repeat_penalty``, ``allow_ignored_settings`` and the
  dollar-cap settings, and ``notes.structured_output``. Events are unchanged: a
  version-2 event is read as it is; version-2 call records read the new fields as
  unknown (``None``).
- **4**: every decision payload (:class:`~.base.DecisionFields`: SovSim extraction and
  announcement; SCARCE declaration, reasoning, private message or silence, bid
  revision, ballot, solver action; and Economy's ``auction`` and ``step``) gained
  ``call_ids``, the ids of the model calls behind it; call records' ``call_id`` became deterministic (run, agent, round,
  purpose, seed, prompt). An older decision event gets an **empty** list: its calls
  are not guessed (they can still be found through agent, round and purpose).
- **5**: SovSim ``talk`` events (a discussion turn: a message or a silence, public or
  private with ``visible_to``; a new kind); the SovSim config gained ``talk``,
  ``talk_turns`` and ``talk_max_chars`` (an older manifest's config lacks them: its
  game had no talk, ``talk=none``). A new kind ``interview`` (SovSim and SCARCE: an agent's retrospective
  interview, researcher-only, recorded only when the ``interviews`` setting is on).
  Events are unchanged: a version-4 event is read as it is.
- **6**: LLM call records gained ``served_model`` (the model the response names),
  ``usage_reported`` (the usage as the server sent it) and ``usage_problem`` (why it was
  not accepted); a new outcome ``model_mismatch``. Events are unchanged: a version-5
  run is read as it is; its call records read the new fields as unknown (``None``).
- **7**: people at the table: a decision payload (:class:`~.base.DecisionFields`) may
  carry ``latency_s``, written only where a person decided (outcome ``human`` or
  ``human_timeout``); every other decision is written as before. Configs gained
  ``human_time_limit_s`` (left out of a dump at its default) and manifests
  ``notes.humans`` where a seat is a person. A version-6 run is read as it is
  (``latency_s`` reads as ``None``).
  Also in 7, SovSim institutions (optional condition settings ``sanctions``,
  ``sanction_cost``, ``sanction_impact``, ``sanction_max_points``, ``quota``,
  ``elections``): new kinds ``ballot``, ``election``, ``quota_proposal``, ``quota``,
  ``sanction``, ``sanctions``; a new scripted policy ``opportunist``. Events are
  unchanged: a version-6 run is read as it is (its config lacks the settings: every
  institution was off).
"""

from __future__ import annotations

import functools
from typing import Any

from .base import SCHEMA_VERSION, DecisionFields
from .registry import PayloadRegistration, registration

#: Events of this version and later read as the current version unchanged (later versions
#: only added kinds), so the fast reader takes their files as they are.
EVENTS_UNCHANGED_SINCE = 4

#: Events of this version and later differ from the current version only by payload
#: fields that later versions added with a fixed default (:func:`added_fields`), so the
#: fast reader reads them without those fields and fills the default in.
EVENTS_FILLABLE_SINCE = 2


def added_fields(environment: str, kind: str, version: int) -> dict[str, Any]:
    """The payload fields a ``kind`` event of ``version`` lacks and their defaults:
    ``{"call_ids": []}`` for a decision before version 4 (its calls are not guessed),
    else ``{}``. Only for ``version >= EVENTS_FILLABLE_SINCE``.

    Raises:
        ValueError: ``version`` older than :data:`EVENTS_FILLABLE_SINCE` (needs
            :func:`migrate_event`).
    """
    if version < EVENTS_FILLABLE_SINCE:
        raise ValueError(f"version {version} events need migrate_event, not added fields")
    return {"call_ids": []} if version < 4 and kind in _decision_kinds(environment) else {}


class SchemaVersionError(ValueError):
    """A file's ``schema_version`` is newer than this package or not a version at all."""


def check_version(value: Any, where: str) -> int:
    """Return the file's version, or raise naming ``where`` (a path) and the value.

    Raises:
        SchemaVersionError: not an integer >= 1, or newer than :data:`SCHEMA_VERSION`
            (upgrade scarce_lab to read it).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SchemaVersionError(f"{where}: unknown schema_version {value!r} (this scarce_lab reads 1..{SCHEMA_VERSION})")
    if value > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where}: schema_version {value} is newer than this scarce_lab's {SCHEMA_VERSION}; "
            "upgrade scarce_lab to read it"
        )
    return value


def migrate_manifest(obj: dict[str, Any], version: int) -> dict[str, Any]:
    """A manifest dict of ``version`` as the current version (a new dict)."""
    out = dict(obj)
    if version < 2:
        out.setdefault("condition_settings", {})
    out["schema_version"] = SCHEMA_VERSION
    return out


def migrate_event(environment: str, obj: dict[str, Any], version: int) -> dict[str, Any]:
    """An event dict of ``version`` as the current version (a new dict).

    Raises:
        KeyError / TypeError / ValueError: the old event lacks what its kind needs (the
            caller reports the file and line).
    """
    if version >= EVENTS_UNCHANGED_SINCE:
        return obj
    out = dict(obj)
    payload = dict(out.get("payload") or {})
    out["payload"] = payload
    if out.get("kind") == "round_committed":
        out["visibility"], out["visible_to"] = "researcher", []
        return out
    if version < 2:
        migrate_v1 = registration(environment).migrate_v1
        if migrate_v1 is None:
            raise ValueError(f"environment {environment!r} has no version-1 events to migrate (it registered no migrate_v1)")
        migrate_v1(out, payload)
    _v3_to_v4(environment, out, payload)
    return out


# -- version 3 -> 4 ---------------------------------------------------------------------
def _v3_to_v4(environment: str, out: dict, p: dict) -> None:
    """Decision payloads get an empty ``call_ids`` (the calls are not guessed).

    Raises:
        ValueError: the payload already has ``call_ids``: a field version 4 added, so
            a file of an older version holding it was edited or written by something
            else (refused like any field its version did not have, rather than trusted).
    """
    if out.get("kind") in _decision_kinds(environment):
        if "call_ids" in p:
            raise ValueError(f"field 'payload.call_ids' ({p['call_ids']!r}) is in a {out.get('kind')} event of a "
                             "schema version before 4, which had no such field")
        p["call_ids"] = []


def _decision_kinds(environment: str) -> frozenset[str]:
    # keyed by the registration, not the name: an environment unregistered and
    # registered again with other payloads (a test's toy, a notebook) must not keep
    # the old kinds
    return _decision_kinds_of(registration(environment))


@functools.cache
def _decision_kinds_of(reg: PayloadRegistration) -> frozenset[str]:
    return frozenset(k for k, m in reg.kinds().items()
                     if issubclass(m, DecisionFields) or "call_ids" in m.model_fields)


# -- version 1 -> 2 (helpers of the environments' own ``migrate_v1``) ---------------------
def private_to(out: dict, agents: list[str] | None = None) -> None:
    """Make the event ``out`` private to ``agents`` (default: its own agent)."""
    out["visibility"] = "private"
    out["visible_to"] = list(agents if agents else [out.get("agent")])


def pairs(d: dict, key: str, value: str) -> list[dict]:
    """A version-1 mapping as the list of ``{key: k, value: v}`` records of version 2."""
    return [{key: k, value: v} for k, v in d.items()]
