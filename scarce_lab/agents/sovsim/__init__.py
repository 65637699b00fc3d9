"""SovSim agents: LLM agent (templates in ``prompts/``), scripted baselines, schemas."""

from .agent import AgentDecision, LLMAgent, ScriptedAgent, SovSimAgent, fallback_value, make_agent
from .prompts import LABEL_SETS, agent_names, render_messages
from .schemas import AnnouncementDecision, ExtractionDecision, extraction_schema
from .scripted import POLICIES, get_policy, sustainable_share

__all__ = [
    "AgentDecision",
    "AnnouncementDecision",
    "ExtractionDecision",
    "LABEL_SETS",
    "LLMAgent",
    "POLICIES",
    "ScriptedAgent",
    "SovSimAgent",
    "agent_names",
    "extraction_schema",
    "fallback_value",
    "get_policy",
    "make_agent",
    "render_messages",
    "sustainable_share",
]
