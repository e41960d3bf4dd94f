from langchain_core.tools import tool


@tool
def word_count(text: str) -> int:
    """Counts the words of a text."""
    return len(text.split())
