"""The `trainsizer` command group and what every subcommand shares (language, catalog overlays, --json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from trainsizer import __version__
from trainsizer.cli_support import HelpGroup
from trainsizer.render.i18n import LANGS, default_lang


@dataclass
class AppState:
    lang: str
    overlays: tuple[Path, ...] = ()
    _catalog: Any = field(default=None, repr=False)

    @property
    def catalog(self) -> Any:
        """The built-in catalog with the user's overlays, loaded on first use."""
        if self._catalog is None:
            from trainsizer.catalog import load_catalog

            self._catalog = load_catalog(overlays=self.overlays)
        return self._catalog


class LazyGroup(HelpGroup):
    """A group whose heavy subcommands are imported when they run (or when help lists them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy: dict[str, tuple[str, str]] = {}

    def add_lazy_command(self, name: str, module: str, attr: str) -> None:
        self._lazy[name] = (module, attr)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy and cmd_name not in self.commands:
            import importlib

            module, attr = self._lazy[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


# Every command's and option's --help: src/trainsizer/data/cli_help.yaml (en + zh), shown by cli_support.HelpGroup.
json_option = click.option("--json", "as_json", is_flag=True)


@click.group(name="trainsizer", cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainsizer")
# eager: read before an eager --help, whose page it chooses the language of
@click.option("--lang", type=click.Choice(LANGS), default=None, is_eager=True)
@click.option("--catalog", "overlays", multiple=True, type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def cli(ctx: click.Context, lang: str | None, overlays: tuple[Path, ...]) -> None:
    ctx.obj = AppState(lang=lang or default_lang(), overlays=overlays)
