"""Dataset/task configs (`configs/<dataset>.yaml`): where the data is and the schema the agents are given.

The shipped configs (datasets, model catalogue, student, accelerate) live inside the package, `ie/configs/`
(`CONFIGS_DIR`; the repository's `configs/` links to it), so an installed wheel finds them by name too.

The schema's natural-language descriptions are the "domain metadata" each type agent receives; relation
types carry their allowed head/tail entity types and a statement template used in cross-task feedback.
`mentions:` holds the mention rules every method, teacher and student, applies (`ie.mentions.MentionProfile`);
`score:` the scoring options every scorer reads (`ScoreOptions`). Entry points keep their own section
(`teacher:`, `distill:`, `bench:`) in the same file.
"""
from __future__ import annotations

import dataclasses
import os
import re
import string
import types
import typing
from itertools import combinations
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ie.mentions import MentionProfile, example_problem

M = TypeVar("M", bound=BaseModel)
REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = Path(__file__).resolve().parent / "configs"
DATA_ENV = "CROSSAGENTIE_DATA"
CACHE_ENV = "CROSSAGENTIE_CACHE"


def data_root() -> Path:
    """Where the benchmark data lives: `$CROSSAGENTIE_DATA`, else `data/` in the user's cache (`cache_dir`), where
    `python -m ie.datasets fetch NAME` puts it."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else cache_dir() / "data"


def cache_dir() -> Path:
    """Where assembled models, converted checkpoints and the call cache live: `$CROSSAGENTIE_CACHE`,
    else `~/.cache/crossagentie`. Never inside the repository."""
    env = os.environ.get(CACHE_ENV)
    path = Path(env) if env else Path.home() / ".cache" / "crossagentie"
    path.mkdir(parents=True, exist_ok=True)
    return path


class EntityTypeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str
    examples: list[str] = Field(default_factory=list)
    words: list[str] = Field(default_factory=list, description="plain names of the type (person, date): the "
                             "answers the likelihood Summarizer scores; empty = the type name's words, lowercased "
                             "(`words_of_name`)")


STATEMENT_FIELDS = frozenset({"head", "relation", "tail"})


def _check_type_names(kind: str, names: list[str]) -> None:
    """Type names are non-empty words, and no two differ only in case (a model would mix them up)."""
    seen: dict[str, str] = {}
    for name in names:
        if not name.strip() or name != name.strip():
            raise ValueError(f"{kind}: type name {name!r} is empty or has spaces around it")
        if name.lower() in seen:
            raise ValueError(f"{kind}: type names {seen[name.lower()]!r} and {name!r} differ only in case")
        seen[name.lower()] = name


class RelationTypeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str
    head: list[str] = Field(default_factory=list, description="allowed head entity types; empty = any")
    tail: list[str] = Field(default_factory=list, description="allowed tail entity types; empty = any")
    statement: str = Field("{head} {relation} {tail}", description="natural-language statement template")
    symmetric: bool = False

    @field_validator("statement")
    @classmethod
    def _known_fields(cls, statement: str) -> str:
        """A template formats with {head}, {relation} and {tail} only: refused at load, not when first used."""
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(statement) if name is not None}
        except ValueError as exc:
            raise ValueError(f"{statement!r}: {exc} (write {{{{ and }}}} for a literal brace)") from None
        unknown = sorted(names - STATEMENT_FIELDS)
        if unknown:
            raise ValueError(f"{statement!r}: unknown field {{{unknown[0]}}}; a statement may use "
                             "{head}, {relation} and {tail} (write {{ and }} for a literal brace)")
        return statement

    def allows(self, head_type: str, tail_type: str) -> bool:
        return (not self.head or head_type in self.head) and (not self.tail or tail_type in self.tail)


class TaskSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entity_types: dict[str, EntityTypeSpec]
    relation_types: dict[str, RelationTypeSpec] = Field(default_factory=dict)
    # Relation types that cannot hold for the same ordered pair at once. "all": any two types conflict.
    exclusive_relations: Literal["all"] | list[list[str]] = "all"
    # Entity typing: "flat" datasets never label overlapping spans; "nested" ones may.
    nested_entities: bool = False

    @model_validator(mode="after")
    def _check_refs(self) -> TaskSchema:
        if not self.entity_types:
            raise ValueError("entity_types: empty; a schema needs at least one entity type")
        _check_type_names("entity_types", list(self.entity_types))
        _check_type_names("relation_types", list(self.relation_types))
        for name, rel in self.relation_types.items():
            for side in ("head", "tail"):
                for t in getattr(rel, side):
                    if t not in self.entity_types:
                        raise ValueError(f"relation_types.{name}.{side}: unknown entity type {t!r}")
        if self.exclusive_relations != "all":
            for i, group in enumerate(self.exclusive_relations):
                for t in group:
                    if t not in self.relation_types:
                        raise ValueError(f"exclusive_relations[{i}]: unknown relation type {t!r}")
        return self

    def exclusive(self, a: str, b: str) -> bool:
        if a == b:
            return False
        if self.exclusive_relations == "all":
            return True
        return any(a in g and b in g for g in self.exclusive_relations)

    def exclusive_pairs(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in combinations(self.relation_types, 2) if self.exclusive(a, b)]

    def statement(self, relation: str, head: str, tail: str) -> str:
        spec = self.relation_types[relation]
        return spec.statement.format(head=head, tail=tail, relation=relation.replace("_", " ").lower())


def words_of_name(name: str) -> list[str]:
    """What a model would call a type by its name: CamelCase, '-' and '_' split, lowercased
    ("OtherScientificTerm" -> "other scientific term", "PER" -> "per")."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|[-_]+", " ", name)
    return [" ".join(spaced.lower().split()) or name.lower()]


