"""The key bar: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer composes its keys anew on every bindings signal, and a step change, a
focus move or a redraw of a step's body each send one: most of them leave the same keys
in the same state. Its keys are compared here (key, its display, words, action, enabled,
tooltip, group) with what was composed last, and an unchanged set is left as it is.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.widgets import Footer


class SteadyFooter(Footer):
    _composed: Hashable = None

    def _shown(self) -> Hashable:
        """Everything the Footer's compose reads, as a value to compare."""
        app = self.app
        keys = tuple(
            (
                key,  # the palette's key is shown by its key, whether or not `show`
                binding.key,
                binding.show,
                app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled,
                tooltip,
                binding.tooltip,
                None
                if binding.group is None
                else (binding.group.description, binding.group.compact),
            )
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
        )
        return (
            keys,
            self._bindings_ready,
            self.compact,
            self.show_command_palette,
            self.combine_groups,
            app.ENABLE_COMMAND_PALETTE,
            app.COMMAND_PALETTE_BINDING,
        )

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        shown = self._shown()
        if shown == self._composed:
            return
        self._composed = shown
        await super().recompose()
