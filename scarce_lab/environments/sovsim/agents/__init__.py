"""SovSim agents: LLM agent (templates in ``prompts/``), scripted baselines, schemas."""

from .agent import AgentDecision, LLMAgent, ScriptedAgent, SovSimAgent, fallback_value, make_agent
from .prompts import LABEL_SETS, agent_names, render_messages, render_talk_messages
from .schemas import (
    AnnouncementDecision,
    ExtractionDecision,
    TalkDecision,
    extraction_schema,
    talk_schema,
)
from .scripted import POLICIES, TALK_POLICIES, get_policy, sustainable_share, talk_policy

__all__ = [
    "AgentDecision",
    "AnnouncementDecision",
    "ExtractionDecision",
    "LABEL_SETS",
    "LLMAgent",
    "POLICIES",
    "TALK_POLICIES",
    "ScriptedAgent",
    "TalkDecision",
    "SovSimAgent",
    "agent_names",
    "extraction_schema",
    "fallback_value",
    "get_policy",
    "make_agent",
    "render_messages",
    "render_talk_messages",
    "sustainable_share",
    "talk_policy",
    "talk_schema",
]
