"""What every LLM stage shares: its model, its tool catalog, its prompt, one conversation.

The **catalog** is decided by the stage's declaration — its memory strategy,
its scratch memory, its rewrite capability — in one place, :func:`stage_tools`,
and the same list is what the model is offered and what the loop may execute.
A classic stage gets no tool and a single call; a topological stage gets
``cortex_memory_query``, a stage with scratch memory ``memory``, a
rewrite-capable stage ``propose_rewrite``, and a bounded tool loop. A prompt
mentions a tool only when that tool is in the catalog: the memory-tool and
rewrite-tool nudges are appended then and never otherwise.

Prompts are byte-stable: inputs are rendered as JSON with sorted keys, no
time or random value reaches a request, so recorded cassettes replay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool

from cortex_agents.errors import InvalidArgument, ModelUnavailable
from cortex_agents.memory._match import Match
from cortex_agents.memory._strategy import Topological
from cortex_agents.runtime._context import StageContext
from cortex_agents.scratch._connector import connector_from_config
from cortex_agents.stages._prompts import (
    MEMORY_NUDGE,
    REWRITE_NUDGE,
    load_prompt,
    prompt_for,
    render,
)
from cortex_agents.stages._structured import AnswerFormat, AnsweringModel, structured_form
from cortex_agents.stages._tool_turn_cap import (
    TOOL_TURN_MAX_TOKENS,
    ForcedTurnCap,
    check_tool_turn_cap,
)
from cortex_agents.tools._delimit import data_json, escape_text
from cortex_agents.tools._loop import ToolLoopResult, ToolPolicy, run_tool_loop
from cortex_agents.tools._memory_query import (
    DEFAULT_TOKEN_BUDGET,
    MEMORY_QUERY_TOOL,
    check_arguments,
    check_token_budget,
    make_memory_query_tool,
)
from cortex_agents.tools._propose_rewrite import PROPOSE_REWRITE_TOOL, make_propose_rewrite_tool
from cortex_agents.tools._scratch_tool import MEMORY_TOOL_NAME, make_memory_tool

__all__ = [
    "CHAT_MODEL",
    "MODEL_ADVICE",
    "TOOL_FORCE",
    "TOOL_RESEND_INVALID",
    "TOOL_TURN_MAX_TOKENS",
    "ModelUnavailable",
    "build_chat_model",
    "chat_model_from_env",
    "converse",
    "render_inputs",
    "render_matches_block",
    "stage_prompt",
    "stage_tools",
    "tool_policy",
]

CHAT_MODEL: Final = "chat_model"

_K = TypeVar("_K", bound=str)


def build_chat_model(
    *,
    model: str,
    base_url: str | None,
    api_key: str,
    seed: int = 7,
    max_tokens: int = 256,
    max_tokens_field: str = "max_completion_tokens",
    max_retries: int = 2,
    frequency_penalty: float | None = None,
) -> BaseChatModel:
    """``ChatOpenAI`` at temperature 0 with a fixed seed and an output cap.

    ``max_tokens_field="max_tokens"`` sends the cap in the older field, which
    llama.cpp's server reads (it ignores ``max_completion_tokens``).
    ``frequency_penalty`` (not sent when ``None``) keeps a small model from
    looping on one phrase until its cap cuts a tool call short.
    """
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    if max_tokens_field not in ("max_completion_tokens", "max_tokens"):
        raise InvalidArgument(
            "max_tokens_field", "must be 'max_completion_tokens' or 'max_tokens'", max_tokens_field
        )
    cap: dict[str, Any] = (
        {"max_tokens": max_tokens}
        if max_tokens_field == "max_completion_tokens"
        else {"extra_body": {"max_tokens": max_tokens}}
    )
    if frequency_penalty is not None:
        cap["frequency_penalty"] = frequency_penalty
    return ChatOpenAI(
        model=model,
        base_url=base_url or None,
        api_key=SecretStr(api_key),
        # Temperature 0 and a fixed seed: as repeatable as the provider allows, so
        # recordings and reruns stay close; the cassettes make replays exact.
        temperature=0,
        seed=seed,
        max_retries=max_retries,
        # Bounded: a turn never hangs a stage; minutes, for a small local model on a shared CPU.
        timeout=300,
        **cap,
    )


def chat_model_from_env(env: Mapping[str, str] | None = None) -> BaseChatModel | None:
    """``ChatOpenAI`` configured from the environment; ``None`` when neither a key nor a base URL is set.

    ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``CORTEX_MODEL`` (default
    ``gpt-4o-mini``), ``CORTEX_SEED``, ``CORTEX_MAX_TOKENS`` and
    ``CORTEX_MAX_TOKENS_FIELD`` (``max_tokens`` for llama.cpp's server).
    """
    env = os.environ if env is None else env
    key, base_url = env.get("OPENAI_API_KEY"), env.get("OPENAI_BASE_URL")
    if not key and not base_url:
        return None
    return build_chat_model(
        model=env.get("CORTEX_MODEL", "gpt-4o-mini"),
        base_url=base_url,
        # A local OpenAI-compatible server needs no key, but ChatOpenAI requires one.
        api_key=key or "sk-local",
        seed=int(env.get("CORTEX_SEED", "7")),
        max_tokens=int(env.get("CORTEX_MAX_TOKENS", "256")),
        max_tokens_field=env.get("CORTEX_MAX_TOKENS_FIELD", "max_completion_tokens"),
        max_retries=int(env.get("CORTEX_MAX_RETRIES", "2")),
    )


MODEL_ADVICE: Final = "model_advice"
"""Key of ``StageContext.extras`` holding how to give this stage a model (set by whoever runs it)."""
_RUNTIME_ADVICE: Final = "pass services={'chat_model': ...} to the Runtime"


def _model(ctx: StageContext) -> BaseChatModel:
    """The stage's chat model: the runtime's ``chat_model`` service, else one from the environment."""
    # An injected model wins over the environment, so tests and replays never
    # reach a provider configured in the shell.
    model = ctx.extras.get(CHAT_MODEL) or chat_model_from_env()
    if model is None:
        advice = ctx.extras.get(MODEL_ADVICE) or _RUNTIME_ADVICE
        raise ModelUnavailable(
            f"stage {ctx.stage_id!r} needs a chat model: set OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            f"OpenAI-compatible server), or {advice}"
        )
    return model


def stage_tools(
    ctx: StageContext, policy: ToolPolicy | None = None, *, propose: bool = True
) -> list[BaseTool]:
    """The stage's tool catalog: what its model sees and all it may run.

    Empty for a classic stage without scratch memory or rewrite capability,
    and for any stage whose tool policy (``policy``, else its config's)
    allows no tool round. ``propose=False`` leaves ``propose_rewrite`` out of
    a rewrite-capable stage's catalog (the stage decided not to rewrite this
    time); its other tools stay.

    Raises:
        InvalidArgument: ``config.memory_token_budget`` is not an integer in range, or
            ``config.memory_tool_arguments`` names no argument of the memory tool.
    """
    tools: list[BaseTool] = []
    if (policy or tool_policy(ctx)).max_rounds < 1:
        return tools
    if isinstance(ctx.strategy, Topological):
        budget = check_token_budget(
            ctx.config.get("memory_token_budget", DEFAULT_TOKEN_BUDGET),
            "config.memory_token_budget",
        )
        offered = check_arguments(
            ctx.config.get("memory_tool_arguments"), "config.memory_tool_arguments"
        )
        tools.append(make_memory_query_tool(ctx.memory.presets, budget=budget, arguments=offered))
    if ctx.scratch is not None:
        tools.append(make_memory_tool())
    if ctx.rewrites is not None and propose:
        tools.append(make_propose_rewrite_tool(ctx))
    return tools


TOOL_FORCE: Final = "tool_force"
"""Runtime service: how a tool named by a policy is forced (``ToolPolicy.force``) when the
stage's ``tools`` table does not say; ``required`` for llama.cpp's ``llama-server``."""
TOOL_RESEND_INVALID: Final = "tool_resend_invalid"
"""Runtime service: ``ToolPolicy.resend_invalid`` when the stage's ``tools`` table does not
say; ``wrapped`` for servers that parse the arguments of every call in the history."""


def tool_policy(ctx: StageContext) -> ToolPolicy:
    """The stage's tool policy from its config's ``tools`` table (``force``: else the service)."""
    raw = ctx.config.get("tools", {})
    if not isinstance(raw, Mapping):
        raise InvalidArgument("config.tools", "must be a table", raw)
    for name, service in (("force", TOOL_FORCE), ("resend_invalid", TOOL_RESEND_INVALID)):
        # The stage's own table wins: the runtime's service only fills what it leaves out.
        if name not in raw and (value := ctx.extras.get(service)) is not None:
            raw = {**raw, name: value}
    allowed = {
        "max_rounds",
        "first",
        "then",
        "empty_content",
        "max_calls_per_turn",
        "force",
        "resend_invalid",
    }
    if unknown := sorted(set(raw) - allowed):
        raise InvalidArgument(
            f"config.tools.{unknown[0]}", f"is not a tool policy field ({sorted(allowed)})", raw
        )
    try:
        return ToolPolicy(**raw)
    except InvalidArgument as exc:
        raise InvalidArgument(f"config.tools.{exc.field}", exc.rule, exc.value) from None


def render_inputs(inputs: Mapping[_K, Any]) -> str:
    """The stage's direct inputs, delimited as data (JSON that cannot close the tag)."""
    return f"<inputs>\n{data_json(dict(inputs))}\n</inputs>"


def render_matches_block(tag: str, matches: Sequence[Match]) -> str:
    """Recalled nodes as a delimited data block (empty when there are none)."""
    if not matches:
        return ""
    lines = [
        f"- {escape_text(m.node_id)} (key {escape_text(m.routing_key)}): {escape_text(m.body_text)}"
        for m in matches
    ]
    return f"<{tag}>\n" + "\n".join(lines) + f"\n</{tag}>"


def converse(
    ctx: StageContext,
    *,
    system: str,
    user: str,
    policy: ToolPolicy | None = None,
    propose: bool = True,
    answer: AnswerFormat[Any] | None = None,
) -> ToolLoopResult:
    """One stage's conversation: system prompt, user message, catalog-bound tool loop.

    ``answer`` is the stage's answer format: with structured output on (see
    :mod:`cortex_agents.stages._structured`), the answer turn asks for it as a
    response format, and a model that answered on a tool turn with text that
    does not parse is asked once more, in the format.

    A stage with scratch memory gets it rendered (by its ``scratch_connector``
    settings) into the messages of *every* model call, as it is at that
    moment: after the model writes to it, the next call shows the write.

    ``policy`` overrides the tool policy of the stage's config (a stage may
    decide at run time, e.g. to offer no tool at all); ``propose=False``
    leaves ``propose_rewrite`` out (see :func:`stage_tools`).

    A turn that forces a tool is capped at the runtime's
    :data:`~cortex_agents.stages._tool_turn_cap.TOOL_TURN_MAX_TOKENS` service
    when it is set (:class:`~cortex_agents.stages._tool_turn_cap.ForcedTurnCap`).

    Raises:
        InvalidArgument: the ``tool_turn_max_tokens`` service is not ``None`` or an
            integer >= 1 (and the stage's tool policy or memory settings are invalid,
            see :func:`stage_tools`).
    """
    policy = policy or tool_policy(ctx)
    tools = stage_tools(ctx, policy, propose=propose)
    names = {t.name for t in tools}
    folder = ctx.extras.get("prompts_dir")
    for name, nudge in ((MEMORY_QUERY_TOOL, MEMORY_NUDGE), (PROPOSE_REWRITE_TOOL, REWRITE_NUDGE)):
        if name in names:  # a prompt mentions a tool only when the tool is there
            system = f"{system.rstrip()}\n\n{load_prompt(nudge, folder=folder).strip()}"
    messages: list[BaseMessage] = [SystemMessage(system.strip()), HumanMessage(user.strip())]
    prepare = None
    if ctx.scratch is not None:  # the connector: the stage's scratch memory, as data
        connector = connector_from_config(ctx.config.get("scratch_connector"))
        scratch, tool = ctx.scratch, MEMORY_TOOL_NAME in names

        def prepare(
            transcript: list[BaseMessage],
        ) -> list[BaseMessage]:  # before every model call: memory as it is now
            return connector.inject(transcript, scratch, tool=tool)

    model = _model(ctx)
    form = structured_form(ctx.config, ctx.extras, model) if answer is not None else "off"
    response_format = answer.response_format(form) if answer is not None else None
    cap = check_tool_turn_cap(
        ctx.extras.get(TOOL_TURN_MAX_TOKENS), f"services.{TOOL_TURN_MAX_TOKENS}"
    )
    driven: Any = model if cap is None else ForcedTurnCap(model, cap)
    answering = AnsweringModel(driven, response_format) if response_format else None
    result = run_tool_loop(
        answering or driven,
        messages,
        tools=tools,
        context=ctx,
        policy=policy,
        journal=ctx.record,
        prepare=prepare,
    )
    if answering is None or answering.answered or answer is None:
        return result
    # A tool-turn answer that already parses is kept: asking again would spend a
    # turn and change the recorded exchange.
    if answer.parse(str(result.message.content)) is not None:
        return result
    # It answered on a tool turn, where no format can be asked: ask for the answer in it.
    transcript = list(result.messages)
    reply = answering.invoke(prepare(transcript) if prepare is not None else transcript)
    return ToolLoopResult(reply, [*transcript, reply], result.calls)


def stage_prompt(ctx: StageContext, **values: object) -> str:
    """The stage's system prompt, rendered."""
    strategy = "topological" if isinstance(ctx.strategy, Topological) else "classic"
    folder = ctx.extras.get("prompts_dir")
    return render(prompt_for(ctx.kind, strategy, folder=folder), **values)
