"""The run viewer: one self-contained `report.html` (Jinja2 template, styles and script inline, the records as
embedded JSON; no network) that opens from disk. Written by every teacher run, `serve.client` run and bench
beside their predictions; what it shows is `ie.view.RunView`."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ie.view import RunView

FILES = Path(__file__).resolve().parent / "viewer_files"
PAGE = "report.html"
PAGE_SIZE = 25  # records a page: a run of thousands stays fast


@cache
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(FILES), autoescape=True, undefined=StrictUndefined,
                       keep_trailing_newline=True)


def render_page(view: RunView) -> str:
    """The page's HTML (pure)."""
    return _environment().get_template("report.html.j2").render(view=view.model_dump(mode="json"),
                                                                 page_size=PAGE_SIZE)


def write_page(path: Path, view: RunView) -> Path:
    """The page at `path` (a run folder's `PAGE`); returns `path`."""
    path.write_text(render_page(view), encoding="utf-8")
    return path
