"""Small schemas unlike CoNLL04's, for the scripted mechanism tests: each with one sentence and what a type
agent, a relation agent, a long mention and a router would find there.

- `SCIERC`: lowercase technical terms, nested mentions, typed relation arguments.
- `NYT`: one entity type, many relation types with NYT's path-like names, two of them exclusive.
- `SEMEVAL`: one nominal type, directed relations between common nouns, all exclusive.
"""
from __future__ import annotations

from dataclasses import dataclass

from ie.config import TaskSchema, load_config, resolve_config_path
from ie.schema import Record


@dataclass(frozen=True)
class Case:
    name: str
    schema: TaskSchema
    text: str
    mentions: dict[str, list[str]]  # entity type -> what its agent finds
    relation: tuple[str, str, str]  # (type, head, tail) its agent finds; one argument is `missing`
    missing: tuple[str, str]  # (mention, type): the relation's argument no type agent found
    conflict: tuple[str, str, str]  # (mention, winner, loser) types of a label conflict; for a schema with one
    # entity type, (winner, loser) relation types on the pair `conflict_pair`
    long: tuple[str, str, str]  # (long mention, its type, the name inside it)
    routed: tuple[tuple[str, ...], tuple[str, ...]]  # what a router names: entity types, relation types
    conflict_pair: tuple[str, str] = ("", "")

    @property
    def entity_conflict(self) -> bool:
        return self.conflict_pair == ("", "")

    def conflict_labels(self) -> tuple[str, str]:
        """How the debate shows the (winner, loser) options."""
        if self.entity_conflict:
            mention, *types = self.conflict
            return tuple(f'"{mention}" is {t}' for t in types)  # type: ignore[return-value]
        head, tail = self.conflict_pair
        return tuple(f'"{head}" {t} "{tail}"' for t in self.conflict[:2])  # type: ignore[return-value]

    def winner_letter(self) -> str:
        winner, loser = self.conflict_labels()
        return "A" if winner < loser else "B"

    def loser_letter(self) -> str:
        return "B" if self.winner_letter() == "A" else "A"


def _schema(entities: dict[str, str], relations: dict[str, tuple[str, list[str], list[str]]],
            exclusive: object = "all", nested: bool = False) -> TaskSchema:
    """The judge's answer word of each type is set: the first word of its name, lowercased."""
    return TaskSchema.model_validate({
        "entity_types": {name: {"description": d, "words": [name.split("-")[0].lower()]}
                         for name, d in entities.items()},
        "relation_types": {name: {"description": d, "head": h, "tail": t} for name, (d, h, t) in relations.items()},
        "exclusive_relations": exclusive, "nested_entities": nested})


SCIERC = Case(
    name="scierc",
    schema=_schema(
        {"Method": "a method, model, algorithm or system (e.g. conditional random fields)",
         "Task": "a task: a problem to solve or an application (e.g. machine translation)",
         "Metric": "a metric or measure of quality (e.g. f1, accuracy)",
         "Material": "data, a corpus or a resource (e.g. the penn treebank)",
         "OtherScientificTerm": "a scientific term that is none of the above (e.g. named entity, features)"},
        {"USED-FOR": ("the head is used for the tail", ["Material", "Method"], ["OtherScientificTerm", "Task"]),
         "EVALUATE-FOR": ("the head metric evaluates the tail", ["Metric", "Material"], ["Method", "Task"]),
         "PART-OF": ("the head is a part of the tail", [], []),
         "CONJUNCTION": ("the head and tail are used together", [], [])},
        exclusive=[["USED-FOR", "EVALUATE-FOR"]], nested=True),
    text="we apply a conditional random fields model to named entity recognition and report f1 on the corpus .",
    # "named entity" nests inside "named entity recognition": both are kept, and neither conflicts.
    mentions={"Method": ["conditional random fields model"], "Task": ["named entity recognition"],
              "OtherScientificTerm": ["named entity"], "Metric": ["f1"]},
    relation=("USED-FOR", "corpus", "named entity recognition"),  # the mention around the nested one
    missing=("corpus", "Material"),
    conflict=("named entity recognition", "Task", "Method"),
    long=("conditional random fields model", "Method", "conditional random fields"),
    routed=(("Method", "Task", "Metric"), ("USED-FOR", "EVALUATE-FOR")),
)

