"""Strict scoring of predicted records against gold records: pure functions with typed outputs.

Matching rules (all of `evaluate`):
- Records are paired by `id`. A gold record with no prediction scores as an empty prediction (all its
  entities and relations are false negatives). A prediction whose id is not in gold is ignored and counted
  in `unmatched_predictions`; the caller decides whether to warn. An id repeated within gold or within the
  predictions raises ValueError: which of two answers to score would be a guess, and so does a prediction
  whose text differs from its gold record's (its offsets point into another text: the files do not match).
- Set semantics: within a record, entities and relations are compared as sets of keys, so an entity or
  relation predicted twice counts once (one true or one false positive), and so does a gold duplicate.
- NER is strict: an entity is correct when its [start, end) character span and its type equal a gold one.
- RE modes (`RE_MODES`): `strict`, a relation is correct when its type and both arguments' spans and types
  are right; `boundaries`, the same ignoring argument types; `strings` (NYT), exact head string, relation
  type and tail string. In `strings` mode the gold side also holds the record's `meta.ungrounded_triples`
  (argument strings missing from the text, so no grounded prediction can match them: they stay false
  negatives rather than vanish); a prediction's meta is never read.
- Direction counts for every relation type unless `symmetric=True`: then the types the schema marks
  `symmetric: true` are scored direction-free (head and tail put in a canonical order on both sides).
  SciERC's usual evaluation counts direction, so the default is off.
All scores are fractions in [0, 1]; a ratio with a zero denominator is 0. `evaluate` returns `Scores`, a typed
model whose JSON form (`as_dict`) is what `metrics.json` and `python -m ie.score --json` hold.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ie.config import TaskSchema
from ie.schema import Entity, Record

RE_MODES = ("strict", "boundaries", "strings")
SEMEVAL_OTHER = "Other"
ReMode = Literal["strict", "boundaries", "strings"]
EntityKey = tuple[int, int, str]
RecordPair = tuple[Record, "Record | None"]


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


@dataclass(frozen=True)
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        return _ratio(2 * self.precision * self.recall, self.precision + self.recall)

    def prf(self) -> PRF:
        """Its scores with the counts, as reports hold them."""
        return PRF(precision=self.precision, recall=self.recall, f1=self.f1, tp=self.tp, fp=self.fp, fn=self.fn)


class PRF(BaseModel):
    """Precision, recall and F1 with the counts they come from."""
    model_config = ConfigDict(frozen=True)
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int


class TaskScores(BaseModel):
    """One task's micro scores and its scores per type."""
    model_config = ConfigDict(frozen=True)
    micro: PRF
    per_type: dict[str, PRF] = Field(default_factory=dict)


class RelationScores(TaskScores):
    """RE scores, with how relations were matched: `mode` (see `RE_MODES`) and the types scored without
    direction."""
    mode: ReMode
    symmetric_types: list[str]


class NerErrors(BaseModel):
    """The NER error taxonomy (CrossAgentIE, Table 8). Each false-positive entity falls in exactly one of the
    first four classes, tried in this order, where "overlaps" means the character spans share a character:
    - `wrong_type`: a gold entity has exactly its span, with another type;
    - `boundary`: it overlaps a gold entity of its own type, with other boundaries;
    - `boundary_and_type`: it overlaps only gold entities that differ in both span and type;
    - `spurious`: it overlaps no gold entity.
    Each false-negative gold entity that no false-positive entity overlaps is `missing`; the other false
    negatives are the gold side of a boundary/type error already counted once from the prediction side.
    So `wrong_type + boundary + boundary_and_type + spurious == fp` and `missing <= fn`."""
    model_config = ConfigDict(frozen=True)
    boundary: int = 0
    wrong_type: int = 0
    boundary_and_type: int = 0
    missing: int = 0
    spurious: int = 0


