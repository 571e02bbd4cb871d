"""The one prompt-to-text conversion, in each of the styles the built-in providers use."""

from __future__ import annotations

from acp_agent.wire.acp import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from acp_agent.wire.prompt import TextStyle, prompt_parts

IMAGE = ImageContent(data="aGk=", mime_type="image/png")
AUDIO = AudioContent(data="AAAA", mime_type="audio/wav")
PROMPT = [
    TextContent("look"), IMAGE, AUDIO,
    ResourceLink(uri="file:///w/a.py", name="a.py"),
    ResourceLink(uri="https://example.test/doc", name="doc"),
    EmbeddedResource(TextResourceContents(uri="file:///w/b.py", text="print(1)")),
    EmbeddedResource(BlobResourceContents(uri="file:///w/c.png", blob="AAAA")),
]
CONTEXT = '<context ref="file:///w/b.py">\nprint(1)\n</context>'


def test_markdown_links_are_the_default() -> None:
    assert prompt_parts(PROMPT, TextStyle()) == [
        "look", IMAGE, AUDIO, "[@a.py](file:///w/a.py)", "[@doc](https://example.test/doc)", CONTEXT,
        "[@c.png](file:///w/c.png)"]


def test_file_links_as_paths_other_links_as_markdown() -> None:
    assert prompt_parts(PROMPT, TextStyle(links="file_paths")) == [
        "look", IMAGE, AUDIO, "@/w/a.py", "[@doc](https://example.test/doc)", CONTEXT, "[@c.png](file:///w/c.png)"]


def test_every_link_and_embedded_text_as_a_path_mention_and_no_binaries() -> None:
    style = TextStyle(links="paths", mention_embedded=True, binary_links=False)
    assert prompt_parts(PROMPT, style) == [
        "look", IMAGE, AUDIO, "@/w/a.py", "@https://example.test/doc", "@/w/b.py", CONTEXT]

