"""Glued markdown values marked as glued: MyST-NB pastes ``{glue:md}`` values as bare nodes, so nothing in the doctree
would tell the checks that "1 program compiled" came from the run. Here the role wraps them in
``inline.pasted-markdown`` (a ``<span>`` in the page), as ``{glue:text}`` values are in ``inline.pasted-text``.
"""

from __future__ import annotations

from docutils import nodes
from myst_nb.ext.glue.roles import PasteMarkdownRole
from sphinx.application import Sphinx
from sphinx.config import Config

CLASS = "pasted-markdown"


class PasteMarkdownMarked(PasteMarkdownRole):
    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        pasted, messages = super().run()
        if not pasted:
            return pasted, messages
        return [nodes.inline("", "", *pasted, classes=[CLASS])], messages


def _register(app: Sphinx, config: Config) -> None:
    # After every extension's setup (MyST-NB's glue domain exists), before the domains are made for the build.
    app.add_role_to_domain("glue", "md", PasteMarkdownMarked(), override=True)


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _register)
