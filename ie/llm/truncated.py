"""Salvaging an answer cut off at `max_tokens` (pure): keep its complete list items, close what is open.

A cut-off answer rarely heals when re-asked (the model writes the same long list again), so before re-asking,
the client tries the longest prefix that ends right after a complete element of an array (or right after an
array opens), with every still-open bracket closed. The result is validated like any answer; whatever the
salvage cannot make valid still goes the usual re-ask way.
"""
from __future__ import annotations

_CLOSE = {"[": "]", "{": "}"}


def salvage(raw: str) -> str | None:
    """The closed prefix, or None when the text has no array to cut in or its brackets do not match."""
    stack: list[str] = []
    in_string = escaped = False
    best: tuple[int, list[str]] | None = None
    for i, ch in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSE:
            stack.append(ch)
            if ch == "[":
                best = (i + 1, list(stack))
        elif ch in "]}":
            if not stack or _CLOSE[stack.pop()] != ch:
                return None
            if stack and stack[-1] == "[":
                best = (i + 1, list(stack))
    if best is None or not stack:  # nothing to cut, or the text was complete (its error is another one)
        return None
    end, open_ = best
    return raw[:end] + "".join(_CLOSE[b] for b in reversed(open_))