NYT_RELATIONS = {
    "/location/location/contains": "the head location contains the tail location",
    "/location/country/capital": "the head country has the tail city as its capital",
    "/location/neighborhood/neighborhood_of": "the head is a neighborhood of the tail city",
    "/people/person/place_lived": "the head person lives or lived in the tail place",
    "/people/person/place_of_birth": "the head person was born in the tail place",
    "/people/person/nationality": "the head person is a citizen of the tail country",
    "/business/person/company": "the head person works for the tail company",
    "/business/company/founders": "the head company was founded by the tail person",
}
NYT = Case(
    name="nyt",
    schema=_schema({"Entity": "a named entity: a person, location, organization or company"},
                   {name: (d, [], []) for name, d in NYT_RELATIONS.items()},
                   exclusive=[["/location/location/contains", "/location/neighborhood/neighborhood_of"]]),
    text="Chess champion Bobby Fischer , born in Chicago , lived in Reykjavik , the capital of Iceland .",
    mentions={"Entity": ["Chess champion Bobby Fischer", "Chicago", "Reykjavik"]},
    relation=("/location/country/capital", "Iceland", "Reykjavik"),
    missing=("Iceland", "Entity"),
    conflict=("/location/location/contains", "/location/neighborhood/neighborhood_of", ""),
    conflict_pair=("Reykjavik", "Chicago"),
    long=("Chess champion Bobby Fischer", "Entity", "Bobby Fischer"),
    routed=(("Entity",), ("/people/person/place_lived", "/people/person/place_of_birth", "/location/country/capital")),
)

SEMEVAL = Case(
    name="semeval",
    schema=_schema({"Nominal": "a nominal: the head noun of a base noun phrase"},
                   {"Cause-Effect(e1,e2)": ("the head causes the tail", [], []),
                    "Cause-Effect(e2,e1)": ("the tail causes the head", [], []),
                    "Component-Whole(e1,e2)": ("the head is a component of the tail", [], []),
                    "Entity-Destination(e1,e2)": ("the head moves into the tail", [], []),
                    "Other": ("another relation, or none of the above", [], [])}),
    text="the burst of the old pipe was caused by high water hammer pressure in the system .",
    mentions={"Nominal": ["burst", "high water hammer pressure", "system"]},
    relation=("Component-Whole(e1,e2)", "pipe", "system"),
    missing=("pipe", "Nominal"),
    conflict=("Cause-Effect(e2,e1)", "Cause-Effect(e1,e2)", ""),
    conflict_pair=("burst", "high water hammer pressure"),
    long=("high water hammer pressure", "Nominal", "pressure"),
    routed=(("Nominal",), ("Cause-Effect(e2,e1)", "Component-Whole(e1,e2)")),
)

CONLL04 = Case(
    name="conll04",
    schema=load_config(resolve_config_path("conll04")).task_schema,
    text="Former President Ronald Reagan grew up in Dixon , Illinois , and visited the Smithsonian .",
    mentions={"Peop": ["Former President Ronald Reagan"], "Loc": ["Dixon"], "Org": ["Smithsonian"]},
    relation=("Live_In", "Reagan", "Illinois"),
    missing=("Illinois", "Loc"),
    conflict=("Smithsonian", "Org", "Loc"),
    long=("Former President Ronald Reagan", "Peop", "Ronald Reagan"),
    routed=(("Peop", "Loc"), ("Live_In", "Work_For")),
)

MORE = (SCIERC, NYT, SEMEVAL)  # the schemas beside CoNLL04's
CASES = (CONLL04, *MORE)


def nyt_strings_pair() -> tuple[Record, Record]:
    """(gold, prediction) where the prediction's triple names the other "Iceland": right in NYT's `strings`
    relation scoring, wrong in `strict`."""
    text = "Reykjavik is in Iceland ; Iceland ."
    ents = [{"start": 0, "end": 9, "type": "Entity", "text": "Reykjavik"},
            {"start": 16, "end": 23, "type": "Entity", "text": "Iceland"},
            {"start": 26, "end": 33, "type": "Entity", "text": "Iceland"}]
    rel = [{"head": 1, "tail": 0, "type": "/location/location/contains"}]
    return (Record(id="g", text=text, entities=ents[:2], relations=rel),
            Record(id="g", text=text, entities=[ents[0], ents[2]], relations=rel))
