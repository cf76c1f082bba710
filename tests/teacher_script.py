"""The teacher on a scripted endpoint, for the tests of its mechanisms: `Script` answers each agent by its
answer schema and type, `label` runs one record through a method, and the builders those tests share; `GOLD`
is the three sentences the run tests label, `FAST` the settings the slow tests run the real model with."""
import asyncio
import json
import re
from collections import Counter

import pytest

from ie.claims import Arg
from ie.config import load_config, resolve_config_path
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport, next_token_response, schema_name
from ie.llm.types import ChatResponse
from ie.mentions import MentionRules, ground
from ie.schema import Record
from teacher.config import TeacherConfig
from teacher.runner import label_records
from teacher.type_agents import candidates, has_pair
from tests.schemas import CASES

SCHEMA = load_config(resolve_config_path("conll04")).task_schema


EMPTY = {"MentionList": {"items": []}, "PairList": {"items": []}, "DebateAnswer": {"stances": []},
         "SummaryAnswer": {"verdicts": []}, "VerifyAnswer": {"verdicts": []}}


class Script:
    """Answers by (schema name, agent) then by schema name; a list answers successive calls in turn."""

    def __init__(self, answers):
        self.answers = answers
        self.transport = ScriptedTransport(self)

    def __call__(self, request):
        name = schema_name(request)
        asked = re.search(r'In this text, "(.+?)" is which type', request.messages[1]["content"])
        if asked:  # the likelihood Summarizer: answers keyed ("choice", mention) give next-token probabilities
            answer = self.answers.get(("choice", asked.group(1)), "no alternatives")
            return next_token_response(answer) if isinstance(answer, dict) else answer
        routed = re.search(r"Does the text (?:mention a (\S+) \(|state this relation between two of its mentions: "
                           r"(.+)\?)", request.messages[1]["content"])
        if routed:  # the likelihood router: answers keyed ("route", type name or relation description)
            answer = self.answers.get(("route", routed.group(1) or routed.group(2)), "no alternatives")
            return next_token_response(answer) if isinstance(answer, dict) else answer
        menu = re.search(r"Which (entity|relation) type (?:has a mention|does the text state)", request.messages[1]["content"])
        if menu:  # the menu router: answers keyed ("menu", kind) give the letters' probabilities
            answer = self.answers.get(("menu", menu.group(1)), "no alternatives")
            return next_token_response(answer) if isinstance(answer, dict) else answer
        found = re.search(r"You are the (\S+) agent", request.messages[1]["content"])
        key = (name, found.group(1)) if found else name
        answer = self.answers.get(key, self.answers.get(name, EMPTY.get(name)))
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        return answer if isinstance(answer, (str, ChatResponse)) else json.dumps(answer)

    def roles(self, record):
        return [(c.role, c.agent) for c in record.debate.calls]


def label(script, text, method="crossagentie", schema=SCHEMA, **cfg):
    client = LLMClient([script.transport])
    [out] = asyncio.run(label_records([Record(id="r", text=text)], method, schema, client,
                                      TeacherConfig(method=method, **cfg)))
    assert "error" not in out.stats, out.stats
    return out


def items(*mentions, conf=0.9):
    return {"items": [{"text": m, "confidence": conf, "evidence": m} for m in mentions]}


def stance(choice, conf=0.8, key="stances"):
    return {key: [{"item": 1, "choice": choice, "confidence": conf, "reason": "because"}]}


def entities(record):
    return [(e.text, e.type) for e in record.entities]


SMITHSONIAN = "Smithsonian officials met in Washington ."
CONFLICT = {("MentionList", "Org"): items("Smithsonian"),
            ("MentionList", "Loc"): {"items": [{"text": "Smithsonian", "confidence": 0.6},
                                               {"text": "Washington", "confidence": 0.9}]}}


DIXON = "Ronald Reagan grew up in Dixon , Illinois ."
FEEDBACK = {("MentionList", "Peop"): items("Ronald Reagan"), ("MentionList", "Loc"): items("Dixon"),
            ("PairList", "Live_In"): {"items": [{"head": "Reagan", "tail": "Illinois", "confidence": 0.8}]}}


# The mechanisms on schemas unlike CoNLL04's (tests/schemas.py): each path, on each schema.
by_name = pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)


def on(case, script, method="crossagentie", **cfg):
    return label(script, case.text, method=method, schema=case.schema, **cfg)


def pairs(*found, conf=0.9):
    return {"items": [{"head": h, "tail": t, "confidence": conf} for h, t in found]}


def agent_answers(case, conflict=False):
    """The case's type agents' answers; with `conflict`, the loser's agent also claims what the winner's does."""
    answers = {("MentionList", t): items(*ms) for t, ms in case.mentions.items()}
    if conflict and case.entity_conflict:
        mention, winner, loser = case.conflict
        answers[("MentionList", loser)] = items(*case.mentions.get(loser, []), mention, conf=0.6)
    elif conflict:
        for relation in case.conflict[:2]:
            answers[("PairList", relation)] = pairs(case.conflict_pair)
    return answers


def relations(record):
    return [(record.entities[r.head].text, r.type, record.entities[r.tail].text) for r in record.relations]


def called(script, record, role):
    return Counter(agent for r, agent in script.roles(record) if r == role)


def with_pairs(case, args):
    """The relation types with a type-compatible (head, tail) pair among `args`."""
    return {name for name, spec in case.schema.relation_types.items()
            if has_pair(candidates(args, spec.head), candidates(args, spec.tail))}


def found_args(case):
    return [Arg(s.start, s.end, t, s.text) for t, ms in case.mentions.items() for m in ms
            for s in ground(case.text, m, MentionRules(), [])]


GOLD = [
    Record(id="a", text="Dole met Reagan in Rome .", entities=[
        {"start": 0, "end": 4, "type": "Peop", "text": "Dole"}, {"start": 9, "end": 15, "type": "Peop", "text": "Reagan"},
        {"start": 19, "end": 23, "type": "Loc", "text": "Rome"}]),
    Record(id="b", text="NASA is in Houston .", entities=[
        {"start": 0, "end": 4, "type": "Org", "text": "NASA"}, {"start": 11, "end": 18, "type": "Loc", "text": "Houston"}],
        relations=[{"head": 0, "tail": 1, "type": "OrgBased_In"}]),
    Record(id="c", text="Paris is big .", entities=[{"start": 0, "end": 5, "type": "Loc", "text": "Paris"}]),
]


TEACHER_STATS = ["calls", "cached_calls", "prompt_tokens", "completion_tokens", "prefix_cached_tokens", "failed_calls",
                 "truncated_calls", "ungrounded_items", "conflicts", "unresolved_conflicts",
                 "agents_skipped_by_routing", "wall_s"]


def direct_answer(request):
    text = request.messages[1]["content"]
    names = [w for w in ("Dole", "Reagan", "Rome", "NASA", "Houston", "Paris") if f"{w} " in text.split("<text>")[1]]
    return json.dumps({"entities": [{"text": n, "type": "Loc", "confidence": 0.8} for n in names]})


FAST = {"max_tokens": 32, "sc_samples": 2, "max_rounds": 1, "cross_task_rounds": 1, "parse_retries": 0,
        "progress": False}
