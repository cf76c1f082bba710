"""Routing (teacher/routing.py): the pure decision, and the router driven by a scripted LLM on each schema, then
(slow) by the embedded server."""
import pytest
from pydantic import ValidationError

from ie.config import ConfigError, load_config, resolve_config_path
from ie.llm.client import Endpoint, LLMClient, response_format
from ie.llm.fake import schema_name
from ie.records import LabelledRecord
from ie.schema import Entity, Record, Relation
from teacher.config import TeacherConfig
from teacher.report import run_summary, write_report
from teacher.routing import (
    MAX_RELATION_TYPES,
    NOT_ROUTED,
    decide,
    gold_types_kept,
    gold_types_ranked,
    kept_types,
    route_answer,
)
from tests.schemas import CASES, CONLL04, NYT, SEMEVAL
from tests.teacher_script import FAST, Script, agent_answers, by_name, called, found_args, label, on, with_pairs

CONLL = CONLL04.schema


def test_a_relation_is_skipped_when_no_routed_type_can_fill_a_side():
    routing = decide(CONLL, ["Peop", "Loc"], ["Live_In", "Work_For", "Kill"])
    assert routing.entity_types == ("Peop", "Loc") and routing.relation_types == ("Live_In", "Kill")
    assert routing.log().skipped == {"ner:Org": NOT_ROUTED, "ner:Other": NOT_ROUTED,
                               "re:Work_For": "no routed entity type can be its tail",
                               "re:OrgBased_In": NOT_ROUTED, "re:Located_In": NOT_ROUTED}


def test_with_no_entity_type_routed_no_relation_is_either():
    routing = decide(NYT.schema, [], list(NYT.schema.relation_types))
    assert routing.entity_types == () and routing.relation_types == ()
    assert set(routing.skipped.values()) == {NOT_ROUTED, "no routed entity type can be its head"}


def test_the_answer_holds_only_the_schema_s_names_and_is_bounded():
    schema = NYT.schema
    model = route_answer(tuple(schema.entity_types), tuple(schema.relation_types))
    with pytest.raises(ValidationError):
        model.model_validate({"entity_types": ["Entity"], "relation_types": ["/people/person/spouse"]})
    many = model.model_validate({"entity_types": ["Entity", "Entity"], "relation_types": [*schema.relation_types]})
    assert many.entity_types == ["Entity"] and len(many.relation_types) == MAX_RELATION_TYPES
    wire = response_format(model)["json_schema"]["schema"]["properties"]
    assert wire["relation_types"]["items"]["enum"] == list(schema.relation_types)


@by_name
def test_only_the_routed_agents_are_called(case):
    ents, rels = case.routed
    script = Script({**agent_answers(case), "RouteAnswer": {"entity_types": list(ents), "relation_types": list(rels)}})
    out = on(case, script, routing="on")
    [prompt] = [r.messages[1]["content"] for r in script.transport.requests if schema_name(r) == "RouteAnswer"]
    assert all(spec.description in prompt for spec in [*case.schema.entity_types.values(),
                                                       *case.schema.relation_types.values()])
    routing = out.debate.routing
    assert routing.entity_types == [t for t in case.schema.entity_types if t in ents]
    assert routing.answer == {"entity_types": list(ents), "relation_types": list(rels)}
    assert routing.fallback is None
    assert set(called(script, out, "ner_agent")) == {f"ner:{t}" for t in ents}
    found = [a for a in found_args(case) if a.type in ents]
    assert set(called(script, out, "re_agent")) == {f"re:{r}" for r in set(routing.relation_types) &
                                                    with_pairs(case, found)}
    assert not set(called(script, out, "ner_agent")) & set(routing.skipped)
    assert not set(called(script, out, "re_agent")) & set(routing.skipped)
    skipped = len(case.schema.entity_types) + len(case.schema.relation_types) - len(ents) - len(
        routing.relation_types)
    assert out.stats.agents_skipped_by_routing == len(routing.skipped) == skipped
    assert run_summary([out])["routing"] == {"records": 1, "agents_skipped": skipped, "fallbacks": 0}


def test_the_router_s_menu_comes_before_the_text_so_every_sentence_shares_it():
    case = NYT
    script = Script({**agent_answers(case), "RouteAnswer": {"entity_types": [], "relation_types": []}})
    for text in ("Ronald Reagan lived in Dixon .", "Paris is the capital of France ."):
        label(script, text, schema=case.schema, routing="on")
    first, second = [r.messages[1]["content"] for r in script.transport.requests if schema_name(r) == "RouteAnswer"]
    menu = first[:first.index("<text>")]
    assert second.startswith(menu) and all(s.description in menu for s in case.schema.relation_types.values())


