"""Teacher-labelled records for the distill tests: fourteen one-relation sentences of rising confidence."""
from ie.config import TaskSchema
from ie.records import LabelledRecord
from ie.schema import Entity, Relation

SCHEMA = TaskSchema.model_validate({
    "entity_types": {"Peop": {"description": "person"}, "Loc": {"description": "place"}},
    "relation_types": {"Live_In": {"description": "lives in", "head": ["Peop"], "tail": ["Loc"]}},
})
NAMES = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ida", "Jo", "Kim", "Lu", "Max", "Ned"]


def teacher_records(n: int = 14) -> list[LabelledRecord]:
    out = []
    for i in range(n):
        person, place = NAMES[i], f"Town{i}"
        text = f"{person} lives in {place} ."
        ents = [Entity(start=0, end=len(person), type="Peop", text=person, confidence=0.9),
                Entity(start=len(person) + 10, end=len(person) + 10 + len(place), type="Loc", text=place,
                       confidence=0.9)]
        out.append(LabelledRecord(id=f"train-{i}", text=text, entities=ents, confidence=0.52 + i / 30,
                          relations=[Relation(head=0, tail=1, type="Live_In", confidence=0.9)],
                          stats={"calls": 5, "failed_calls": 0, "unresolved_conflicts": 0}, debate={"method": "crossagentie", "notes": ["n"]}))
    return out
