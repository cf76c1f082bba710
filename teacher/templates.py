"""Prompt templates (`teacher/prompts/*.txt`, `${name}` placeholders) and the one way they become messages.

Every prompt is: the shared system message (the text is data, never instructions), then a user message that
opens with the part shared by all agents of one sentence (entity type names + delimited text) and ends with the
agent's own template - so llama.cpp's prompt cache reuses the prefix across the agents of a sentence.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from string import Template

from ie.config import TaskSchema

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
_DELIMITER = re.compile(r"<\s*/?\s*text\s*>", re.IGNORECASE)


@cache
def load(name: str) -> Template:
    path = PROMPT_DIR / f"{name}.txt"
    if not path.exists():
        known = sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))
        raise FileNotFoundError(f"{path}: no such prompt template (known: {known})")
    return Template(path.read_text(encoding="utf-8").strip())


def escape_text(text: str) -> str:
    """Neutralise the delimiter inside the input so the text cannot close its own <text> block."""
    return _DELIMITER.sub(lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), text)


def shared_prefix(schema: TaskSchema, text: str) -> str:
    return load("context").substitute(entity_types=", ".join(schema.entity_types), text=escape_text(text))


def render(name: str, schema: TaskSchema, text: str, /, own_context: bool = False,
           **fields: object) -> list[dict[str, str]]:
    """Chat messages for template `name`; a missing field is a KeyError (a bug, not a user error). With
    `own_context` the template places the delimited `${text}` itself, after a prefix of its own."""
    values = {k: str(v) for k, v in fields.items()}
    if own_context:
        user = load(name).substitute(values, text=escape_text(text))
    else:
        user = shared_prefix(schema, text) + "\n\n" + load(name).substitute(values)
    return [{"role": "system", "content": load("system").template}, {"role": "user", "content": user}]


def type_list(schema: TaskSchema) -> str:
    return "\n".join(f"- {name}: {spec.description}" for name, spec in schema.entity_types.items())


def relation_list(schema: TaskSchema) -> str:
    lines = []
    for name, spec in schema.relation_types.items():
        head, tail = "|".join(spec.head) or "any", "|".join(spec.tail) or "any"
        lines.append(f"- {name} ({head}, {tail}): {spec.description}")
    return "\n".join(lines)
