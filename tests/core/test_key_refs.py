"""The LLM's key by reference (core/key_refs.py): LLM_API_KEY_ENV names a variable, LLM_API_KEY_FILE
a file, resolved as the configuration loads; the file's bounds; never the key in a message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.config import ConfigError, config_load
from core.key_refs import KEY_FILE_MAX_BYTES

KEY = "sk-REFERENCED-key-8c41d2"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("")
    return tmp_path


def key_file(folder: Path, text: str | bytes = KEY + "\n", *, mode: int = 0o600,
             name: str = "llm.key") -> Path:
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


def load(project: Path, env_text: str = "", **environ: str):
    env_file = project / ".env"
    env_file.write_text(env_text)
    return config_load(environ=environ, start_dir=project, env_file=env_file)


def refused(project: Path, env_text: str = "", **environ: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(project, env_text, **environ)
    assert KEY not in caught.value.message
    return caught.value


def test_the_key_itself_keeps_working_as_before(project: Path):
    config = load(project, f"LLM_API_KEY={KEY}\n")
    assert config.llm_api_key == KEY and config.sources["LLM_API_KEY"] == ".env"
    assert config.llm_api_key_env == config.llm_api_key_file == ""
    assert config.llm_api_key_required is True


def test_a_variable_named_in_env_file_gives_the_key(project: Path):
    config = load(project, "LLM_API_KEY_ENV=MY_LLM_KEY\n", MY_LLM_KEY=f"  {KEY}\n")
    assert config.llm_api_key == KEY
    assert config.sources["LLM_API_KEY"] == "LLM_API_KEY_ENV"
    shown = {name: (value, source) for name, value, source in config.display_items()}
    assert shown["LLM_API_KEY"] == ("<set>", "LLM_API_KEY_ENV")
    assert shown["LLM_API_KEY_ENV"] == ("MY_LLM_KEY", ".env")
    assert KEY not in repr(config) and KEY not in str(config.display_items())


def test_a_variable_that_is_not_set_leaves_the_key_unset(project: Path):
    config = load(project, "LLM_API_KEY_ENV=MY_LLM_KEY\n")
    assert config.llm_api_key == "" and config.llm_api_key_env == "MY_LLM_KEY"
    assert config.sources["LLM_API_KEY"] == "default"


@pytest.mark.parametrize("name", ["sk-abc-123", "1ABC", "MY KEY"])
def test_a_variable_name_must_be_a_name_and_is_not_quoted(project: Path, name: str):
    error = refused(project, f"LLM_API_KEY_ENV='{name}'\n")
    assert error.variable == "LLM_API_KEY_ENV" and name not in error.message


def test_naming_llm_api_key_itself_is_refused(project: Path):
    assert "LLM_API_KEY itself" in refused(project, "LLM_API_KEY_ENV=LLM_API_KEY\n").message


def test_a_key_file_gives_the_key_relative_to_the_project(project: Path):
    key_file(project, f"\n  {KEY}  \n\n")
    config = load(project, "LLM_API_KEY_FILE=llm.key\n")
    assert config.llm_api_key == KEY and config.sources["LLM_API_KEY"] == "LLM_API_KEY_FILE"
    assert dict((n, v) for n, v, _ in config.display_items())["LLM_API_KEY_FILE"] == "llm.key"


def test_a_group_readable_key_file_is_allowed_and_a_link_to_it_too(project: Path):
    target = key_file(project, mode=0o640)
    (project / "link.key").symlink_to(target)
    assert load(project, "LLM_API_KEY_FILE=link.key\n").llm_api_key == KEY


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o620, 0o602, 0o666])
def test_a_key_file_others_may_read_or_change_is_refused(project: Path, mode: int):
    path = key_file(project, mode=mode)
    error = refused(project, f"LLM_API_KEY_FILE={path}\n")
    assert error.variable == "LLM_API_KEY_FILE"
    assert f"mode {mode:04o}" in error.message and "chmod 600" in error.message


def test_a_key_file_too_large_is_refused(project: Path):
    key_file(project, "k" * (KEY_FILE_MAX_BYTES + 1))
    assert f"larger than {KEY_FILE_MAX_BYTES}" in refused(
        project, "LLM_API_KEY_FILE=llm.key\n").message


def test_a_key_file_at_the_bound_is_read(project: Path):
    key_file(project, "k" * KEY_FILE_MAX_BYTES)
    assert len(load(project, "LLM_API_KEY_FILE=llm.key\n").llm_api_key) == KEY_FILE_MAX_BYTES


@pytest.mark.parametrize(("content", "says"), [
    (f"{KEY}\nsecond-line\n", "more than one line"),
    ("", "is empty"),
    ("   \n", "is empty"),
    ("sk-ключ".encode(), "non-ASCII"),
    (b"sk-\x07bell", "control characters"),
])
def test_a_key_file_that_is_not_one_key_is_refused(project: Path, content: str | bytes,
                                                    says: str):
    key_file(project, content)
    error = refused(project, "LLM_API_KEY_FILE=llm.key\n")
    assert says in error.message and "second-line" not in error.message


def test_a_missing_key_file_is_refused(project: Path):
    assert "does not exist" in refused(project, "LLM_API_KEY_FILE=nowhere.key\n").message


def test_a_folder_or_a_fifo_is_not_a_key_file_and_does_not_hang(project: Path):
    (project / "folder.key").mkdir(mode=0o700)
    os.mkfifo(project / "fifo.key", 0o600)
    for name in ("folder.key", "fifo.key"):
        error = refused(project, f"LLM_API_KEY_FILE={name}\n")
        assert "not a plain file" in error.message or "cannot be opened" in error.message


def test_an_unreadable_key_file_is_refused(project: Path):
    path = key_file(project, mode=0o000)
    if os.access(path, os.R_OK):
        pytest.skip("this user reads every file (root)")
    assert "cannot be opened" in refused(project, "LLM_API_KEY_FILE=llm.key\n").message


@pytest.mark.parametrize("env_text", [
    f"LLM_API_KEY={KEY}\nLLM_API_KEY_ENV=MY_LLM_KEY\n",
    "LLM_API_KEY_ENV=MY_LLM_KEY\nLLM_API_KEY_FILE=llm.key\n",
    f"LLM_API_KEY={KEY}\nLLM_API_KEY_FILE=llm.key\n",
])
def test_two_ways_of_giving_the_key_at_once_are_refused(project: Path, env_text: str):
    key_file(project)
    error = refused(project, env_text, MY_LLM_KEY="other")
    assert "set only one" in error.message


def test_the_environment_and_env_file_giving_two_ways_is_refused_too(project: Path):
    error = refused(project, "LLM_API_KEY_ENV=MY_LLM_KEY\n", LLM_API_KEY=KEY, MY_LLM_KEY=KEY)
    assert error.message.startswith("LLM_API_KEY and LLM_API_KEY_ENV are set together")