@by_name
def test_a_router_answer_that_never_validates_routes_every_type(case):
    script = Script({**agent_answers(case), "RouteAnswer": {"entity_types": ["Nonsense"], "relation_types": []}})
    out = on(case, script, routing="on", parse_retries=0)
    routing = out.debate.routing
    assert routing.fallback.startswith("invalid answer") and routing.answer is None
    assert routing.entity_types == list(case.schema.entity_types) and routing.skipped == {}
    assert set(called(script, out, "ner_agent")) == {f"ner:{t}" for t in case.schema.entity_types}
    assert out.stats.agents_skipped_by_routing == 0 and out.stats.failed_calls == 1


@pytest.mark.parametrize("name, mode, routed", [("conll04", "auto", False), ("nyt", "auto", True),
                                                 ("nyt", "off", False), ("conll04", "on", True)])
def test_auto_routes_only_a_schema_with_many_types(name, mode, routed):
    schema = load_config(resolve_config_path(name)).task_schema
    script = Script({"RouteAnswer": {"entity_types": list(schema.entity_types), "relation_types": []}})
    out = label(script, CONLL04.text, schema=schema, routing=mode)
    assert bool(called(script, out, "router")) == routed == bool(out.debate.routing)


@by_name
def test_likelihood_router_routes_the_types_whose_yes_is_probable_enough(case):
    ents, rels = case.routed
    schema = case.schema
    answers = {("route", t): {"yes": 0.9 if t in ents else 0.2, "no": 0.1 if t in ents else 0.8}
               for t in schema.entity_types}
    answers.update({("route", spec.description): {"yes": 0.6, "no": 0.4} if r in rels else {"no": 0.9, "yes": 0.1}
                    for r, spec in schema.relation_types.items()})
    unscored = next(r for r in rels)  # the endpoint gives no alternatives for this one: it is routed
    answers[("route", schema.relation_types[unscored].description)] = "no alternatives"
    script = Script({**agent_answers(case), **answers})
    out = on(case, script, routing="on", route_by="likelihood")
    routing = out.debate.routing
    assert routing.entity_types == [t for t in schema.entity_types if t in ents]
    assert set(routing.relation_types) == set(decide(schema, ents, rels).relation_types)
    assert unscored not in routing.answer and routing.answer[ents[0]] == pytest.approx(0.9)
    assert called(script, out, "router")["router"] == len(schema.entity_types) + len(schema.relation_types)
    assert set(called(script, out, "ner_agent")) == {f"ner:{t}" for t in ents}
    stricter = on(case, Script({**agent_answers(case), **answers}), routing="on", route_by="likelihood",
                  route_threshold=0.7)
    assert set(stricter.debate.routing.relation_types) <= {unscored}


def test_top_k_routes_the_k_best_scored_types_of_each_kind_whatever_the_threshold():
    asked = [("route_entity", "A"), ("route_entity", "B"), ("route_entity", "C"),
             ("route_relation", "r"), ("route_relation", "s"), ("route_relation", "t")]
    scores = {("route_entity", "A"): 0.1, ("route_entity", "B"): 0.3, ("route_entity", "C"): 0.3,
              ("route_relation", "r"): 0.05, ("route_relation", "t"): 0.2}  # s has no score: it counts as 1.0
    assert kept_types(asked, scores, 0.5) == {("route_relation", "s")}
    assert kept_types(asked, scores, 0.5, top_k=1) == {("route_entity", "B"), ("route_relation", "s")}  # B ties C
    assert kept_types(asked, scores, 0.5, top_k=2) == {("route_entity", "B"), ("route_entity", "C"),
                                                        ("route_relation", "s"), ("route_relation", "t")}
    assert kept_types(asked, scores, 0.5, top_k=9) == set(asked)


def test_likelihood_router_by_rank_calls_the_top_k_agents_though_every_score_is_low():
    schema = CONLL04.schema
    low = dict(zip(schema.entity_types, (0.3, 0.2, 0.1, 0.05)))
    answers = {("route", t): {"yes": p, "no": 1 - p} for t, p in low.items()}
    answers.update({("route", spec.description): {"yes": 0.01 * (i + 1), "no": 0.9}
                    for i, spec in enumerate(schema.relation_types.values())})
    by_threshold = on(CONLL04, Script({**agent_answers(CONLL04), **answers}), routing="on", route_by="likelihood")
    assert by_threshold.debate.routing.entity_types == []
    script = Script({**agent_answers(CONLL04), **answers})
    out = on(CONLL04, script, routing="on", route_by="likelihood", route_top_k=2)
    top_entities = sorted(low, key=lambda t: -low[t])[:2]
    assert out.debate.routing.entity_types == [t for t in schema.entity_types if t in top_entities]
    assert set(called(script, out, "ner_agent")) == {f"ner:{t}" for t in top_entities}
    top_relations = list(schema.relation_types)[-2:]
    assert set(out.debate.routing.relation_types) == set(decide(schema, top_entities, top_relations).relation_types)