def pair_records(gold: list[Record], pred: list[Record]) -> tuple[list[RecordPair], list[str]]:
    """(gold record, its prediction or None) in gold order, and the prediction ids not in gold."""
    _check_unique(gold, "gold")
    _check_unique(pred, "predictions")
    by_id = {p.id: p for p in pred}
    gold_ids = {g.id for g in gold}
    pairs = [(g, by_id.get(g.id)) for g in gold]
    check_same_texts(pairs, "gold", "prediction")
    return pairs, [p.id for p in pred if p.id not in gold_ids]


def check_same_texts(pairs: Iterable[tuple[Record, Record | None]], a: str, b: str) -> None:
    """ValueError naming the first id whose two records (`a`'s, `b`'s) hold different texts."""
    for x, y in pairs:
        if y is not None and x.text != y.text:
            raise ValueError(f"record {x.id!r}: the {b}'s text differs from the {a}'s ({y.text[:40]!r} against "
                             f"{x.text[:40]!r}): the files do not belong together")


@dataclass(frozen=True)
class RecordMatch:
    """How two record files pair up by id: `missing`, ids of the first with no record in the second; `extra`,
    ids of the second not in the first (both in file order)."""
    matched: int
    missing: list[str]
    extra: list[str]

    def summary(self, first: int = 5) -> MatchSummary:
        return MatchSummary(matched=self.matched, missing=IdSample(count=len(self.missing), first=self.missing[:first]),
                            extra=IdSample(count=len(self.extra), first=self.extra[:first]))


class IdSample(BaseModel):
    """How many ids, and the first few."""
    model_config = ConfigDict(frozen=True)
    count: int
    first: list[str]


class MatchSummary(BaseModel):
    """`RecordMatch` as a report shows it: the ids missing and extra counted, the first few listed."""
    model_config = ConfigDict(frozen=True)
    matched: int
    missing: IdSample
    extra: IdSample


def match_records(gold: list[Record], pred: list[Record]) -> RecordMatch:
    """The pairing of `pred` with `gold` by id, after `pair_records`' checks (unique ids, same texts)."""
    pairs, extra = pair_records(gold, pred)
    return RecordMatch(sum(p is not None for _, p in pairs), [g.id for g, p in pairs if p is None], extra)


def _check_unique(records: list[Record], side: str) -> None:
    repeated = [i for i, n in Counter(r.id for r in records).items() if n > 1]
    if repeated:
        raise ValueError(f"{side}: {len(repeated)} record ids occur more than once, e.g. {repeated[:3]}")


def entity_keys(record: Record | None) -> set[EntityKey]:
    return {e.key for e in record.entities} if record else set()


def _argument(entity: Entity, mode: ReMode) -> Hashable:
    if mode == "strict":
        return entity.key
    if mode == "boundaries":
        return entity.span
    return entity.text


def relation_keys(record: Record | None, mode: ReMode = "strict", symmetric: frozenset[str] = frozenset(),
                  gold: bool = False) -> set[tuple[Hashable, str, Hashable]]:
    """(head, type, tail) keys; what a head/tail is depends on `mode`. `gold` adds ungrounded string triples."""
    if record is None:
        return set()
    keys = {relation_key(h, rtype, t, mode, symmetric) for h, rtype, t in record.triples()}
    if mode == "strings" and gold:
        meta = record.meta or {}
        keys |= {relation_key(h, rtype, t, mode, symmetric) for h, rtype, t in meta.get("ungrounded_triples", [])}
    return keys


def relation_key(head: Entity | str, rtype: str, tail: Entity | str, mode: ReMode = "strict",
                 symmetric: frozenset[str] = frozenset()) -> tuple[Hashable, str, Hashable]:
    """One relation's key (an ungrounded triple's arguments are strings already). Direction-free types: a
    canonical argument order makes (a, r, b) and (b, r, a) the same key."""
    h, t = (x if isinstance(x, str) else _argument(x, mode) for x in (head, tail))
    return (min(h, t), rtype, max(h, t)) if rtype in symmetric else (h, rtype, t)


