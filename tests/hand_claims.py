"""Entity claims and their decisions made by hand, for the tests of the teacher's pure parts."""
from ie.claims import AgentId, Arg, Decision, EntityClaim, Settlement


def ent(text, start, etype, conf=0.9, agent=None):
    return EntityClaim(Arg(start, start + len(text), etype, text), AgentId.parse(agent or f"ner:{etype}"), conf)


def decided(claim, conf=0.9, settled="uncontested"):
    return Decision(claim, (conf,), Settlement.parse(settled))
