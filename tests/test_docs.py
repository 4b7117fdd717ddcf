"""The documentation keeps up with the code: settings, exports, README and CI agree."""

from __future__ import annotations

import re
from pathlib import Path

import kenning
from kenning.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_documented() -> None:
    text = (ROOT / "docs" / "settings.md").read_text()
    missing = [name for name in Settings.model_fields if f"`{name}`" not in text]
    assert missing == []


def test_init_only_reexports_and_all_is_complete() -> None:
    public = {name for name in dir(kenning) if not name.startswith("_")}
    modules = {"client", "core", "dates", "text", "errors", "models", "settings", "pipeline", "providers",
               "store", "search", "lifecycle", "access", "cli", "demo", "server", "mcp", "eval", "_time", "files",
               "requests", "remote", "tools", "integrations"}
    assert public - modules - set(kenning.__all__) == set()
    for name in kenning.__all__:
        assert hasattr(kenning, name), name


def test_readme_quickstart_has_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", quickstart, re.S)
    assert len(commands) == 2
    assert "kenning demo" in commands[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1].strip() in ci


def test_every_cli_command_has_help_with_an_example() -> None:
    import click

    from kenning.cli import cli

    def walk(group: click.Group, prefix: str = ""):  # noqa: ANN202
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from walk(command, prefix + name + " ")
            else:
                yield prefix + name, command

    undocumented = [name for name, command in walk(cli) if "Example:" not in (command.help or "")]
    assert undocumented == []


def test_readme_remembers_a_folder_and_cites_pages(tmp_path, monkeypatch) -> None:
    """The README's folder example runs offline and prints what its comments say."""
    import contextlib
    import io

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Documents: files and folders", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.+?)\n```", section, re.S)[0]
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    promised = [line.split("# ", 1)[1] for line in code.splitlines() if "print(result.files)" in line]
    promised += [line.strip()[2:] for line in code.splitlines() if line.strip().startswith("# ")]
    assert printed == promised
