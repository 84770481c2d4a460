"""The options of ``sweep run`` and ``sweep resume``, derived from the run settings.

:class:`sweep.runner._run_settings.RunSettings` declares every setting once, with its
command-line form (:class:`~sweep.runner._run_settings.Flag`). :func:`settings_options`
replaces a command's ``settings`` parameter by one typer option per field with a flag (its
name, help, default, choices, bounds and environment variable), and hands the command the
settings made from the options given. A field added to the settings is an option of both
commands, with nothing written here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import typer

from sweep.runner._run_settings import Flag, RunSettings, flags

R = TypeVar("R")
#: The parameter of a command that the options replace.
SETTINGS = "settings"


def choice_type(choices: tuple[str, ...]) -> Any:
    """The type of an option taking one of ``choices`` (typer shows and checks them)."""
    return Literal[choices]


def settings_options(
    command: str, settings_type: type[RunSettings] = RunSettings
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command one option per run setting that ``command`` takes, instead of ``settings``.

    Parameters
    ----------
    command : str
        The command's name (``run`` or ``resume``): the fields whose flag lists it.
    settings_type : type
        :class:`RunSettings` or a subclass (more fields, more options).

    Returns
    -------
    callable
        A decorator. The command it decorates takes a parameter ``settings``; typer sees
        the options in its place, and the command gets ``settings_type(...)`` of their
        values (a setting the command does not take keeps its default).
    """
    hints = typing.get_type_hints(settings_type)
    taken = {name: flag for name, flag in flags(settings_type).items() if command in flag.commands}
    fields = [f for f in dataclasses.fields(settings_type) if f.name in taken]

    def decorate(func: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(func, eval_str=True)
        params = list(signature.parameters.values())
        at = [p.name for p in params].index(SETTINGS)
        kind = params[at].kind
        params[at : at + 1] = [_parameter(f, taken[f.name], hints[f.name], kind) for f in fields]

        @functools.wraps(func)
        def with_settings(**given: Any) -> R:
            values = {f.name: _setting(taken[f.name], given.pop(f.name)) for f in fields}
            return func(**given, **{SETTINGS: settings_type(**values)})

        shown = signature.replace(parameters=params)
        with_settings.__signature__ = shown  # type: ignore[attr-defined]
        with_settings.__annotations__ = {p.name: p.annotation for p in params}
        with_settings.__annotations__["return"] = signature.return_annotation
        return with_settings

    return decorate


def _parameter(
    item: dataclasses.Field[Any], flag: Flag, hint: Any, kind: inspect._ParameterKind
) -> inspect.Parameter:
    """The typer option of a setting: its type, default and :func:`typer.Option`."""
    shape: Any = hint
    default: Any = item.default
    factory = item.default_factory
    if default is dataclasses.MISSING and callable(factory):
        default = factory()
    if flag.negates:
        shape, default = bool, not default
    elif flag.parse is not None:
        shape, default = str, flag.text_default
    elif flag.choices:
        shape = choice_type(flag.choices)
        if default is None:
            shape = shape | None
    names = (flag.name,) if flag.short is None else (flag.name, flag.short)
    envvar = list(flag.envvars) or None
    # The variables are named in the help (an [env var: ...] line is cut at 80 columns).
    option = typer.Option(
        *names,
        help=flag.help,
        envvar=envvar,
        show_envvar=False,
        min=flag.minimum,
        metavar=flag.metavar,
    )
    return inspect.Parameter(item.name, kind, default=default, annotation=Annotated[shape, option])


def _setting(flag: Flag, value: Any) -> Any:
    """The setting an option's value stands for."""
    if flag.negates:
        return not value
    if flag.parse is not None:
        return flag.parse(value)
    return value
