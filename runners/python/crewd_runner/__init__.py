"""The crewd Python runner: runs a CrewAI crew or flow, or a LangGraph graph, over crewd's runner protocol."""

__version__ = "0.1.0"
