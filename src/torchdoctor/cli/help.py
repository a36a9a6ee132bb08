"""`--help` that reads at 80 columns, for every command: installed once by `torchdoctor.cli`.

typer lays an option out in six columns (name, short name, `--no-` name, its short name, type, help)
and names the type as an internal annotation (`<bool>`, `<list[str]>`). In 80 columns the wide name
columns leave the help a column of one or two words a line. `install` replaces the options panel with
two columns: the option's names with a short upper-case metavar (none for a flag), and its help,
which takes the rest of the width. A command's one-line summary in its group's list is read as one
paragraph whatever the line breaks of its docstring.
"""

from __future__ import annotations

import inspect
from typing import Any, get_args

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer import rich_utils
from typer.core import TyperArgument, TyperOption

#: The metavar of a valued option whose own `metavar` is unset, by the type of its values.
_METAVARS: dict[Any, str] = {int: "N", float: "NUMBER"}


def metavar(param: TyperOption | TyperArgument, ctx: Any) -> str:
    """The word after an option's name in `--help`: its own `metavar` when set, "" for a flag, the
    choices of a choice, else by the type of its values (N, NUMBER, PATH; TEXT for the rest); an
    argument is its upper-case name, with `...` when it takes many values."""
    if param.metavar is not None:
        return param.metavar
    if isinstance(param, TyperArgument):
        return (param.name or "").upper() + ("..." if param.nargs != 1 else "")
    if param.is_flag or param.count:
        return ""
    desc = param.type_descriptor
    if desc.is_choice:
        return param.display_type(ctx).strip("<>").removeprefix("list[").removesuffix("]")
    if desc.is_path:
        return "PATH"
    values = get_args(desc.annotation)[0] if desc.is_list else desc.annotation
    return _METAVARS.get(values, "TEXT")


def option_names(param: TyperOption | TyperArgument, ctx: Any) -> Text:
    """The option's names and metavar; its `--no-` form on a line of its own."""
    word = metavar(param, ctx)
    if isinstance(param, TyperArgument):
        return Text(word, style="bold cyan")
    names = Text(", ".join(param.opts), style="bold cyan")
    if word:
        names.append(f" {word}", style="bold yellow")
    if param.secondary_opts:
        names.append("\n" + ", ".join(param.secondary_opts), style="bold magenta")
    return names


def _print_options_panel(*, name: str, params: list[Any], ctx: Any, markup_mode: Any,
                         console: Console) -> None:
    if not params:
        return
    table = Table(show_header=False, box=None, expand=True, pad_edge=False, padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    for param in params:
        table.add_row(option_names(param, ctx),
                      rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode))
    console.print(Panel(table, border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER, title=name,
                        title_align=rich_utils.ALIGN_OPTIONS_PANEL))


#: typer's private hooks that `install` replaces: no public setting removes the type names (typer
#: bundles its own click), and tests/cli/test_help.py fails when a typer release changes them.
_HOOKS = ("_print_options_panel", "_make_command_help", "_get_parameter_help")
_typer_command_help = getattr(rich_utils, "_make_command_help", None)


def _make_command_help(*, help_text: str, markup_mode: Any) -> Any:
    paragraph = inspect.cleandoc(help_text).split("\n\n")[0]
    return _typer_command_help(help_text=" ".join(paragraph.split()), markup_mode=markup_mode)


def install() -> None:
    """Make every typer command's `--help` use the panels above (idempotent); with a typer whose
    private hooks differ, its own help is left as it is rather than broken."""
    if not all(callable(getattr(rich_utils, hook, None)) for hook in _HOOKS):
        return
    rich_utils._print_options_panel = _print_options_panel
    rich_utils._make_command_help = _make_command_help
