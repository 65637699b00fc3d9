"""Seats and the newcomer of an Economy of Minds run (``seats``, ``newcomer`` in
:class:`~scarce_lab.environments.economy.config.EconomyRunConfig`).

A run with seats gives each founding agent the policy and model of its seat
(:meth:`~scarce_lab.environments.economy.config.EconomyRunConfig.resolved_seats`: founder id, then
its role, then ``*``, then the config's ``model`` / ``llm``); the economy itself is
unchanged. Who runs what:

- founder ``a<i>``: its own seat ``a<i>``. Its genome is the ``i``-th founder of its
  seat's policy, drawn from the founders' seed ``{seed}:founders`` as in a run without
  seats; the founders' bids come from that seed after the run's default policy drew its
  founders, so a run whose every seat is the default plays exactly as the run without
  seats (tested);
- offspring (children, replacements) and the economy's exploration newcomers: the seat
  rule of :mod:`scarce_lab.environments.economy.world.core` ("Seats"; ``*`` is the config's
  ``model`` where not given); an offspring's mutation or repair is its parent's seat's;
- the run's newcomer (``newcomer: {episode: k}``) runs seat ``newcomer`` and joins at
  the start of training episode ``k`` (:func:`join_newcomer`; the rule and its source:
  :class:`~scarce_lab.environments.economy.config.EconomyNewcomer`).

Every seat's policy is built once; seats with equal settings share one. All model
seats share one model client (one cache, one budget). An agent's prompt is its own
genome and the task's notes: it names no model, no seat and no other agent's bid.
"""

from __future__ import annotations

import random
from typing import Any

from scarce_lab.config.seats import SeatSettings

from .. import events as ev
from ..config import NEWCOMER_SEAT, EconomyRunConfig, _bare
from ..world.core import birth_record
from ..world.qa import CAPABILITIES
from .record import emit_birth

#: The seat of agents of no founder's lineage (exploration newcomers).
ANY_SEAT = "*"


class SeatedPolicy:
    """The agent layer of a run with seats: each call goes to the policy of the agent's
    seat (:attr:`~scarce_lab.environments.economy.world.core.AgentRecord.seat`; ``None`` -> ``*``).

    Attributes:
        settings: seat -> resolved settings (as sent: the manifest records them).
        policies: seat -> its policy object.
        default: the policy of the config's own ``model`` (it draws the founders' seed
            first, so the founders' bids are those of a run without seats).
    """

    def __init__(self, settings: dict[str, SeatSettings], policies: dict[str, Any], default: Any):
        self.settings = settings
        self.policies = policies
        self.default = default

    def of(self, seat: str | None) -> Any:
        """The policy of ``seat`` (``None``: the ``*`` seat).

        Raises:
            KeyError: a seat this run has none for (a bug: seats come from the config).
        """
        return self.policies[ANY_SEAT if seat is None else seat]

    def distinct(self) -> list[Any]:
        """Each policy object once (for settings every policy needs, e.g. the episode)."""
        return list({id(p): p for p in self.policies.values()}.values())

    def ops_for(self, seat: str | None) -> tuple[Any, Any]:
        """``(mutate, repair)`` of ``seat``'s policy (for
        :meth:`~scarce_lab.environments.economy.world.core.Economy.end_episode`)."""
        p = self.of(seat)
        return p.mutate, getattr(p, "repair", None)


def layer_of(policy: Any) -> tuple[Any, list[Any], SeatedPolicy | None]:
    """``(of, layers, seated)`` of a runner's agent layer: ``of(record)`` is the layer that
    decides for an agent record (its seat's in a run with seats), ``layers`` each layer
    once, ``seated`` the :class:`SeatedPolicy` or ``None`` (a run without seats)."""
    if isinstance(policy, SeatedPolicy):
        return (lambda a: policy.of(a.seat)), policy.distinct(), policy
    return (lambda a: policy), [policy], None


def seat_generation(cfg: EconomyRunConfig, seat: SeatSettings | None, settings: dict) -> tuple[str, Any]:
    """``(model name, Generation)`` for the agent layer of ``seat`` (``None``: the
    config's model with ``llm.temperature`` / ``llm.reasoning_effort``, as recorded); sets the
    seat's ``max_tokens`` into the policy ``settings``."""
    from scarce_lab.llm.model import Generation

    if seat is None:  # the recorded llm.* sent explicitly (a caller's client may hold other defaults)
        return cfg.model, Generation(temperature=cfg.llm.temperature, reasoning_effort=cfg.llm.reasoning_effort)

    if seat.max_tokens is not None:
        settings["max_tokens"] = seat.max_tokens
    return seat.model or cfg.model, Generation(temperature=seat.temperature, reasoning_effort=seat.reasoning_effort)


