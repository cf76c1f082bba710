"""A choice among fixed options read from the model's next-token distribution, not from generated text.

A small model asked for a JSON verdict picks letters close to at random; asked for one word, the probability
it gives each option's word is a usable judgement. The answer is one token, so it can only be one of the
options (or nothing usable, which is an error, never a guess).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

TOP_LOGPROBS = 20  # the most alternatives OpenAI-compatible servers return per position


class ChoiceScores(BaseModel):
    probabilities: dict[str, float] = Field(description="option -> probability, normalised over the options")
    mass: float = Field(description="probability the model put on the options' words at all")

    @property
    def best(self) -> str:
        """The most probable option (the first in option order on a tie)."""
        return max(self.probabilities, key=self.probabilities.__getitem__)


def option_scores(top: Mapping[str, float], options: Mapping[str, Sequence[str]]) -> ChoiceScores | None:
    """`top`: the first answer token's alternatives (token -> log-probability); `options`: option -> the words
    that mean it. A token counts for an option when it starts only that option's words ("loc" -> location);
    a token that starts words of two options ("o": organization, other) counts for neither."""
    words = {w.lower(): name for name, ws in options.items() for w in ws}
    mass: dict[str, float] = {}
    for token, logprob in top.items():
        piece = token.strip().lower()
        if not piece:
            continue
        owners = {name for word, name in words.items() if word.startswith(piece)}
        if len(owners) == 1:
            name = owners.pop()
            mass[name] = mass.get(name, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return ChoiceScores(probabilities={name: mass.get(name, 0.0) / total for name in options}, mass=min(1.0, total))