def score_sets(pairs: Iterable[tuple[set, set]], type_of: Callable[[Any], str],
               types: Iterable[str] = ()) -> TaskScores:
    """Micro and per-type counts over (gold keys, predicted keys) per record; `types` are always listed."""
    tp, fp, fn = Counter(), Counter(), Counter()
    for gold, pred in pairs:
        tp.update(type_of(k) for k in gold & pred)
        fp.update(type_of(k) for k in pred - gold)
        fn.update(type_of(k) for k in gold - pred)
    names = list(dict.fromkeys([*types, *sorted(tp | fp | fn)]))
    micro = Counts(sum(tp.values()), sum(fp.values()), sum(fn.values()))
    return TaskScores(micro=micro.prf(), per_type={t: Counts(tp[t], fp[t], fn[t]).prf() for t in names})


def _overlaps(a: EntityKey, b: EntityKey) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _false_positive_kind(pred: EntityKey, gold: set[EntityKey]) -> str:
    overlapping = [g for g in gold if _overlaps(g, pred)]
    if not overlapping:
        return "spurious"
    if any(g[:2] == pred[:2] for g in overlapping):
        return "wrong_type"
    if any(g[2] == pred[2] for g in overlapping):
        return "boundary"
    return "boundary_and_type"


def entity_errors(gold: set[EntityKey], pred: set[EntityKey]) -> tuple[dict[EntityKey, str], list[EntityKey]]:
    """One record's NER errors: each false-positive entity's class, and the `missing` gold entities (`NerErrors`)."""
    false_pos = pred - gold
    missing = sorted(g for g in gold - pred if not any(_overlaps(g, p) for p in false_pos))
    return {p: _false_positive_kind(p, gold) for p in false_pos}, missing


def ner_errors(pairs: Iterable[tuple[set[EntityKey], set[EntityKey]]]) -> NerErrors:
    """Classify NER errors per record; see `NerErrors` for the exact definitions."""
    kinds: Counter[str] = Counter()
    for gold, pred in pairs:
        wrong, missing = entity_errors(gold, pred)
        kinds.update(wrong.values())
        kinds["missing"] += len(missing)
    return NerErrors(**kinds)


def symmetric_types(schema: TaskSchema | None) -> frozenset[str]:
    if schema is None:
        raise ValueError("symmetric scoring needs the schema (which relation types are symmetric): pass --config")
    return frozenset(name for name, spec in schema.relation_types.items() if spec.symmetric)


class MacroScores(BaseModel):
    """Precision, recall and F1, each the mean over the relations scored."""
    model_config = ConfigDict(frozen=True)
    precision: float
    recall: float
    f1: float


class SemEvalScores(BaseModel):
    """Official SemEval-2010 Task 8 scores (scorer v1.2, "(9+1)-way, directionality taken into account"):
    per relation R, tp = examples labelled R with the right direction; precision's denominator is every
    prediction of R in either direction, recall's every gold R. Macro = the mean over the relations present in
    gold, `Other` excluded (the official score is `macro.f1`); micro sums the same counts."""
    model_config = ConfigDict(frozen=True)
    macro: MacroScores
    micro: PRF
    per_relation: dict[str, PRF]

    @classmethod
    def of(cls, per_relation: dict[str, Counts]) -> SemEvalScores:
        n = len(per_relation)
        macro = {name: _ratio(sum(getattr(c, name) for c in per_relation.values()), n)
                 for name in ("precision", "recall", "f1")}
        micro = Counts(*(sum(getattr(c, k) for c in per_relation.values()) for k in ("tp", "fp", "fn")))
        return cls(macro=MacroScores(**macro), micro=micro.prf(),
                   per_relation={r: c.prf() for r, c in per_relation.items()})


