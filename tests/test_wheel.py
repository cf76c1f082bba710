"""The package as a user installs it: a wheel built from this tree, installed into a fresh venv, labels a text
through the public API from a folder outside the repository, with the shipped configs found inside the package.
Offline: the venv takes its dependencies from this interpreter's site-packages, never from an index. About 8 s
(no model runs), so it is not marked slow."""
import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from fault_server import FaultServer, Reply, always

from ie.config import REPO_ROOT

SOURCES = ("pyproject.toml", "README.md", "crossagentie", "ie", "teacher", "distill", "student", "serve")
SHIPPED = {"crossagentie/labelling.py", "ie/configs/conll04.yaml", "ie/configs/models.yaml",
           "ie/configs/accelerate/ddp.yaml", "ie/prompts/student.txt", "teacher/prompts/direct.txt",
           "ie/configs/examples/news.jsonl", "ie/viewer_files/report.html.j2", "ie/viewer_files/viewer.js"}
ANSWER = Reply(json.dumps({"entities": [{"text": "NASA", "type": "Org", "confidence": 0.9},
                                        {"text": "Houston", "type": "Loc", "confidence": 0.9}]}))
SCRIPT = """
import json, sys
import crossagentie, ie.config
from ie.llm.local import load_catalogue
records = crossagentie.extract_batch(["NASA is in Houston ."], schema="conll04", method="direct",
                                     endpoint=sys.argv[1], model_name="m", retries=0)
print(json.dumps({"modules": [crossagentie.__file__, ie.config.__file__],
                  "configs": [str(ie.config.resolve_config_path(c)) for c in ("conll04", "configs/conll04.yaml")],
                  "default_model": load_catalogue().default,
                  "records": [r.model_dump(mode="json") for r in records]}))
"""


def run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(tmp_path: Path) -> Path:
    """A wheel of a copy of the tree (pip builds in place: no build/ or egg-info lands in the repository)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", tmp_path / "wheels", src)
    (wheel,) = (tmp_path / "wheels").glob("crossagentie-*.whl")
    return wheel


def fresh_venv(path: Path) -> Path:
    """A venv whose dependencies are this interpreter's site-packages, added as plain paths: their .pth files
    (this checkout's editable install among them) are not run, so the project comes from the wheel alone."""
    run(sys.executable, "-m", "venv", "--without-pip", path)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(path), "platbase": str(path)}))
    deps = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "dependencies.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    return path / "bin" / "python"


def test_an_installed_wheel_labels_a_text_outside_the_repository(tmp_path):
    wheel = build_wheel(tmp_path)
    assert SHIPPED <= set(zipfile.ZipFile(wheel).namelist())
    python = fresh_venv(tmp_path / "venv")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "label.py").write_text(SCRIPT, encoding="utf-8")
    with FaultServer(always(ANSWER)) as server:
        out = json.loads(run(python, "-I", "label.py", server.url, cwd=elsewhere))
    venv = (tmp_path / "venv").resolve()
    assert all(Path(p).resolve().is_relative_to(venv) for p in out["modules"] + out["configs"]), out
    assert out["default_model"] == "qwen2.5-coder-1.5b"  # configs/models.yaml, read from the package
    (record,) = out["records"]
    assert [(e["start"], e["end"], e["type"]) for e in record["entities"]] == [(0, 4, "Org"), (11, 18, "Loc")]
    assert all(record["text"][e["start"]:e["end"]] == e["text"] for e in record["entities"])
    assert len(server.requests) == 1
