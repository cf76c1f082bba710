"""The run viewer in a real browser: headless Chromium (Debian's `chromium`; `.ci/run` installs it) opens a
generated report.html from disk, a script clicks a mention as a person would, and the test reads what the page
then shows (`--dump-dom`) and saves a screenshot of it (`--screenshot`)."""
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ie.config import load_config, resolve_config_path
from ie.records import LabelledRecord
from ie.view import run_view
from ie.viewer import PAGE, write_page
from tests.debate_record import GOLD, PREDICTED

CHROMIUM = next((p for name in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(name))), None)
SCHEMA = load_config(resolve_config_path("conll04")).task_schema
# As a person would: tick "only records with errors", then click the mention NASA.
CLICK = """<script>
const onlyErrors = document.getElementById("errors-only");
onlyErrors.checked = true;
onlyErrors.dispatchEvent(new Event("change"));
document.querySelectorAll("mark.span")[1].click();
</script></body>"""


class Marks(HTMLParser):
    """The highlighted mentions ((text, tag)) and the text of the opened debate panel."""

    def __init__(self):
        super().__init__()
        self.marks, self.detail, self._in = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "mark":
            self.marks.append(["", ""])
            self._in.append("mark")
        elif tag == "span" and self._in[-1:] == ["mark"] and attrs.get("class") == "tag":
            self._in.append("tag")
        elif tag == "div" and attrs.get("class") == "detail" and "hidden" not in attrs:
            self._in.append("detail")
        elif self._in:
            self._in.append(tag)

    def handle_endtag(self, tag):
        if self._in:
            self._in.pop()

    def handle_data(self, data):
        if "tag" in self._in[-1:]:
            self.marks[-1][1] += data
        elif "mark" in self._in[-1:]:
            self.marks[-1][0] += data
        if "detail" in self._in:
            self.detail.append(data)


def chromium(*args: str, user_dir: Path) -> str:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={user_dir}",
                           "--hide-scrollbars", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def page(tmp_path) -> Path:
    clean = GOLD.model_copy(update={"id": "rec-0"})  # labelled as the gold has it: no errors
    view = run_view("Teacher run: crossagentie", ["Data: two test records."],
                    {"crossagentie": [LabelledRecord(**clean.model_dump()), PREDICTED]},
                    [clean, GOLD], SCHEMA)
    return write_page(tmp_path / PAGE, view)


def test_a_library_user_writes_the_page_of_their_own_records(tmp_path):
    import crossagentie

    path = crossagentie.visualize([PREDICTED], schema="conll04", path=tmp_path / "mine.html", gold=[GOLD])
    assert path == tmp_path / "mine.html" and '"status": "wrong_type"' in path.read_text(encoding="utf-8")


def test_the_page_needs_no_network(page):
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium; .ci/run installs it)")
def test_a_person_sees_highlighted_mentions_and_a_click_opens_the_debate(page, tmp_path):
    clicked = page.with_name("clicked.html")
    clicked.write_text(page.read_text(encoding="utf-8").replace("</body>", CLICK), encoding="utf-8")
    seen = Marks()
    dom = chromium("--dump-dom", clicked.as_uri(), user_dir=tmp_path / "profile")
    seen.feed(dom)
    assert "1–1 of 1 records, page 1 of 1" in dom  # the filter left the record with errors
    assert re.findall(r"\d+ errors?\b", dom) == ["5 errors"], re.findall(r"\d+ errors?\b", dom)
    assert seen.marks == [["Jake Garn", "Peop 0.86"], ["NASA", "Loc 0.55"], ["flew", "Other 0.40"],
                          ["Houston", "Loc"]]
    detail = " ".join(" ".join(seen.detail).split())
    for shown in ("“NASA” Loc 0.55 wrong type (gold: NASA (Org))", "Proposed by ner:Loc 0.60 — “a place”",
                  "ner:Org 0.80", "Conflict (label)", "Settled by summarizer: \"NASA\" is Loc",
                  "Summarizer's verdict on the span", "Loc 0.55"):
        assert shown in detail, detail
    shot = tmp_path / "report.png"
    chromium("--window-size=1100,800", f"--screenshot={shot}", clicked.as_uri(), user_dir=tmp_path / "profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
