"""CrewAI's event bus, mapped to crewd events (CONTRACTS §9)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonsafe import to_jsonable
from .usage import from_openai_names

# A crewd event: its type and data.
Event = tuple[str, dict[str, Any]]
# What turns one CrewAI event (its source, the event) into a crewd event.
Mapper = Callable[[Any, Any], Event]


def _clean(text: Any) -> Any:
    # YAML's folded `>` blocks leave a trailing newline on roles and descriptions.
    return text.strip() if isinstance(text, str) else text


def task_label(task: Any) -> Any:
    if task is None:
        return None
    return _clean(getattr(task, "name", None) or getattr(task, "description", None))


def agent_role(agent: Any) -> Any:
    return _clean(getattr(agent, "role", None)) if agent is not None else None


def _task_agent(event: Any) -> tuple[Any, Any]:
    task = getattr(event, "task", None)
    role = agent_role(getattr(task, "agent", None)) or _clean(getattr(event, "agent_role", None))
    return task_label(task) or _clean(getattr(event, "task_name", None)), role


def on_task_started(_source: Any, event: Any) -> Event:
    task, agent = _task_agent(event)
    return "task.started", {"task": task, "agent": agent}


def on_task_completed(_source: Any, event: Any) -> Event:
    task, agent = _task_agent(event)
    output = getattr(event, "output", None)
    return "task.completed", {"task": task, "agent": agent, "output": getattr(output, "raw", output)}


def on_task_failed(_source: Any, event: Any) -> Event:
    task, agent = _task_agent(event)
    return "task.failed", {"task": task, "agent": agent, "error": str(event.error)}


def on_agent_started(_source: Any, event: Any) -> Event:
    return "agent.action", {
        "agent": agent_role(event.agent),
        "action": "started",
        "task": task_label(event.task),
        "tools": [getattr(tool, "name", str(tool)) for tool in event.tools or []],
    }


def on_agent_completed(_source: Any, event: Any) -> Event:
    return "agent.action", {
        "agent": agent_role(event.agent),
        "action": "finished",
        "task": task_label(event.task),
        "output": event.output,
    }


def on_agent_error(_source: Any, event: Any) -> Event:
    return "agent.action", {
        "agent": agent_role(event.agent),
        "action": "failed",
        "task": task_label(event.task),
        "error": event.error,
    }


def _tool_agent(source: Any, event: Any) -> Any:
    for holder in (event, source):
        for name in ("agent", "from_agent"):
            role = agent_role(getattr(holder, name, None))
            if role:
                return role
    return _clean(event.agent_role)


def _tool_name(event: Any) -> str:
    # CrewAI names a tool as the model wrote it when it starts and sanitized when it ends: one name for both.
    from crewai.utilities.string_utils import sanitize_tool_name

    return sanitize_tool_name(event.tool_name)


def on_tool_started(source: Any, event: Any) -> Event:
    return "tool_use", {"tool": _tool_name(event), "input": event.tool_args, "agent": _tool_agent(source, event)}


def on_tool_finished(source: Any, event: Any) -> Event:
    return "tool_use", {"tool": _tool_name(event), "output": event.output, "agent": _tool_agent(source, event)}


def on_tool_error(source: Any, event: Any) -> Event:
    return "tool_use", {"tool": _tool_name(event), "error": str(event.error), "agent": _tool_agent(source, event)}


def on_llm_completed(_source: Any, event: Any) -> Event:
    data: dict[str, Any] = {"model": event.model}
    usage = from_openai_names(event.usage)
    if usage is not None:
        data["usage"] = usage
    role = agent_role(getattr(event, "from_agent", None)) or _clean(getattr(event, "agent_role", None))
    if role:
        data["agent"] = role
    # The task the call was made for: usage per task, and the call's span under its task's.
    task = task_label(getattr(event, "from_task", None)) or _clean(getattr(event, "task_name", None))
    if task:
        data["task"] = task
    return "llm.call", data


def on_method_started(_source: Any, event: Any) -> Event:
    return "task.started", {"task": event.method_name, "flow": event.flow_name}


def on_method_finished(_source: Any, event: Any) -> Event:
    return "task.completed", {"task": event.method_name, "flow": event.flow_name, "output": event.result}


def on_method_failed(_source: Any, event: Any) -> Event:
    return "task.failed", {"task": event.method_name, "flow": event.flow_name, "error": str(event.error)}


def handlers() -> list[tuple[type, Mapper]]:
    """(event class, mapper) pairs; imported here so that the runner's core never imports CrewAI."""
    from crewai.events.types import agent_events, flow_events, llm_events, task_events, tool_usage_events

    return [
        (task_events.TaskStartedEvent, on_task_started),
        (task_events.TaskCompletedEvent, on_task_completed),
        (task_events.TaskFailedEvent, on_task_failed),
        (agent_events.AgentExecutionStartedEvent, on_agent_started),
        (agent_events.AgentExecutionCompletedEvent, on_agent_completed),
        (agent_events.AgentExecutionErrorEvent, on_agent_error),
        (tool_usage_events.ToolUsageStartedEvent, on_tool_started),
        (tool_usage_events.ToolUsageFinishedEvent, on_tool_finished),
        (tool_usage_events.ToolUsageErrorEvent, on_tool_error),
        (llm_events.LLMCallCompletedEvent, on_llm_completed),
        (flow_events.MethodExecutionStartedEvent, on_method_started),
        (flow_events.MethodExecutionFinishedEvent, on_method_finished),
        (flow_events.MethodExecutionFailedEvent, on_method_failed),
    ]


def jsonable_event(mapper: Mapper, source: Any, event: Any) -> Event:
    event_type, data = mapper(source, event)
    return event_type, to_jsonable(data)