def test_by_rank_a_kind_with_at_most_k_types_is_routed_without_asking():
    schema = SEMEVAL.schema  # one entity type: with top 3, Nominal is routed whatever its score, so it is not asked
    answers = {("route", spec.description): {"yes": 0.1 * (i + 1), "no": 0.5}
               for i, spec in enumerate(schema.relation_types.values())}
    script = Script({**agent_answers(SEMEVAL), **answers, ("route", "Nominal"): {"yes": 0.01, "no": 0.99}})
    out = on(SEMEVAL, script, routing="on", route_by="likelihood", route_top_k=3)
    routing = out.debate.routing
    assert called(script, out, "router")["router"] == len(schema.relation_types)
    assert routing.entity_types == ["Nominal"] and "Nominal" not in routing.answer
    assert set(routing.relation_types) == set(list(schema.relation_types)[-3:])
    every = on(SEMEVAL, Script({**agent_answers(SEMEVAL), **answers}), routing="on", route_by="likelihood",
               route_top_k=len(schema.relation_types))
    assert not [c for c in every.debate.calls if c.role == "router"] and every.debate.routing.fallback is None
    assert set(every.debate.routing.relation_types) == set(schema.relation_types)


def test_likelihood_router_with_no_scores_routes_every_type():
    script = Script(agent_answers(NYT))
    out = on(NYT, script, routing="on", route_by="likelihood")
    routing = out.debate.routing
    assert "top_logprobs" in routing.fallback and routing.relation_types == list(NYT.schema.relation_types)


def test_menu_router_asks_once_a_kind_and_routes_its_k_most_probable_letters():
    schema = CONLL04.schema  # entity types A Peop, B Loc, C Org, D Other; relation types A Live_In ... E Kill
    answers = {("menu", "entity"): {"B": 0.5, "A": 0.3, "C": 0.15, "D": 0.05},
               ("menu", "relation"): {"A": 0.6, "D": 0.3, "E": 0.1}}  # B and C: no letter, probability 0
    script = Script({**agent_answers(CONLL04), **answers})
    out = on(CONLL04, script, routing="on", route_by="menu", route_top_k=2)
    routing = out.debate.routing
    assert called(script, out, "router")["router"] == 2
    assert routing.entity_types == ["Peop", "Loc"] and set(routing.relation_types) == {"Live_In", "Located_In"}
    assert routing.answer["Loc"] == pytest.approx(0.5) and routing.answer["Work_For"] == 0.0
    assert set(called(script, out, "ner_agent")) == {"ner:Peop", "ner:Loc"}
    [entity_menu] = [r.messages[1]["content"] for r in script.transport.requests
                     if "Which entity type" in r.messages[1]["content"]]
    menu, text = entity_menu.split("<text>")
    assert f"B. Loc: {schema.entity_types['Loc'].description}" in menu and CONLL04.text not in menu
    assert CONLL04.text in text  # the menu, the same for every sentence, comes first: the prefix cache keeps it


def test_menu_router_routes_a_kind_whose_call_fails_whole_and_every_type_when_both_fail():
    relation_fails = {("menu", "entity"): {"A": 0.9, "B": 0.1}}  # the relation call gets no alternatives
    out = on(CONLL04, Script({**agent_answers(CONLL04), **relation_fails}), routing="on", route_by="menu",
             route_top_k=1)
    routing = out.debate.routing
    assert routing.entity_types == ["Peop"] and routing.fallback is None
    assert set(routing.relation_types) == set(decide(CONLL04.schema, ["Peop"], list(CONLL04.schema.relation_types))
                                              .relation_types)
    none = on(CONLL04, Script(agent_answers(CONLL04)), routing="on", route_by="menu", route_top_k=1)
    assert "top_logprobs" in none.debate.routing.fallback
    assert none.debate.routing.entity_types == list(CONLL04.schema.entity_types)