def make_seated_policy(cfg: EconomyRunConfig, default_policy: Any, make_policy, *, client=None,
                       record_calls=lambda calls: None, llm_kwargs: dict | None = None) -> SeatedPolicy:
    """The :class:`SeatedPolicy` of ``cfg`` (a run with seats or a newcomer): a seat whose
    settings are the config's default uses ``default_policy``; any other gets its own
    (one per distinct settings, from ``make_policy(cfg, ..., seat=settings)``: the
    runner's :func:`~scarce_lab.environments.economy.runner.play.make_policy`), over one shared client.

    Raises:
        ValueError: ``llm_kwargs`` sets ``max_tokens`` other than the seats' recorded
            value (the condition would record a setting that was not sent), or a seat's
            model cannot play the task (from :func:`~scarce_lab.environments.economy.runner.play.make_policy`).
    """
    from scarce_lab.llm import make_client

    asked = int((llm_kwargs or {}).get("max_tokens", cfg.llm.max_tokens))  # a seat without max_tokens sends llm's
    if asked != cfg.llm.max_tokens:
        raise ValueError(f"llm_kwargs max_tokens={asked} with seats: set the answer tokens "
                         "per seat (seats.<seat>.max_tokens), so the manifest records what is sent")
    settings = cfg.resolved_seats()
    default = cfg.seat_default()
    shared: list[Any] = [client]

    def the_client():
        if shared[0] is None:
            shared[0] = make_client(cfg.llm)
        return shared[0]

    built: dict[str, Any] = {}
    policies: dict[str, Any] = {}
    default_key = _bare(default).model_dump_json()
    for seat, s in settings.items():
        key = s.model_dump_json()
        if key not in built:
            if key == default_key:
                built[key] = default_policy
            else:
                from scarce_lab.llm.models import resolve_model

                needs = resolve_model(s.model or cfg.model).kind != "scripted"
                built[key] = make_policy(cfg, client=the_client() if needs else None, record_calls=record_calls,
                                         llm_kwargs=llm_kwargs, seat=s)
        policies[seat] = built[key]
    return SeatedPolicy(settings, policies, default_policy)


def seated_founders(cfg: EconomyRunConfig, economy, rec, seated: SeatedPolicy):
    """Add the founders of a run with seats (see the module docstring) to ``economy``,
    record their births, and return ``economy``.

    Raises:
        RuntimeError: a founder's role is not the one its seat key was checked against
            (the config's :meth:`~scarce_lab.environments.economy.config.EconomyRunConfig.founder_role`
            and the policy's founders disagree: a bug, never a silent reseat).
    """
    frng = random.Random(f"{cfg.seed}:founders")
    seated.default.founders(cfg.agents, frng)  # the bids follow the default's draw, as without seats
    lists: dict[int, list] = {}
    for i, agent in enumerate(cfg.founder_ids()):
        p = seated.of(agent)
        if id(p) not in lists:
            lists[id(p)] = p.founders(cfg.agents, random.Random(f"{cfg.seed}:founders"))
        genome = lists[id(p)][i]
        role = cfg.founder_role(i)
        if role is not None and getattr(genome, "capability", None) != role:
            raise RuntimeError(f"founder {agent}: its genome's role {getattr(genome, 'capability', None)!r} is not "
                               f"{role!r}, the role its seat was resolved with")
        bid = frng.randint(cfg.founder_bid_min, cfg.founder_bid_max)
        a, tr = economy.add_agent(genome, episode=0, origin="founder", bid=bid, seat=agent)
        if a.agent_id != agent:
            raise RuntimeError(f"founder {i} got id {a.agent_id!r}, not {agent!r}")
        emit_birth(rec, birth_record(a, tr), p.genome_json(genome), 0)
    return economy


def join_newcomer(cfg: EconomyRunConfig, economy, rec, seated: SeatedPolicy, rnd: int) -> str:
    """The run's newcomer joins at the start of training episode ``rnd``, by the rule of
    :class:`~scarce_lab.environments.economy.config.EconomyNewcomer` (its seat's policy
    makes the genome). Records ``agent_joined`` then its ``birth`` (origin ``joined``).
    Returns its agent id."""
    nc = cfg.newcomer
    rng = random.Random(f"{cfg.seed}:newcomer")
    policy = seated.of(NEWCOMER_SEAT)
    if nc.role is None:
        genome = policy.newcomer(rng)
    else:  # the founders' genome of that capability (founders cycle through the capabilities)
        genome = next((g for g in policy.founders(len(CAPABILITIES), rng)
                       if getattr(g, "capability", None) == nc.role), None)
        if genome is None:
            raise RuntimeError(f"newcomer.role {nc.role!r}: its seat's policy has no founder of that role")
    bid = nc.bid if nc.bid is not None else rng.randint(1, max(1, economy.max_bid()))
    a, tr = economy.add_agent(genome, episode=rnd, origin="joined", bid=bid, seat=NEWCOMER_SEAT,
                              endowment=nc.wealth)
    rec.emit(ev.AgentJoined(episode=rnd, seat=NEWCOMER_SEAT), round=rnd, phase="train", agent=a.agent_id)
    emit_birth(rec, birth_record(a, tr), policy.genome_json(genome), rnd)
    return a.agent_id


def seat_manifest(cfg: EconomyRunConfig) -> tuple[dict[str, str], dict[str, Any]]:
    """``(models, notes)`` for the manifest: with seats or a newcomer, ``models`` maps each
    seat (founder ids, ``newcomer``, ``*``) to its model and ``notes['seats']`` holds the
    composition label and every seat's settings as sent; ``({}, {})`` otherwise (the
    manifest of a run without them is unchanged)."""
    if cfg.seats is None and cfg.newcomer is None:
        return {}, {}
    settings = cfg.resolved_seats()
    models = {seat: s.model or cfg.model for seat, s in settings.items()}
    notes = {"composition": cfg.composition(),
             "agents": {seat: s.model_dump(exclude_none=True) for seat, s in settings.items()},
             "inheritance": "offspring run their parent's seat; exploration newcomers run '*'"}
    if cfg.newcomer is not None:
        notes["newcomer"] = cfg.newcomer.model_dump()
    return models, {"seats": notes}
