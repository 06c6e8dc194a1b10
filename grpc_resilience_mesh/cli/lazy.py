"""A Typer group whose sub-commands are imported only when one runs.

`mesh --version` and `mesh --help` import none of them: the help lists each command's first
paragraph from a table (tests/unit/meshctl/test_cli_startup.py holds the table to the real commands'
help). `mesh call home` imports grpc_resilience_mesh.cli.call alone, not the runner or reports.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
from typer import _click as click
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class Lazy:
    """One sub-command: `module:attr` is a command function or a typer.Typer sub-app."""

    target: str
    short_help: str


def load(name: str, target: str) -> click.Command:
    """The click command `mesh` registers for `target` under `name`, built as typer builds it."""
    module_name, attr = target.split(":")
    obj: Any = getattr(importlib.import_module(module_name), attr)
    holder = typer.Typer(add_completion=False)
    holder.callback()(_nothing)
    if isinstance(obj, typer.Typer):
        holder.add_typer(obj, name=name)
    else:
        holder.command(name)(obj)
    command = typer.main.get_group(holder).commands[name]
    _reflow(command)
    return command


def reflow(text: str) -> str:
    """A docstring's paragraphs after the first, each on one line where it is prose.

    Typer 0.29's rich help joins the first paragraph's lines but prints the others' line
    breaks as they are in the source, so a docstring wrapped at 100 columns came out cut
    mid-sentence in an 80-column terminal. A paragraph with an indented, listed or `\b`-marked
    line is left as written (examples, lists)."""
    first, *rest = text.split("\n\n")
    kept = [
        p
        if any(line[:1] in (" ", "-", "*", "\b") for line in p.split("\n")[1:])
        else " ".join(p.split("\n"))
        for p in rest
    ]
    return "\n\n".join([first, *kept])


def _reflow(command: click.Command) -> None:
    if command.help:
        command.help = reflow(command.help)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _reflow(sub)


def _nothing() -> None:
    """The throwaway holder group's callback (it makes typer build a group)."""


class LazyGroup(TyperGroup):
    """TyperGroup over LAZY: a command's module is imported when it is resolved to run; while
    the group's own help is drawn, each is a stub holding its short help."""

    lazy: ClassVar[dict[str, Lazy]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is not None or cmd_name not in self.lazy:
            return found
        spec = self.lazy[cmd_name]
        if self._listing:
            return TyperCommand(cmd_name, help=spec.short_help)
        self.commands[cmd_name] = load(cmd_name, spec.target)
        return self.commands[cmd_name]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's whole first paragraph, wrapped (click cuts it to a line and "...")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                first = (command.short_help or command.help or "").split("\n\n")[0]
                rows.append((name, " ".join(first.split())))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def load_all(self, ctx: click.Context) -> None:
        """Import every command (the tests that walk the whole tree)."""
        for name in list(self.lazy):
            self.get_command(ctx, name)