def test_menu_router_asks_only_a_kind_with_more_than_k_types_and_letters_at_most_26():
    script = Script({**agent_answers(SEMEVAL), ("menu", "relation"): {"C": 0.5, "A": 0.3, "B": 0.2}})
    out = on(SEMEVAL, script, routing="on", route_by="menu", route_top_k=3)  # one entity type: routed unasked
    routing = out.debate.routing
    assert called(script, out, "router")["router"] == 1 and routing.entity_types == ["Nominal"]
    assert set(routing.relation_types) == set(list(SEMEVAL.schema.relation_types)[:3])
    many = SEMEVAL.schema.model_copy(update={"relation_types": {
        f"R{i}": next(iter(SEMEVAL.schema.relation_types.values())) for i in range(27)}})
    with pytest.raises(ConfigError, match="menu letters at most 26 relation types and the schema has 27"):
        label(Script({}), SEMEVAL.text, schema=many, routing="on", route_by="menu", route_top_k=3)
    label(Script({}), SEMEVAL.text, schema=many, routing="off", route_by="menu", route_top_k=3)  # not routed: fine


def test_gold_types_kept_counts_what_routing_lost_and_the_report_says_it(tmp_path):
    gold = Record(id="r", text="Ronald Reagan lived in Dixon .",
                  entities=[Entity(start=0, end=13, type="Peop", text="Ronald Reagan"),
                            Entity(start=23, end=28, type="Loc", text="Dixon")],
                  relations=[Relation(head=0, tail=1, type="Live_In")])
    routing = {"entity_types": ["Peop"], "relation_types": ["Live_In"], "skipped": {"ner:Loc": NOT_ROUTED}}
    pred = LabelledRecord(id="r", text=gold.text, debate={"method": "crossagentie", "routing": routing},
                          stats={"agents_skipped_by_routing": 1})
    unrouted = LabelledRecord(id="s", text=gold.text, debate={"method": "crossagentie"})
    golds = [gold, gold.model_copy(update={"id": "s"})]
    kept = gold_types_kept(golds, [pred, unrouted])
    assert kept == {"entity_types": {"kept": 1, "gold": 2, "fraction": 0.5},
                    "relation_types": {"kept": 1, "gold": 1, "fraction": 1.0}}
    assert run_summary([pred, unrouted])["routing"] == {"records": 1, "agents_skipped": 1, "fallbacks": 0}
    metrics = write_report(tmp_path, golds, [pred, unrouted], load_config(resolve_config_path("conll04")), TeacherConfig())
    assert metrics.teacher["routing"]["gold_types_kept"] == kept
    assert ("1 records routed, 1 type agents not called, 0 fallbacks to every agent; kept 1 of 2 gold entity types "
            "and 1 of 1 gold relation types of their sentences.") in (tmp_path / "report.md").read_text()


def test_gold_types_ranked_says_whether_the_router_s_scores_rank_and_the_report_says_it(tmp_path):
    gold = Record(id="r", text="Ronald Reagan lived in Dixon , Illinois .",
                  entities=[Entity(start=0, end=13, type="Peop", text="Ronald Reagan"),
                            Entity(start=23, end=28, type="Loc", text="Dixon"),
                            Entity(start=31, end=39, type="Loc", text="Illinois")],
                  relations=[Relation(head=0, tail=1, type="Live_In"), Relation(head=1, tail=2, type="Located_In")])
    scores = {"Peop": 0.7, "Loc": 0.6, "Org": 0.3, "Other": 0.1,
              "Live_In": 0.6, "Work_For": 0.5, "Kill": 0.4, "OrgBased_In": 0.3, "Located_In": 0.2}
    routed = {"entity_types": ["Peop", "Loc"], "relation_types": ["Live_In", "Work_For"]}
    by_likelihood = LabelledRecord(id="r", text=gold.text,
                                   debate={"method": "crossagentie", "routing": {**routed, "answer": scores}})
    by_answer = LabelledRecord(id="s", text=gold.text,
                               debate={"method": "crossagentie", "routing": {**routed, "answer": routed}})
    golds = [gold, gold.model_copy(update={"id": "s"})]
    ranked = gold_types_ranked(golds, [by_likelihood, by_answer], CONLL)
    # Peop (0.7) and Loc (0.6) lead CoNLL04's four entity types; Live_In (0.6) leads its five relation types and
    # Located_In (0.2) is last
    assert ranked == {
        "entity_types": {"records": 1, "gold": 2, "top": {"1": 1, "2": 2, "4": 2}, "chance": {"1": 0.5, "2": 1.0, "4": 2.0}},
        "relation_types": {"records": 1, "gold": 2, "top": {"1": 1, "2": 1, "4": 1},
                           "chance": {"1": 0.4, "2": 0.8, "4": 1.6}}}
    one_type = CONLL.model_copy(update={"entity_types": {"Peop": CONLL.entity_types["Peop"]}})
    assert gold_types_ranked(golds, [by_likelihood], one_type)["entity_types"]["records"] == 0  # nothing to rank
    relations_only = LabelledRecord(id="r", text=gold.text, debate={"method": "crossagentie", "routing": {
        **routed, "answer": {r: p for r, p in scores.items() if r in CONLL.relation_types}}})  # entities unasked
    assert gold_types_ranked(golds, [relations_only], CONLL)["entity_types"]["records"] == 0
    metrics = write_report(tmp_path, golds, [by_likelihood, by_answer], load_config(resolve_config_path("conll04")),
                           TeacherConfig())
    assert metrics.teacher["routing"]["gold_types_ranked"] == ranked
    report = (tmp_path / "report.md").read_text()
    assert ("Router ranking (by score), 1 records: of 2 gold entity types, top 1: 1, top 2: 2, top 4: 2 (k types at random: "
            "0.5, 1.0, 2.0).") in report
    assert ("Router ranking (by score), 1 records: of 2 gold relation types, top 1: 1, top 2: 1, top 4: 1 (k types at random: "
            "0.4, 0.8, 1.6).") in report


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_routing_is_recorded_only_for_crossagentie(case):
    script = Script({**agent_answers(case), "RouteAnswer": {"entity_types": [], "relation_types": []}})
    out = on(case, script, method="type-agents", routing="on")
    assert not called(script, out, "router") and out.debate.routing is None


