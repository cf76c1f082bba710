"""`teacher.type_agents` driven by a scripted LLM: one agent per type, each asked about its own type once."""
import re
from collections import Counter

from ie.llm.fake import schema_name
from tests.teacher_script import Script, agent_answers, by_name, called, entities, found_args, on, with_pairs


@by_name
def test_type_agents_ask_each_type_once_and_keep_what_they_ground(case):
    script = Script(agent_answers(case))
    out = on(case, script, method="type-agents")
    assert called(script, out, "ner_agent") == Counter(f"ner:{t}" for t in case.schema.entity_types)
    for request in script.transport.requests:
        if schema_name(request) == "MentionList":
            etype = re.search(r"You are the (\S+) agent", request.messages[1]["content"]).group(1)
            assert f"{etype}: {case.schema.entity_types[etype].description}." in request.messages[1]["content"]
    assert sorted(entities(out)) == sorted((m, t) for t, ms in case.mentions.items() for m in ms)
    expected = with_pairs(case, found_args(case))
    assert expected and set(called(script, out, "re_agent")) == {f"re:{name}" for name in expected}



@by_name
def test_relation_agents_that_take_any_argument_share_their_prompt_up_to_their_own_line(case):
    script = Script(agent_answers(case))
    on(case, script, method="type-agents")
    prompts = [(re.search(r"You are the (\S+) agent", p).group(1), p) for p in
               (r.messages[1]["content"] for r in script.transport.requests if schema_name(r) == "PairList")]
    restricted = {name for name, spec in case.schema.relation_types.items() if spec.head or spec.tail}
    shared = {p[:p.index("You are the ")] for name, p in prompts if name not in restricted}
    assert len(prompts) >= 2 and len(shared) <= 1
    for prefix in shared:
        assert "Candidates: " in prefix and "most pairs are unrelated" in prefix  # the instruction is shared too
    for name, prompt in prompts:
        own = prompt[prompt.index("You are the "):]
        assert f"{name}(head, tail): {case.schema.relation_types[name].description}." in own
        # A relation that restricts its arguments' types lists its own typed candidates, then the instruction.
        assert ("Heads (" in own) == ("most pairs are unrelated" in own) == (name in restricted)
