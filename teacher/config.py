"""The teacher's one typed config: the dataset file's `teacher:` section, then command-line overrides.

Every field becomes a `--flag` (underscores as dashes) with its `help` (`ie.cli`); `__post_init__` rejects bad
values with a message naming the field and the fix, before any server starts.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ie import cli
from ie.cli import opt
from ie.config import ConfigError, check_field_types
from ie.llm.client import STRUCTURED_OUTPUTS, Timeouts
from ie.scoring import RE_MODES
from teacher.method_names import METHOD_NAMES

SUMMARIZERS = ("generate", "likelihood")
# Former `teacher:` keys and their place in the `mentions:` section: a config still using one is refused, pointing
# there, so teacher and student apply the same mention rules (ie.mentions.MentionProfile).
MOVED = {"require_capital_or_digit": "mentions.require_capital_or_digit", "max_mention_words": "mentions.max_words"}
ROUTING = ("off", "auto", "on")
ROUTERS = ("answer", "likelihood", "menu")


@dataclass
class TeacherConfig:
    config: str = opt("configs/conll04.yaml", "dataset config (schema + splits), or just its name")
    split: str | None = opt(None, "dataset split to label (exclusive with --input)")
    input: str | None = opt(None, "file to label: .jsonl records, .txt one sentence a line, .json SpERT")
    method: str = opt("crossagentie", "labelling method (see teacher.methods.METHODS)")
    limit: int | None = opt(None, "label only the first N records (after --offset)")
    offset: int = opt(0, "skip the first N records (a fresh slice after the ones settings were chosen on)")
    out: str | None = opt(None, "output folder (default runs/<method>)")
    model: str | None = opt(None, "embedded llama.cpp model: catalogue name or GGUF path (default: catalogue's)")
    endpoint: str | None = opt(None, "OpenAI-compatible base URL; no endpoint = embedded llama.cpp server")
    model_name: str | None = opt(None, "model name at --endpoint")
    api_key_env: str | None = opt(None, "NAME of the env var holding the endpoint's API key")
    structured_output: str = opt("json_schema", "how --endpoint is asked for JSON: json_schema (response_format; "
                                 "OpenAI, vLLM) or llguidance (llama.cpp's grammar field: compact JSON)")
    context_tokens: int | None = opt(None, "context tokens of one request where the server reports none "
                                     "(llama.cpp's /props does; this may narrow it): longer texts go in windows")
    window_tokens: int = opt(128, "estimated tokens of text in one window of a text too long for the context "
                             "(fewer if the context leaves fewer): an answer holds at most 10 items")
    concurrency: int = opt(2, "records labelled at once (match the server's parallel slots)")
    max_rounds: int = opt(0, "cross-type debate rounds before the summarizer decides (one round cost the 0.5B "
                          "and the 1.5B NER F1 at about twice the tokens)")
    summarizer: str = opt("likelihood", "how open entity conflicts are decided: likelihood (the most probable type "
                          "word of each option's span; a span the endpoint cannot score, no top_logprobs, gets the "
                          "written verdict) or generate (always a written verdict from the agents' reasons)")
    extent_check_words: int = opt(0, "crossagentie: put each settled mention of at least this many words back "
                                  "to a type agent for the name inside it (0 = off)")
    extent_instruction: str = opt("Copy from it only the ${word} itself: leave out the words around it that are "
                                  "not part of the ${word}.", "what the name extent check asks for (${word}: the "
                                  "type's answer word)")
    check_uncontested: bool = opt(False, "crossagentie: the likelihood Summarizer also scores each mention only "
                                  "one agent listed: kept, dropped (\"none\") or retyped by its most probable answer")
    judge_none: str = opt("none of these types", "what the likelihood judge's option 'none' is said to mean")
    cross_task_rounds: int = opt(2, "NER<->RE feedback rounds")
    seed: int = opt(0, "base seed for sampling and speaking order")
    routing: str = opt("auto", "crossagentie: a cheap step first picks the entity and relation types in the "
                       "sentence (see --route-by), and only their type agents are called: off, on, or auto (on "
                       "when the schema has at least --route-min-types types)")
    route_min_types: int = opt(16, "routing auto: route when the schema has at least this many entity plus "
                               "relation types (NYT's 25 route; CoNLL04's 9 and SciERC's 13 call every agent)")
    route_by: str = opt("answer", "how types are routed: answer (one call naming them, JSON constrained to "
                        "the schema's type names), likelihood (a one-token yes/no per type; needs top_logprobs) "
                        "or menu (one call per kind: each type's letter's probability; needs --route-top-k)")
    route_threshold: float = opt(0.5, "route_by likelihood: route a type whose P(yes) is at least this")
    route_top_k: int = opt(0, "route_by likelihood or menu: route each sentence's k highest-scored entity types and k "
                           "highest-scored relation types, whatever their P(yes), instead of --route-threshold "
                           "(0 = by the threshold); scores that rank but sit below any one threshold suit it")
    extract_temperature: float = opt(0.0, "temperature of extraction agents")
    debate_temperature: float = opt(0.9, "temperature of debaters and summarizer (paper: 0.9)")
    frequency_penalty: float = opt(0.1, "frequency penalty of debaters (paper: 0.1)")
    max_tokens: int = opt(200, "max answer tokens of one agent call (single-prompt baselines get 2x)")
    parse_retries: int = opt(1, "re-asks after an answer that fails validation (a cut-off answer rarely heals)")
    sc_samples: int = opt(5, "samples for (soft-)self-consistency")
    sc_temperature: float = opt(0.7, "temperature of self-consistency samples")
    re_mode: str | None = opt(None, "relation scoring mode of the report (strict, boundaries, strings; default: "
                              "the dataset config's score: section)")
    cache: bool = opt(True, "use the call cache (<out>/calls.sqlite): a re-run repeats no LLM call")
    progress: bool = opt(True, "show a progress bar")
    retries: int = opt(4, "re-sends of a call that got no answer but may yet (refused connection, 429, 5xx), "
                       "with exponential backoff from 1 s")
    timeout_connect_s: float = opt(Timeouts.connect_s, Timeouts.help("connect_s"))
    timeout_first_token_s: float = opt(Timeouts.first_token_s, Timeouts.help("first_token_s"))
    timeout_tokens_per_s: float = opt(Timeouts.min_tokens_per_s, Timeouts.help("min_tokens_per_s"))
    timeout_first_answer_s: float = opt(Timeouts.first_answer_s, Timeouts.help("first_answer_s"))
    timeout_record_s: float = opt(1800.0, "seconds one record may take, all its calls together; past it the record "
                                  "fails with reason 'time budget' and is retried by the next run (0 = no budget)")

    def __post_init__(self) -> None:
        if isinstance(self.routing, bool):  # YAML 1.1 reads a bare off/on as a boolean
            self.routing = "on" if self.routing else "off"
        check_field_types(self, "teacher")

        if self.method not in METHOD_NAMES:
            raise ConfigError(f"teacher.method: unknown method {self.method!r}; choose one of {sorted(METHOD_NAMES)}")
        if self.endpoint and not self.model_name:
            raise ConfigError("teacher.model_name: --endpoint needs --model-name (the model served there)")
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise ConfigError(f"teacher.structured_output: one of {STRUCTURED_OUTPUTS}, got {self.structured_output!r}")
        if self.endpoint and self.model:
            raise ConfigError("teacher.model: --model starts the embedded server; drop it when using --endpoint")
        for name in ("concurrency", "max_tokens", "sc_samples", "window_tokens", "route_min_types"):
            if getattr(self, name) < 1:
                raise ConfigError(f"teacher.{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("max_rounds", "extent_check_words", "cross_task_rounds", "parse_retries", "retries",
                     "route_top_k"):
            if getattr(self, name) < 0:
                raise ConfigError(f"teacher.{name}: must be 0 or more, got {getattr(self, name)}")
        if self.context_tokens is not None and self.context_tokens < 1:
            raise ConfigError(f"teacher.context_tokens: must be at least 1, got {self.context_tokens}")
        if self.offset < 0:
            raise ConfigError(f"teacher.offset: must be 0 or more, got {self.offset}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"teacher.limit: must be at least 1, got {self.limit}")
        for name in ("extract_temperature", "debate_temperature", "sc_temperature"):
            if not 0.0 <= getattr(self, name) <= 2.0:
                raise ConfigError(f"teacher.{name}: must be in [0, 2], got {getattr(self, name)}")
        if self.summarizer not in SUMMARIZERS:
            raise ConfigError(f"teacher.summarizer: one of {SUMMARIZERS}, got {self.summarizer!r}")
        if self.routing not in ROUTING:
            raise ConfigError(f"teacher.routing: one of {ROUTING}, got {self.routing!r}")
        if self.route_by not in ROUTERS:
            raise ConfigError(f"teacher.route_by: one of {ROUTERS}, got {self.route_by!r}")
        if self.route_top_k and self.route_by == "answer":
            raise ConfigError("teacher.route_top_k: ranks scores; set route_by: likelihood or menu, or "
                              "route_top_k: 0 (route_by is 'answer')")
        if self.route_by == "menu" and not self.route_top_k:
            raise ConfigError("teacher.route_by: menu routes by rank; set route_top_k to 1 or more")
        if self.check_uncontested and self.summarizer != "likelihood":
            raise ConfigError(f"teacher.check_uncontested: the likelihood Summarizer checks; set summarizer: "
                              f"likelihood, or check_uncontested: false (summarizer is {self.summarizer!r})")
        if not 0.0 <= self.route_threshold <= 1.0:
            raise ConfigError(f"teacher.route_threshold: must be in [0, 1], got {self.route_threshold}")
        if self.re_mode is not None and self.re_mode not in RE_MODES:
            raise ConfigError(f"teacher.re_mode: one of {RE_MODES}, got {self.re_mode!r}")
        for name in ("timeout_connect_s", "timeout_first_token_s", "timeout_tokens_per_s", "timeout_first_answer_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"teacher.{name}: must be above 0, got {getattr(self, name)}")
        if self.timeout_record_s < 0:
            raise ConfigError(f"teacher.timeout_record_s: must be 0 (no budget) or more, got {self.timeout_record_s}")

    def timeouts(self) -> Timeouts:
        return Timeouts(self.timeout_connect_s, self.timeout_first_token_s, self.timeout_tokens_per_s,
                        self.timeout_first_answer_s)

    def check_source(self) -> None:
        """A run (not the library) needs exactly one of --split / --input."""
        if bool(self.split) == bool(self.input):
            raise ConfigError("teacher: give exactly one of --split (e.g. dev) or --input FILE")

    @property
    def out_dir(self) -> Path:
        return Path(self.out or f"runs/{self.method}")

    def to_json(self) -> dict[str, Any]:
        """The resolved settings; holds the NAME of the key variable only, never a key."""
        return asdict(self)

    @classmethod
    def from_sources(cls, section: dict[str, Any], overrides: dict[str, Any], source: str | Path = "<config>"
                     ) -> TeacherConfig:
        """`section` = the YAML `teacher:` mapping of config file `source`; `overrides` = flags given (None = not
        given)."""
        for name in sorted(set(section) & set(MOVED)):
            raise ConfigError(f"{source}: teacher.{name}: moved to the dataset config's `mentions:` section "
                              f"({MOVED[name]}), so teacher and student apply the same rules")
        return cli.from_sources(cls, "teacher", section, overrides, source)
