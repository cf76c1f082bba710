"""crossagentie: entities and relations from texts, by any labelling method, given a schema.

    import crossagentie
    record = crossagentie.extract("Ronald Reagan was born in Tampico .", schema="conll04")  # the debate, embedded
    records = crossagentie.extract_batch(texts, schema="configs/scierc.yaml", method="direct",
                                         endpoint="http://127.0.0.1:8000/v1", model_name="Qwen/Qwen2.5-7B-Instruct")
    records = crossagentie.extract_batch(texts, schema="conll04", method="student",
                                         adapter="runs/student/adapter.gguf")
    crossagentie.visualize(records, schema="conll04", path="report.html")  # the page every run writes

`extract_batch` documents the arguments and every key of the records (`crossagentie.labelling`).
"""
from crossagentie.labelling import METHODS, extract, extract_batch, extract_batch_async
from crossagentie.visualize import visualize
from ie.failures import IncompleteRun

__all__ = ["METHODS", "IncompleteRun", "extract", "extract_batch", "extract_batch_async", "visualize"]
