"""One option, one place: every run setting is declared once, in ``RunSettings``.

Each field with a :class:`Flag` is an option of ``sweep run`` and ``sweep resume`` (its
name, help, default, choices and bounds as declared), every field is a keyword of the Python
API (``RunOptions``), and a field added to the settings becomes both with nothing else
written.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from sweep import _api
from sweep.cli._app import app
from sweep.cli._settings_options import settings_options
from sweep.executors import EXECUTOR_CHOICES
from sweep.plan._planner import PlannerSettings
from sweep.runner._run_settings import COMMANDS, Flag, RunOptions, RunSettings, flags

ROOT = typer.main.get_command(app)


def _options(command: str) -> dict[str, Any]:
    """The options of a ``sweep`` command by parameter name."""
    found = ROOT.commands[command]
    return {p.name: p for p in found.params}


def _choices(option: Any, command: str) -> str:
    return str(option.display_type(typer.Context(ROOT.commands[command])))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_setting_with_a_flag_is_an_option_as_declared(command: str) -> None:
    options = _options(command)
    defaults = RunSettings()
    declared = flags(RunSettings)
    assert declared, "no setting has a flag"
    for name, flag in declared.items():
        if command not in flag.commands:
            assert name not in options, f"{flag.name} is not an option of {command}"
            continue
        option = options[name]
        assert option.opts[0] == flag.name and option.help == flag.help
        assert option.opts[1:] == ([flag.short] if flag.short else [])
        assert (option.envvar or []) == list(flag.envvars) and option.min == flag.minimum
        default = getattr(defaults, name)
        if flag.negates:
            assert option.default is (not default)
        elif flag.parse is not None:
            assert flag.parse(option.default) == default
        else:
            assert option.default == default
        if flag.choices:
            assert _choices(option, command) == f"<{'|'.join(flag.choices)}>"


def test_the_executor_choices_are_the_engines_list() -> None:
    assert flags(RunSettings)["executor"].choices == EXECUTOR_CHOICES
    for command in ("run", "resume", "status", "verify", "report", "results", "reproduce"):
        option = _options(command)["executor"]
        assert _choices(option, command) == f"<{'|'.join(EXECUTOR_CHOICES)}>", command


def test_the_api_keywords_are_the_settings() -> None:
    fields = typing.get_type_hints(RunSettings)
    assert typing.get_type_hints(RunOptions) == fields
    assert set(fields) <= set(typing.get_type_hints(_api.SweepOptions))
    given = {
        "executor": "local",
        "address": "127.0.0.1:1",
        "workers": 3,
        "batch_size": 7,
        "on_error": "raise",
        "progress": True,
        "allow_environment_change": True,
        "table_hash_version": "v1",
        "planner": PlannerSettings(target_efficiency=0.9),
    }
    assert set(given) == set(fields)
    built = _api._settings(given)  # what sweep.run and sweep.resume hand the driver
    assert {name: getattr(built, name) for name in fields} == given
    assert _api._settings({}).progress is False  # from Python, no bar unless asked


@dataclass(frozen=True, kw_only=True)
class _Extended(RunSettings):
    """The settings with one more field, as a new option would be added."""

    retries: Annotated[
        int, Flag("--retries", "Times a lost worker's tasks are retried.", minimum=0)
    ] = 3
    fresh_only: Annotated[
        bool, Flag("--fresh-only", "Refuse a folder that holds parts.", commands=("run",))
    ] = False


def _app_of(command: str, seen: list[RunSettings]) -> typer.Typer:
    extended = typer.Typer()

    @extended.command(command)
    @settings_options(command, _Extended)
    def take(
        where: Annotated[str, typer.Argument()],
        *,
        settings: _Extended,
        after: Annotated[int, typer.Option("--after")] = 0,
    ) -> None:
        seen.append(settings)

    @extended.command("other")
    def other() -> None:  # a second command, so the first is called by name
        """Nothing."""

    return extended


@pytest.mark.parametrize("command", COMMANDS)
def test_a_field_added_to_the_settings_is_an_option(command: str) -> None:
    seen: list[RunSettings] = []
    extended = _app_of(command, seen)
    runner = CliRunner()
    shown = runner.invoke(extended, [command, "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert (
        "--retries" in shown.output and "Times a lost worker's tasks are retried." in shown.output
    )
    assert ("--fresh-only" in shown.output) is (command == "run")
    assert "--executor" in shown.output and "--after" in shown.output

    words = [command, "x", "--retries", "5", "--executor", "local", "-q", "--batch-size", "7"]
    done = runner.invoke(extended, [*words, "--after", "2"])
    assert done.exit_code == 0, done.output
    (settings,) = seen
    assert isinstance(settings, _Extended)
    assert (settings.retries, settings.executor, settings.progress) == (5, "local", False)
    assert settings.batch_size == 7 and settings.planner == PlannerSettings()
    bad = runner.invoke(extended, [command, "x", "--retries", "-1"])
    assert bad.exit_code == 2 and "--retries" in bad.output