class ScoreOptions(BaseModel):
    """The config's `score:` section: how relations are matched; read by `ie.score`, the bench and the teacher's
    report alike (`score_options`)."""
    model_config = ConfigDict(extra="forbid")
    re_mode: Literal["strict", "boundaries", "strings"] = Field("strict", description="relation matching")
    symmetric: bool = Field(False, description="score relation types marked symmetric without direction")
    semeval: bool = Field(False, description="add the official SemEval-2010 Task 8 metric")


class ServeOptions(BaseModel):
    """The config's `serve:` section: how the served student labels this schema's texts (`serve.client`, the
    bench's student row)."""
    model_config = ConfigDict(extra="forbid")
    halves_from_tokens: int | None = Field(
        None, ge=1, description="texts of at least this many estimated tokens (`ie.windows.estimate_tokens`, about "
                                "2 a word) also get a second look in two overlapping halves; null: never")


def score_options(config: DatasetConfig | None, **overrides: object) -> ScoreOptions:
    """The scoring options of a loaded config (defaults without one), with the given non-None overrides (flags):
    what every scorer passes to `ie.scoring.evaluate` (`**options.model_dump()`)."""
    base = config.score.model_dump() if config is not None else {}
    return ScoreOptions.model_validate({**base, **{k: v for k, v in overrides.items() if v is not None}})


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    format: str = Field(description="loader name in ie.datasets (spert, conll, dygie, nyt, semeval, records)")
    splits: dict[str, str] = Field(default_factory=dict, description="split -> path relative to the data root")
    task_schema: TaskSchema = Field(alias="schema")
    mentions: MentionProfile = Field(default_factory=MentionProfile, description="mention rules (ie.mentions)")
    score: ScoreOptions = Field(default_factory=ScoreOptions, description="scoring options (ie.scoring)")
    serve: ServeOptions = Field(default_factory=ServeOptions, description="the served student (serve.client)")
    source: Path | None = Field(default=None, exclude=True)

    def example_errors(self) -> list[tuple[str, str]]:
        """(field, why) for each type example the `mentions:` rules would not keep as it is."""
        names = list(self.task_schema.entity_types)
        return [(f"schema.entity_types.{name}.examples[{i}]", f"{example!r} is {problem}")
                for name, spec in self.task_schema.entity_types.items() for i, example in enumerate(spec.examples)
                if (problem := example_problem(example, self.mentions, names))]

    def split_path(self, split: str) -> Path:
        if split not in self.splits:
            raise ConfigError(f"{self.source or self.name}: no split {split!r}; known: {sorted(self.splits)}")
        return data_root() / self.splits[split]

    def section(self, name: str) -> dict[str, Any]:
        """An entry point's own section of the file (`teacher:`, `distill:`, `bench:`), or {}."""
        value = getattr(self, name, None) or {}
        if not isinstance(value, dict):
            raise ValueError(f"{self.source}: section '{name}' must be a mapping")
        return value


class ConfigError(ValueError):
    pass


def check_field_types(obj: Any, section: str) -> None:
    """Every field of dataclass `obj` holds its annotated type (an int for `int | None`, a number for `float`):
    a YAML `max_rounds: "two"` is refused naming `section.max_rounds`, not failed on in a comparison later."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value, hint = getattr(obj, f.name), hints[f.name]
        kinds = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        if not any(_is_a(value, kind) for kind in kinds):
            names = " or ".join("null" if k is type(None) else getattr(k, "__name__", str(k)) for k in kinds)
            raise ConfigError(f"{section}.{f.name}: expected {names}, got {value!r}")


def _is_a(value: Any, kind: Any) -> bool:
    if isinstance(value, bool) and kind in (int, float):  # YAML `true` is no number
        return False
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, typing.get_origin(kind) or kind)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice in one mapping (the last would win silently)",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML file's top mapping; invalid YAML and a key given twice are refused naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader) or {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


def validate_yaml(path: str | Path, model: type[M], error: type[Exception] = ConfigError) -> M:
    """A YAML file as a validated pydantic model; the error names the file and the first failing field."""
    try:
        obj = model.model_validate(read_yaml(path))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc, msg = ".".join(str(p) for p in err["loc"]), err["msg"].removeprefix("Value error, ")
        if inner := re.match(r"([\w.\[\]]+): (.*)", msg, re.S):  # a model's check naming the field inside it
            loc, msg = f"{loc}.{inner[1]}" if loc else inner[1], inner[2]
        raise error(f"{path}: field '{loc}': {msg}") from None
    obj.source = Path(path)  # type: ignore[attr-defined]
    return obj


def load_config(path: str | Path) -> DatasetConfig:
    """Load and validate a dataset config; errors name the file and the field. A config whose `mentions:`
    rules would drop or change one of its own type examples is refused: the rules contradict the schema."""
    config = validate_yaml(path, DatasetConfig)
    for field, problem in config.example_errors():
        raise ConfigError(f"{path}: field '{field}': {problem}; loosen `mentions:` or change the example")
    return config


def resolve_config_path(name_or_path: str) -> Path:
    """Accept a config file's path, or a shipped config as `conll04` or `configs/conll04.yaml` from any folder."""
    p = Path(name_or_path)
    if p.exists():
        return p
    name = p.relative_to("configs") if p.parts[:1] == ("configs",) else p
    for candidate in (CONFIGS_DIR / name, CONFIGS_DIR / f"{name}.yaml"):
        if candidate.is_file():
            return candidate
    raise ConfigError(f"{name_or_path}: no such config file (nor a shipped one: {CONFIGS_DIR}/{name}.yaml)")
