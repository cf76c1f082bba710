"""Salvaging an answer cut off at `max_tokens` (pure): keep its complete list items (objects, lists or strings),
close what is open.

A cut-off answer rarely heals when re-asked (the model writes the same long list again), so before re-asking,
the client tries the prefixes that end right after a complete element of an array (or right after an array
opens), every still-open bracket closed, longest first, and keeps the first that validates like any answer;
an answer no prefix makes valid still goes the usual re-ask way.
"""
from __future__ import annotations

_CLOSE = {"[": "]", "{": "}"}


def salvage_candidates(raw: str) -> list[str]:
    """Every closed prefix, longest first: where the longest is not valid (a fixed-length list cut inside, like a
    relation's argument pair), a shorter one may be. Empty when nothing can be cut or the brackets do not match."""
    stack: list[str] = []
    in_string = escaped = False
    cuts: list[tuple[int, list[str]]] = []
    for i, ch in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if stack and stack[-1] == "[":  # a complete string item
                    cuts.append((i + 1, list(stack)))
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSE:
            stack.append(ch)
            if ch == "[":
                cuts.append((i + 1, list(stack)))
        elif ch in "]}":
            if not stack or _CLOSE[stack.pop()] != ch:
                return []
            if stack and stack[-1] == "[":
                cuts.append((i + 1, list(stack)))
    if not stack:  # the text was complete: its error is another one
        return []
    return [raw[:end] + "".join(_CLOSE[b] for b in reversed(open_)) for end, open_ in reversed(cuts)]
