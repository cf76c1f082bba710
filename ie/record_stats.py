"""A labelled record's `stats` (`ie.records.LabelledRecord.stats`), typed: what its labelling cost and whether
it finished. The teacher (`teacher.context`) and the student (`serve.client`, `ie.student_format`) write it;
readers read attributes, so a counter a labeller does not write reads 0."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class RecordStats(BaseModel):
    """Usage, failures, conflicts, routing and time of one record's labelling. The teacher sets every counter
    (`calls` to `agents_skipped_by_routing`, and `wall_s`); the student sets calls, tokens, `failed_calls` and
    `truncated_calls`, plus `cached` (its one call came from the cache), `ungrounded` (answer items not found in
    the text) and `invalid` (items not of the schema). `failed` (the reason) and `error` mark a record that did
    not finish (see `ie.failures`; the student's `error` may also be an invalid answer's), `windows` one labelled
    in windows (see `ie.windows`)."""
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefix_cached_tokens: int = 0
    failed_calls: int = 0
    truncated_calls: int = 0
    ungrounded_items: int = 0
    conflicts: int = 0
    unresolved_conflicts: int = 0
    agents_skipped_by_routing: int = 0
    cached: bool | None = None
    ungrounded: int | None = None
    invalid: int | None = None
    wall_s: float = 0.0
    failed: str | None = None
    error: str | None = None
    windows: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """Its JSON form, as the record's `stats` holds it: the keys set, none that is None."""
        return self.model_dump(mode="json", exclude_unset=True, exclude_none=True)

