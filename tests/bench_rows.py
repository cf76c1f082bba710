"""Bench rows from given scores and per-record stats, and the smallest valid answer a scripted endpoint gives
to any agent."""
import json

from ie.records import LabelledRecord
from ie.scoring import PRF, NerErrors, RelationScores, Scores, TaskScores
from serve.bench_metrics import Price, calculate_metrics


def bench_scores(ner=(0.0, 0.0, 0.0), re=(0.0, 0.0, 0.0)) -> Scores:
    """Scores with these micro (precision, recall, F1), the only ones the bench rows read."""
    def prf(p, r, f1):
        return PRF(precision=p, recall=r, f1=f1, tp=0, fp=0, fn=0)

    return Scores(ner=TaskScores(micro=prf(*ner)), re=RelationScores(micro=prf(*re), mode="strict", symmetric_types=[]),
                  errors=NerErrors(), records=0, unmatched_predictions=0)


def pred_with_stats(calls, prompt, completion, wall, cached=0, prefix=0):
    return LabelledRecord(id="x", text="t", stats={"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
                                           "wall_s": wall, "cached_calls": cached, "prefix_cached_tokens": prefix})


def f1_row(method, f1, prompt, completion, prefix):
    scores = bench_scores(ner=(f1, f1, f1))
    price = Price(input=1.0, output=2.0, cached_input=0.5)
    return calculate_metrics(method, "m", scores, [pred_with_stats(1, prompt, completion, 1.0, prefix=prefix)], 1.0, price)


def minimal(schema, defs):
    """The smallest instance of a JSON schema: what a scripted model answers to any agent."""
    if "$ref" in schema:
        return minimal(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema:
        return minimal(schema["anyOf"][0], defs)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: minimal(v, defs) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    return {"array": [], "string": "", "number": 0.5, "integer": 0, "boolean": False}.get(kind)


def minimal_answer(request):
    schema = request.response_format["json_schema"]["schema"]
    return json.dumps(minimal(schema, schema.get("$defs", {})))