def semeval_label(gold: Record, pred: Record | None) -> str:
    """The label `pred` gives the gold pair e1 = entity 0, e2 = entity 1: `R(e1,e2)`, `R(e2,e1)` or `Other`.
    A predicted relation counts when its arguments have the spans of e1 and e2 (types are ignored); of
    several, the most confident wins, then the first listed."""
    e1, e2 = gold.entities[0].span, gold.entities[1].span
    found = []
    for i, rel in enumerate(pred.relations if pred else []):
        args = (pred.entities[rel.head].span, pred.entities[rel.tail].span)
        if args in ((e1, e2), (e2, e1)):
            direction = "(e1,e2)" if args == (e1, e2) else "(e2,e1)"
            found.append((-(rel.confidence or 0.0), i, rel.type + direction))
    return min(found)[2] if found else SEMEVAL_OTHER


def semeval_score(pairs: list[RecordPair]) -> SemEvalScores:
    """Score (gold, prediction) pairs of SemEval records (entities 0 and 1 are e1 and e2)."""
    labels = [(semeval_label(g, g), semeval_label(g, p)) for g, p in pairs]

    def coarse(label: str) -> str:
        return label.split("(")[0]

    relations = sorted({coarse(g) for g, _ in labels} - {SEMEVAL_OTHER})
    per_relation = {}
    for r in relations:
        tp = sum(1 for g, p in labels if g == p and coarse(g) == r)
        predicted = sum(1 for _, p in labels if coarse(p) == r)
        actual = sum(1 for g, _ in labels if coarse(g) == r)
        per_relation[r] = Counts(tp, predicted - tp, actual - tp)
    return SemEvalScores.of(per_relation)


def keyed_pairs(pairs: list[RecordPair], re_mode: ReMode = "strict", symmetric: frozenset[str] = frozenset()
                ) -> tuple[list[tuple[set, set]], list[tuple[set, set]]]:
    """(gold keys, predicted keys) per record, for NER and for RE."""
    if re_mode not in RE_MODES:
        raise ValueError(f"re_mode: {re_mode!r} is not one of {RE_MODES}")
    ner = [(entity_keys(g), entity_keys(p)) for g, p in pairs]
    re = [(relation_keys(g, re_mode, symmetric, gold=True), relation_keys(p, re_mode, symmetric)) for g, p in pairs]
    return ner, re


class Scores(BaseModel):
    """What `evaluate` finds: NER and RE scores, the NER error taxonomy, the gold records scored and the
    predictions not paired with one, and with `semeval` the official SemEval-2010 Task 8 metric."""
    model_config = ConfigDict(frozen=True)
    ner: TaskScores
    re: RelationScores
    errors: NerErrors
    records: int
    unmatched_predictions: int
    semeval: SemEvalScores | None = Field(default=None, exclude_if=lambda v: v is None)

    def as_dict(self) -> dict[str, Any]:
        """Its JSON form: `{"ner", "re", "errors", "records", "unmatched_predictions"[, "semeval"]}`."""
        return self.model_dump(mode="json")


def evaluate(gold: list[Record], pred: list[Record], schema: TaskSchema | None = None,
             re_mode: ReMode = "strict", symmetric: bool = False, semeval: bool = False) -> Scores:
    """NER and RE scores, the NER error taxonomy and, with `semeval=True`, the official SemEval-2010 Task 8
    metric (`semeval_score`). `schema` lists every entity/relation type in `per_type`, even unseen ones."""
    pairs, unmatched = pair_records(gold, pred)
    sym = symmetric_types(schema) if symmetric else frozenset()
    ner_pairs, re_pairs = keyed_pairs(pairs, re_mode, sym)
    entity_types = schema.entity_types if schema else ()
    relation_types = schema.relation_types if schema else ()
    return Scores(
        ner=score_sets(ner_pairs, lambda k: k[2], entity_types),
        re=RelationScores(**dict(score_sets(re_pairs, lambda k: k[1], relation_types)), mode=re_mode,
                          symmetric_types=sorted(sym)),
        errors=ner_errors(ner_pairs),
        records=len(gold),
        unmatched_predictions=len(unmatched),
        semeval=semeval_score(pairs) if semeval else None,
    )