@pytest.mark.parametrize(("route_by", "top_k"), [("answer", 0), ("likelihood", 0), ("likelihood", 2), ("menu", 2)])
@pytest.mark.slow
def test_routing_asks_the_real_server_and_calls_only_the_routed_agents(endpoint, route_by, top_k):
    import asyncio

    from teacher.runner import label_records

    schema = load_config(resolve_config_path("nyt")).task_schema
    text = "Bobby Fischer , the chess champion , lived in Reykjavik , the capital of Iceland ."
    # As the embedded run asks it: llguidance keeps the answer's lists within their bounds.
    grammar = Endpoint(endpoint.url, endpoint.model, structured_output="llguidance")
    client = LLMClient.from_endpoints([grammar], max_parse_retries=0)
    cfg = TeacherConfig(**{**FAST, "max_tokens": 96, "routing": "on", "route_by": route_by, "route_top_k": top_k,
                           "summarizer": "likelihood", "max_rounds": 0})
    [out] = asyncio.run(label_records([Record(id="r", text=text)], "crossagentie", schema, client, cfg))
    calls, routing = out.debate.calls, out.debate.routing
    routers = [c for c in calls if c.role == "router"]
    assert routers == calls[:len(routers)] and all(c.error is None for c in routers)
    assert routing.fallback is None
    if route_by == "answer":
        [router] = routers
        assert router.completion_tokens > 0 and router.answer == routing.answer
        assert set(routing.answer["relation_types"]) <= set(schema.relation_types)
    elif route_by == "menu":  # NYT's one entity type is routed unasked; its 24 relation types are one menu
        [router] = routers
        assert router.completion_tokens == 1 and sum(routing.answer.values()) == pytest.approx(1, abs=0.01)
    else:
        # by rank, NYT's one entity type is routed unasked: no score could drop it
        assert len(routers) == (0 if top_k else len(schema.entity_types)) + len(schema.relation_types)
        assert all(c.completion_tokens == 1 for c in routers)
        assert routing.answer and all(0 <= p <= 1 for p in routing.answer.values())
    if top_k:  # NYT's one entity type is kept, and its relation types are the top_k best scored, whatever P(yes)
        best = sorted(schema.relation_types, key=lambda r: -routing.answer[r])[:top_k]
        assert routing.entity_types == list(schema.entity_types) and set(routing.relation_types) == set(best)
    agents = {f"ner:{t}" for t in schema.entity_types} | {f"re:{r}" for r in schema.relation_types}
    routed = {f"ner:{t}" for t in routing.entity_types} | {f"re:{r}" for r in routing.relation_types}
    assert routed | set(routing.skipped) == agents and not routed & set(routing.skipped)
    called = {c.agent for c in calls if c.role in ("ner_agent", "re_agent")}
    assert called <= routed and out.stats.agents_skipped_by_routing == len(routing.skipped)
