"""ACP prompt content as text, for providers whose backend takes text (and perhaps images).

Owns the one way resources in a prompt are quoted: an embedded text resource as
`<context ref="uri">…</context>`, a link as an `@`-mention. Knows ACP content blocks, no vendor:
each provider maps the parts this returns to its backend's own input shape.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from acp_agent.wire.acp import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from acp_agent.wire.records import frozen

PromptPart = str | ImageContent | AudioContent
"""Text, or media passed through as the client sent it (a backend without media drops it)."""


@frozen
class TextStyle:
    """How a backend likes resources mentioned; the defaults are codex-acp's.

    `links`: "markdown" writes every link `[@name](uri)`; "file_paths" writes a `file://` link as
    `@path` and any other as markdown; "paths" writes every link `@path` (`file://` dropped).
    `mention_embedded`: an embedded text resource is preceded by its own `@path` mention.
    `binary_links`: an embedded binary resource becomes a `[@basename](uri)` link (else dropped).
    """

    links: Literal["markdown", "file_paths", "paths"] = "markdown"
    mention_embedded: bool = False
    binary_links: bool = True


def prompt_parts(prompt: Sequence[ContentBlock], style: TextStyle) -> list[PromptPart]:
    """The prompt's blocks in order, each text block or resource as its own text part."""
    parts: list[PromptPart] = []
    for block in prompt:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            parts.append(block)
        elif isinstance(block, ResourceLink):
            parts.append(_link(block.name, block.uri, style))
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                if style.mention_embedded:
                    parts.append(f"@{_path(resource.uri)}")
                parts.append(context_text(resource.uri, resource.text))
            elif style.binary_links:
                parts.append(markdown_link(os.path.basename(resource.uri) or resource.uri, resource.uri))
    return parts


def prompt_payload(prompt: Sequence[ContentBlock], style: TextStyle, text: Callable[[str], dict[str, Any]],
                   image: Callable[[ImageContent], dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt in a backend's input shape: each text part as `text(part)`, each image as
    `image(part)`; audio, which no built-in backend takes, is left out."""
    return [text(part) if isinstance(part, str) else image(part)
            for part in prompt_parts(prompt, style) if not isinstance(part, AudioContent)]


def context_text(uri: str, text: str) -> str:
    """An embedded text resource, quoted so the model sees where it came from."""
    return f'<context ref="{uri}">\n{text}\n</context>'


def markdown_link(name: str, uri: str) -> str:
    return f"[@{name}]({uri})"


def _link(name: str, uri: str, style: TextStyle) -> str:
    if style.links == "paths" or (style.links == "file_paths" and uri.startswith("file://")):
        return f"@{_path(uri)}"
    return markdown_link(name, uri)


def _path(uri: str) -> str:
    return uri.removeprefix("file://")
