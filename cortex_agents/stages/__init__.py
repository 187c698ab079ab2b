"""LLM stage kinds (planner, analyst, merge, reviewer, rewriter), their prompts and outputs."""

from cortex_agents.stages._kinds import KINDS, analyst, merge, planner, reviewer, rewriter
from cortex_agents.stages._llm import (
    CHAT_MODEL,
    ModelUnavailable,
    chat_model_from_env,
    converse,
    stage_tools,
)
from cortex_agents.stages._outputs import (
    Analysis,
    Branch,
    Merged,
    Plan,
    Report,
    Review,
    parse_output,
)
from cortex_agents.stages._prompts import load_prompt, prompt_for, render
from cortex_agents.stages._structured import STRUCTURED_OUTPUT, AnswerFormat, structured_form

__all__ = [
    "CHAT_MODEL",
    "KINDS",
    "STRUCTURED_OUTPUT",
    "Analysis",
    "AnswerFormat",
    "Branch",
    "Merged",
    "ModelUnavailable",
    "Plan",
    "Report",
    "Review",
    "analyst",
    "chat_model_from_env",
    "converse",
    "load_prompt",
    "merge",
    "parse_output",
    "planner",
    "prompt_for",
    "render",
    "reviewer",
    "rewriter",
    "stage_tools",
    "structured_form",
]
