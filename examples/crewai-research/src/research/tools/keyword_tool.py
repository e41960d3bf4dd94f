from pydantic import BaseModel, Field

from crewai.tools import BaseTool


class KeywordExtractorInput(BaseModel):
    """Input schema for KeywordExtractor."""

    text: str = Field(..., description="The text to take keywords from.")


class KeywordExtractor(BaseTool):
    name: str = "Keyword Extractor"
    description: str = "Lists the distinct words of a text longer than three letters, in order, lower-cased."
    args_schema: type[BaseModel] = KeywordExtractorInput

    def _run(self, text: str) -> str:
        seen = []
        for word in text.lower().replace(",", " ").replace(".", " ").split():
            if len(word) > 3 and word not in seen:
                seen.append(word)
        return ", ".join(seen) or "(no keywords)"
