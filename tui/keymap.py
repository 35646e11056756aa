"""Keys the person remaps: a small TOML file in the user config directory.

    # ~/.config/gpuopt/keymap.toml
    [keys]
    "round.run" = "R"              # binding id = key (or keys, comma separated)
    "session.next_step" = "n,ctrl+n"

Every binding of the app carries an id (`screen.action`, see the `?` help); the file maps
ids to keys, and the app applies it with `App.set_keymap`. The `?` help is drawn from the
active bindings, so it shows the keys as remapped.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import platformdirs
from rich.text import Text
from textual.app import App
from textual.binding import Binding


class KeymapError(ValueError):
    """The keymap file cannot be read: one line that names the file and the fault."""


def keymap_path() -> Path:
    return Path(platformdirs.user_config_dir("gpuopt", appauthor=False)) / "keymap.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Binding id -> keys, from the file (empty when there is no file)."""
    path = path or keymap_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KeymapError(f"{path}: {exc}") from None
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in keys.items()
    ):
        raise KeymapError(f'{path}: [keys] maps binding ids to keys, e.g. "round.run" = "R"')
    return {k: v.replace(" ", "") for k, v in keys.items()}


def shown_key(app: App[object], b: Binding) -> str:
    """A binding's first key as shown, after the person's keymap if it remaps this id."""
    keymap = getattr(app, "_keymap", {}) or {}
    first = (keymap.get(b.id) if b.id else None) or b.key
    return str(app.get_key_display(b.with_key(first.split(",")[0])))


def spoken_key(app: App[object], b: Binding) -> str:
    """A binding's keys as a sentence names them, after the keymap: "ctrl+s (or F2)" (the
    footer's "^s" reads as a caret to a newcomer), "+" for plus."""

    def one(key: str) -> str:
        if key.startswith("ctrl+"):
            return key
        if key[:1] == "f" and key[1:].isdigit():
            return key.upper()
        return str(app.get_key_display(b.with_key(key)))

    keymap = getattr(app, "_keymap", {}) or {}
    first, *rest = ((keymap.get(b.id) if b.id else None) or b.key).split(",")
    return one(first) + (f" (or {', '.join(one(k) for k in rest)})" if rest else "")


def spoken_key_of_id(app: App[object], bindings: list[Binding], binding_id: str) -> str:
    """spoken_key of the binding with this id among `bindings`."""
    b = next(b for b in bindings if isinstance(b, Binding) and b.id == binding_id)
    return spoken_key(app, b)


def key_of_id(app: App[object], bindings: list[Binding], binding_id: str) -> str:
    """The shown key of the binding with this id among `bindings` (a class's BINDINGS)."""
    b = next(b for b in bindings if isinstance(b, Binding) and b.id == binding_id)
    return shown_key(app, b)


_MOVING = ("scroll_", "page_", "cursor_")


def bindings_help(app: App[object]) -> Text:
    """The keys active now (focused widget, its screen, the app), as remapped: one line
    per action, its keys first."""
    lines: dict[str, list[str]] = {}
    tips: dict[str, str] = {}
    for key, active in app.active_bindings.items():
        b = active.binding
        if not b.description or not active.enabled or b.action.startswith(_MOVING):
            continue  # scrolling keys of a scrollable pane are every widget's: not listed
        shown = app.get_key_display(b.with_key(key))
        keys = lines.setdefault(b.description, [])
        if b.tooltip:
            tips[b.description] = b.tooltip
        if shown not in keys:
            keys.append(shown)
    out = Text()
    for description, keys in lines.items():
        out.append(" / ".join(keys), style="bold")
        out.append(f"  {description}")
        if description in tips:  # the longer words the palette finds it by
            out.append(f" — {tips[description]}", style="dim")
        out.append("\n")
    return out
