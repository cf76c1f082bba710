"""`teacher.self_consistency`: the two-stage vote, and the soft variant's weights or its fallback note."""
import json

from ie.llm.types import ChatResponse, Choice
from teacher.self_consistency import LOGPROB_FALLBACK, sample_weights, vote
from tests.hand_claims import ent
from tests.teacher_script import DIXON, Script, entities, label


def test_two_stage_vote_on_mention_then_type():
    a_loc, a_org, b = ent("Apple", 0, "Loc", 0.5), ent("Apple", 0, "Org", 0.5), ent("Jobs", 10, "Peop")
    samples = [[a_org, b], [a_org], [a_loc], [a_loc, b]]
    kept = vote(samples, [1.0, 1.0, 1.0, 0.0], lambda c: c.arg.span)
    assert [(d.claim.arg.text, d.claim.arg.type, d.support) for d in kept] == [("Apple", "Org", (2 / 3,))]
    assert sample_weights([-0.1, None], soft=True) is None and sample_weights([-0.1, None], soft=False) == [1, 1]


def test_soft_self_consistency_weights_by_logprob_or_says_it_fell_back():
    answers = [{"entities": [{"text": "Dixon", "type": t, "confidence": 1}], "relations": []}
               for t in ("Org", "Loc", "Loc")]
    plain = Script({"OneStepAnswer": [json.dumps(a) for a in answers]})
    out = label(plain, DIXON, method="soft-self-consistency", sc_samples=3)
    assert entities(out) == [("Dixon", "Loc")] and LOGPROB_FALLBACK in out.debate.notes
    confident = iter([(answers[0], -0.01), (answers[1], -3.0), (answers[2], -3.0)])

    def with_logprobs(request):
        answer, lp = next(confident)
        return ChatResponse([Choice(json.dumps(answer), token_logprobs=[lp])], 10, 5)
    weighted = Script({"OneStepAnswer": ChatResponse([], 0, 0)})
    weighted.transport.script = with_logprobs
    out = label(weighted, DIXON, method="soft-self-consistency", sc_samples=3)
    assert entities(out) == [("Dixon", "Org")] and not out.debate.notes
