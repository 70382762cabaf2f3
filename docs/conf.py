"""Sphinx configuration for the hooks-tutorial site (English source, zh_CN via gettext)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

import hooks_tutorial

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the docs group installs tomli there
    import tomli as tomllib

HERE = Path(__file__).parent.resolve()
sys.path.insert(0, str(HERE / "_ext"))

from figures import WebFigures  # docs/_ext, put on the path just above

# The repository's address: one setting, in pyproject.toml ([project.urls] Source);
# the edit links, the notebooks' install cell and the install commands use it.
PYPROJECT = tomllib.loads((HERE.parent / "pyproject.toml").read_text(encoding="utf-8"))
REPOSITORY = PYPROJECT["project"]["urls"]["Source"]
DISTRIBUTION = PYPROJECT["project"]["name"]

project = "hooks-tutorial"
author = "hooks-tutorial developers"
copyright = "2026, hooks-tutorial developers"
version = release = hooks_tutorial.__version__

language = "en"  # the zh_CN build passes -D language=zh_CN
locale_dirs = ["locales/"]
gettext_compact = False
gettext_uuid = False
gettext_location = True

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",  # api.rst: one page per public object, docs/_templates/autosummary
    "sphinx.ext.intersphinx",
    "mathml",  # docs/_ext/mathml.py: math as MathML, rendered at build time (no MathJax)
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
    "sphinx_sitemap",
    "sphinxext.opengraph",
    "notfound.extension",
    "companions",  # docs/_ext/companions.py: helper scripts (_launch.py) in the pages' zips
    "bilingual",  # docs/_ext/bilingual.py: switcher, site URLs, zh search fix, zh downloads
    "notebooks",  # docs/_ext/notebooks.py: notebook prose as Markdown (pandoc)
    "figures",  # docs/_ext/figures.py: WebP figures at the shown size; img width/height
    "tables",  # docs/_ext/tables.py: table cells named by their header (cards on a phone)
    "provenance",  # docs/_ext/provenance.py: each page's versions, run time and memory
    "api_examples",  # docs/_ext/api_examples.py: API pages list the tutorials that use them
    "light",  # docs/_ext/light.py: deferred scripts, icon font cut to the icons used
    "solutions",  # docs/_ext/solutions.py: solutions run in the build, fold away, answers checked
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "locales",
    "Thumbs.db",
    ".DS_Store",
    "auto_examples/**/GALLERY_HEADER.rst",
    "sg_execution_times.rst",
    "_templates",
]
templates_path = ["_templates"]
nitpicky = True  # every cross-reference resolves (`-n` in noxfile's SPHINX says it too)

# -- MyST ---------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "substitution"]
myst_heading_anchors = 3
# install commands on the pages, built from the one repository setting
myst_substitutions = {
    "install_commands": (
        "```console\n"
        f"$ pip install {DISTRIBUTION}\n"
        f'$ pip install "git+{REPOSITORY}"   # or: the development version\n'
        "```"
    ),
    "repository_link": f"<{REPOSITORY}>",
    # the torch that runs the pages and their checks (course_notes.md: "checked on PyTorch
    # ..."), without the local build tag: 2.14.1+cu130 -> 2.14.1
    "torch_version": torch.__version__.split("+")[0],
}

# -- autodoc / autosummary / numpydoc ------------------------------------------
# api.rst's tables write one page per object into generated/ (not committed: made by
# every build from docs/_templates/autosummary, which adds each object's examples)
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- intersphinx: offline first ----------------------------------------------
# Checked-in inventories are listed before the URL, so an offline build never
# touches the network. `nox -s inventories` refreshes them: online it downloads
# the real objects.inv files (by hand: `sphobjinv convert zlib
# https://docs.pytorch.org/docs/stable/objects.inv docs/_intersphinx/torch.inv`);
# offline it takes Python's from Debian's python3.11-doc and generates PyTorch's
# from the installed torch (docs/tools/make_torch_inventory.py).
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", ("_intersphinx/python.inv", None)),
    "torch": ("https://docs.pytorch.org/docs/stable/", ("_intersphinx/torch.inv", None)),
}
intersphinx_mapping = {
    name: (url, invs)
    for name, (url, invs) in intersphinx_mapping.items()
    if (HERE / invs[0]).is_file()
}
intersphinx_timeout = 1

# -- sphinx-gallery -----------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    # $HOOKS_TUTORIAL_PAGES (a regular expression, e.g. "plot_1[5-8]") runs only those
    # pages: for a quick look while writing; the others show their code without output
    "filename_pattern": os.environ.get("HOOKS_TUTORIAL_PAGES") or r"/plot_",
    # helper modules next to the pages (e.g. _ddp_worker.py) are not pages;
    # docs/_ext/companions.py puts them in the zips of the pages that use them
    "ignore_pattern": r"^_\w*\.py$",  # matched against the file name
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": True,
    "remove_config_comments": True,
    # run times change on every build: keep them out of pages and catalogs
    "write_computation_times": False,
    "min_reported_time": 10**9,
    "show_memory": False,
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("hooks_tutorial",),
    "reference_url": {"hooks_tutorial": None},
    "capture_repr": ("_repr_html_", "__repr__"),
    "matplotlib_animations": False,
    # figures as WebP, at most 800 px wide at 1x, plus a 2x variant for dense screens
    "image_scrapers": (WebFigures(),),
    "image_srcset": ["2x"],
    "only_warn_on_example_error": False,
    "abort_on_example_error": False,
    "reset_modules": (
        "matplotlib",
        "bilingual.reset_torch",
        "bilingual.freeze_survivors",
        "provenance.record",  # before and after each example: time, memory, versions
    ),
    "reset_modules_order": "both",
    "plot_gallery": "True",
    "default_thumb_file": str(HERE / "_static" / "thumb.png"),
    # every notebook starts with the install it needs, commented out: harmless
    # where the library is installed (the code is the same in both languages)
    "first_notebook_cell": (
        "# This notebook needs the hooks_tutorial library (本笔记本需要 hooks_tutorial 库).\n"
        "# If it is not installed, remove one leading '#' and run this cell once:\n"
        f"# %pip install {DISTRIBUTION}\n"
        f'# %pip install "git+{REPOSITORY}"'
    ),
    # "pypandoc": off; docs/_ext/notebooks.py converts each notebook's prose in one pandoc call
}

# -- HTML ---------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_math_renderer = "mathml"  # docs/_ext/mathml.py
html_title = "hooks-tutorial"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
# code blocks: long lines wrap with a hanging indent, and a wrap toggle (issue 33, item 2);
# deferred by docs/_ext/light.py like the other scripts (but on the search page)
html_js_files = ["code-wrap.js"]
html_favicon = "_static/favicon.svg"
html_baseurl = "https://hooks-tutorial.readthedocs.io/"
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = False
html_domain_indices = False  # a module index of one module helps nobody
html_theme_options = {
    "navbar_end": ["lang-switcher", "theme-switcher", "navbar-icon-links"],
    "secondary_sidebar_items": ["page-toc", "edit-this-page"],
    "use_edit_page_button": True,  # html_context["edit_page_url_template"]
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# "Edit on GitHub" (the theme's edit_page_url_template, a Jinja template of the page's
# source file_name): a gallery page is edited in its script under examples/, a chapter
# index in its GALLERY_HEADER.rst, an API page (generated/) in the docstrings under src/.
EDIT_PAGE_URL_TEMPLATE = (
    "{{ repository }}"
    "{%- set gallery = 'auto_examples/' -%}"
    "{%- if file_name == gallery + 'index.rst' -%} /tree/main/examples"
    "{%- elif file_name.startswith(gallery) and file_name.endswith('/index.rst') -%}"
    " /edit/main/examples/{{ file_name[gallery|length:-9] }}GALLERY_HEADER.rst"
    "{%- elif file_name.startswith(gallery) -%}"
    " /edit/main/examples/{{ file_name[gallery|length:-4] }}.py"
    "{%- elif file_name.startswith('generated/') -%} /tree/main/src/hooks_tutorial"
    "{%- else -%} /edit/main/{{ doc_path }}{{ file_name }}"
    "{%- endif -%}"
)
html_context = {
    "default_mode": "auto",
    "repository": REPOSITORY,
    "edit_page_url_template": EDIT_PAGE_URL_TEMPLATE,
    "edit_page_provider_name": "GitHub",
    "doc_path": "docs",
}

# Chinese search: jieba segments the text; the user dictionary keeps compound
# terms (反向传播, 热力图, 类激活图, ...) whole.
html_search_options = {"dict": str(HERE / "jieba_userdict.txt")}

# sitemap / OpenGraph / 404: html_baseurl is the site root; bilingual.py adds
# the language folder (/en/, /zh_CN/) to canonical, og:url, sitemap and 404
# links, and reads the root from $HOOKS_TUTORIAL_SITE_URL when it is set.
sitemap_excludes = ["search.html", "genindex.html", "404.html", "_modules/*"]
ogp_site_name = "hooks-tutorial"
ogp_enable_meta_description = True
ogp_social_cards = {"enable": False}

copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

suppress_warnings = ["config.cache"]
