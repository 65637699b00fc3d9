"""Payload registration: the one place the trajectory format learns an environment.

An environment's event kinds (its payload models), what its ``round`` counts, the
counts a complete run holds and its version-1 migration are registered here by the
environment (:func:`register_payloads`); readers and writers look them up by the
manifest's ``environment`` (:func:`registration`). The format names no environment:
each registers through :func:`scarce_lab.registry.register` (the shipped ones from
their packages, ``scarce_lab.environments.<name>``; a package of its own declares it
under the entry-point group :data:`ENTRY_POINT_GROUP`), and the first lookup that
misses has the registry load them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .base import Payload, RoundCommitted

#: Entry-point group under which a package declares an environment (its spec or the
#: module that registers it); :mod:`scarce_lab.registry` loads the same group.
ENTRY_POINT_GROUP = "scarce_lab.environments"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class UnknownEnvironmentError(ValueError):
    """A manifest names an environment this version does not know."""


def _no_counts(config: dict) -> dict[str, int]:
    return {}


@dataclass(frozen=True)
class PayloadRegistration:
    """What the trajectory format knows of one environment.

    Attributes:
        environment: the name manifests carry (lower case, ``[a-z][a-z0-9_]*``).
        payloads: the environment's payload models (each with a ``kind`` literal default);
            :class:`~.base.RoundCommitted` is added by the format.
        round_meaning: what ``Event.round`` counts (one sentence).
        final_counts: ``manifest config -> {kind: count}`` a complete run holds (the
            check on complete runs recorded before manifests counted their events).
        migrate_v1: rewrites a version-1 event dict's ``(event, payload)`` in place as
            version 2; ``None`` for an environment born after version 1.
        view: ``view(dataset) -> object``, the environment's typed view of a
            :class:`~scarce_lab.data.loaders.Dataset` (``ds.<environment>``); ``None``:
            the environment has none.
    """

    environment: str
    payloads: tuple[type[Payload], ...]
    round_meaning: str
    final_counts: Callable[[dict], dict[str, int]] = _no_counts
    migrate_v1: Callable[[dict, dict], None] | None = None
    view: Callable[[Any], Any] | None = None

    def kinds(self) -> dict[str, type[Payload]]:
        """``kind -> payload model`` (``round_committed`` included)."""
        out: dict[str, type[Payload]] = {}
        for m in (*self.payloads, RoundCommitted):
            out[m.model_fields["kind"].default] = m
        return out


_REGISTERED: dict[str, PayloadRegistration] = {}
_discovered = False


def register_payloads(
    environment: str,
    payloads: tuple[type[Payload], ...],
    *,
    round_meaning: str,
    final_counts: Callable[[dict], dict[str, int]] | None = None,
    migrate_v1: Callable[[dict, dict], None] | None = None,
    view: Callable[[Any], Any] | None = None,
) -> PayloadRegistration:
    """Register ``environment``'s payload models and its dataset view (idempotent for
    the same objects; a registration without a view takes the view of another of the
    same payloads: an environment's events module registers them on import, its spec
    again with its view).

    Raises:
        ValueError: a name that is not ``[a-z][a-z0-9_]*``, no payload model, an empty
            ``round_meaning``, or ``environment`` already registered with other payloads
            (the name and both registrations' kinds are named).
        TypeError: a payload that is not a :class:`~.base.Payload` subclass with a
            string ``kind`` default, two models with one kind (``round_committed``
            is the format's own), or a ``view`` that is not callable.
    """
    if not isinstance(environment, str) or not _NAME.fullmatch(environment):
        raise ValueError(f"environment name {environment!r} must match [a-z][a-z0-9_]*")
    payloads = tuple(payloads)
    if not payloads:
        raise ValueError(f"{environment}: no payload model registered (payloads is empty)")
    if not isinstance(round_meaning, str) or not round_meaning.strip():
        raise ValueError(f"{environment}: round_meaning must say what Event.round counts, got {round_meaning!r}")
    seen: dict[str, str] = {"round_committed": "RoundCommitted (the format's own)"}
    for m in payloads:
        if not (isinstance(m, type) and issubclass(m, Payload)):
            raise TypeError(f"{environment}: payload {m!r} is not a scarce_lab.data.events.Payload subclass")
        kind = m.model_fields["kind"].default if "kind" in m.model_fields else None
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"{environment}: payload {m.__name__} has no string `kind` default")
        if kind in seen:
            raise TypeError(f"{environment}: payload models {seen[kind]} and {m.__name__} both use kind {kind!r}")
        seen[kind] = m.__name__
    if view is not None and not callable(view):
        raise TypeError(f"{environment}: view must be callable or None, got {view!r}")
    reg = PayloadRegistration(environment, payloads, round_meaning, final_counts or _no_counts, migrate_v1, view)
    old = _REGISTERED.get(environment)
    if old is not None and (old.view is None or view is None):  # a spec adding its view to its events' registration
        reg = replace(reg, view=view or old.view)
        old = replace(old, view=reg.view)
    if old is not None and old != reg:
        raise ValueError(f"environment {environment!r} is already registered with other payloads "
                         f"({sorted(old.kinds())} vs {sorted(reg.kinds())}); unregister it first")
    _REGISTERED[environment] = reg
    return reg


def unregister_payloads(environment: str) -> None:
    """Forget ``environment`` (tests that register a toy environment clean up with it)."""
    _REGISTERED.pop(environment, None)


def load_entry_point(ep: Any) -> Any:
    """What entry point ``ep`` (of :data:`ENTRY_POINT_GROUP`) loads.

    Raises:
        ImportError: loading it raised (a missing module, an error in the package);
            the message names the entry point, its value, its distribution and the
            error, so a broken plug-in is found by name.
    """
    try:
        return ep.load()
    except Exception as exc:
        dist = getattr(getattr(ep, "dist", None), "name", None)
        raise ImportError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}"
                          f"{', package ' + dist if dist else ''}) failed to load: "
                          f"{type(exc).__name__}: {exc}") from exc


def _discover() -> None:
    """Have every environment registered (once): the registry loads the shipped
    packages (``scarce_lab.environments.*``) and the installed entry points of
    :data:`ENTRY_POINT_GROUP` (:func:`scarce_lab.registry.load`), and registering a spec
    registers its payloads here. The one place the format reaches above itself, by the
    registry's module name: a reader that meets an environment it has no payloads for
    (a loader in a fresh process) asks the registry instead of failing."""
    global _discovered
    if _discovered:
        return
    import importlib

    importlib.import_module("scarce_lab.registry").load()
    _discovered = True  # only when the load finished: a failure is raised again next time


def registration(environment: str) -> PayloadRegistration:
    """The registration of ``environment``.

    Raises:
        UnknownEnvironmentError: no environment of that name is registered, also after
            loading the entry points (the known names are listed).
    """
    reg = _REGISTERED.get(environment)
    if reg is None:
        _discover()
        reg = _REGISTERED.get(environment)
    if reg is None:
        raise UnknownEnvironmentError(f"unknown environment {environment!r} (known: {sorted(_REGISTERED)})")
    return reg


def registered() -> list[str]:
    """The names of the environments whose payloads are registered, sorted."""
    _discover()
    return sorted(_REGISTERED)
