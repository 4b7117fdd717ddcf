"""The public surface as type checkers see it: the generated stub is current, mypy reads a
user's script with the verbs' real parameters and return types, and settings refuse names
they do not know."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning import ConfigurationError, Kenning
from kenning._stubs import STUB, render_stub

ROOT = Path(__file__).resolve().parents[1]

USER_SCRIPT = '''\
from kenning import AsyncKenning, Kenning

kn = Kenning(":memory:")
reveal_type(kn.recall)
reveal_type(kn.recall("Where does Alice work?", top_k=5))
reveal_type(kn.list(limit=3))
kn.recall("q", top_k="five")
kn.remember("Alice works at Acme.", datset="main")
kn.remember([{"role": "user", "content": "I live in Porto."}], user="priya")


async def main() -> None:
    async with AsyncKenning(":memory:") as akn:
        reveal_type(await akn.context("q", user="alice"))
'''


def test_the_stub_is_current() -> None:
    assert STUB.read_text() == render_stub(), "kenning/client.pyi is stale: run python -m kenning._stubs"


def test_the_package_says_it_is_typed() -> None:
    assert (ROOT / "kenning" / "py.typed").exists()


def test_mypy_sees_the_verbs_parameters_and_results(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # this checkout's kenning, wherever it is installed
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(tmp_path / ".mypy"), str(script)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240, check=False,
    )
    out = done.stdout
    assert 'Revealed type is "def (query: str, *, dataset: str =' in out, out
    assert "-> kenning.models.RecallResult" in out, out
    assert 'user.py:5: note: Revealed type is "kenning.models.RecallResult"' in out, out
    assert 'user.py:6: note: Revealed type is "list[kenning.models.Memory]"' in out, out
    assert 'Argument "top_k" to "recall" of "Kenning" has incompatible type "str"; expected "int"' in out, out
    assert 'Unexpected keyword argument "datset" for "remember" of "Kenning"' in out, out
    assert 'Revealed type is "kenning.models.Context"' in out, out
    assert out.count("error:") == 2, out


def test_a_misspelt_setting_is_refused_with_the_name_it_meant() -> None:
    with pytest.raises(ConfigurationError, match="'chunk_szie'; did you mean 'chunk_size'"):
        Kenning(":memory:", chunk_szie=64)
    with pytest.raises(ConfigurationError, match="unknown setting 'zzz'"):
        Kenning(":memory:", zzz=1)
    with Kenning(":memory:", chunk_size=64) as kn:
        assert kn.settings.chunk_size == 64


def test_a_setting_may_still_be_given_by_its_alias() -> None:
    with Kenning(":memory:", OPENAI_API_KEY="sk-test") as kn:
        assert kn.settings.llm_api_key is not None


def test_the_chat_model_is_given_by_the_settings_name() -> None:
    # one name: ``llm`` is the setting (a model name) and the collaborator (a ChatModel)
    from kenning.providers.openai_compat import OpenAIChat

    chat = OpenAIChat("test-model", "http://127.0.0.1:9/v1", "sk-test", max_retries=0)
    with Kenning(":memory:", llm=chat) as kn:
        assert kn._engine.chat is chat
    with Kenning(":memory:", llm="some-model", llm_base_url="http://127.0.0.1:9/v1", llm_api_key="sk-test") as kn:
        assert kn.settings.llm == "some-model"
        assert kn._engine.chat is not None
    with pytest.raises(ConfigurationError, match="'chat'"):
        Kenning(":memory:", chat=chat)
