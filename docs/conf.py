"""The kjoin documentation site: Sphinx, the PyData theme, MyST Markdown and MyST-NB (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "kjoin"
author = "the kjoin authors"
copyright = "the kjoin authors, Apache-2.0"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_design",
    "kjoin_pages",
]

# Sources: this folder's Markdown pages, the pages kjoin_pages writes into generated/ and the course's notebooks it
# copies there. seed000.md is the seed's transcription (docs/semantics.md cites it), shown under Concepts.
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "_ext"]
# reST first: autosummary writes its stub pages (reST) with the first suffix.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# The notebooks are rendered with the outputs stored in them (`make notebooks` refreshes those): never executed here.
nb_execution_mode = "off"
# The live widgets' outputs hold no state (the course saves none): kjoin_pages shows each as its static view.

myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
napoleon_google_docstring = False

html_theme = "pydata_sphinx_theme"
html_title = "kjoin"
html_static_path = ["_static"]
html_css_files = ["kjoin.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
    # the reference pages' tables need the width; their headings are few
    "secondary_sidebar_items": {"generated/*": []},
}
# pages without sub-pages need no section navigation
html_sidebars = {page: [] for page in ("index", "getting-started", "fidelity", "benchmarks", "generated/changelog")}
html_show_sourcelink = False
# Text as written: a CLI flag (--junit) in a help string stays two hyphens.
smartquotes = False
