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
    "cheatsheet",  # docs/_ext/cheatsheet.py: the hook cheat sheet's tables, from cheatsheet.toml
    "page_numbers",  # docs/_ext/page_numbers.py: "15." before page 15's title, as prose cites it
    "reading_time",  # docs/_ext/reading_time.py: each tutorial's reading and running time
    "fast_path",  # docs/_ext/fast_path.py: the fast path's box and each step's banner, from one list
    "download_language",  # docs/_ext/download_language.py: each download says its language
    "code_comments",  # docs/_ext/code_comments.py: code comments translated through the catalogs
    "figure_texts",  # docs/_ext/figure_texts.py: the figures' words in Chinese on zh_CN pages
]

# The exercise checks that the pages run (ht.exercises.check) print English, like every
# other output on the pages, whatever the locale of the machine that builds them; the
# zh_CN pages show the outputs of the English run. (A reader's download says its own
# language: docs/_ext/download_language.py.)
os.environ["HOOKS_TUTORIAL_LANGUAGE"] = "en"

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
    # the oldest torch the project allows (the floor of its requirement in pyproject.toml),
    # on which `nox -s oldest` runs the tests, the cheat sheet's checks among them
    "torch_oldest": next(
        d.split(">=")[1] for d in PYPROJECT["project"]["dependencies"] if d.startswith("torch>=")
    ),
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
    # a page per core at a time, each in a worker process (joblib's loky, kept across
    # chapters) on cores // workers threads, or on OMP_NUM_THREADS when the builder sets
    # it (bilingual.reset_torch): the pages are independent programs, as a reader runs
    # each alone. The English build from scratch took 2 min 25 s instead of 2 min 53 s
    # one page after another on two cores, measured back to back
    "parallel": os.cpu_count() or 1,
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
    # where the library is installed (the code is the same in both languages; the
    # zh_CN notebooks' comments are Chinese: docs/_ext/localized_downloads.py)
    "first_notebook_cell": (
        "# This notebook needs the hooks_tutorial library.\n"
        "# If it is not installed, remove one leading '#' and run this cell once:\n"
        f"# %pip install {DISTRIBUTION}\n"
        f'# %pip install "git+{REPOSITORY}"'
    ),
    # "pypandoc": off; docs/_ext/notebooks.py converts each notebook's prose in one pandoc call
}

# -- Code comments and figure words in the zh_CN pages (docs/_ext/code_comments.py,
# docs/_ext/figure_texts.py) ------------------------------------------------------
# Every page's code comments and figures' words are messages of its catalog: `nox -s
# translations` extracts them, the zh_CN page and its downloads show them translated, a
# comment and the zh_CN figures drawn again with a CJK font, and a message without a
# translation fails the zh_CN build. A new page is listed by being a page: run
# `nox -s translations`, then translate its new messages.
TUTORIAL_PAGES = [
    f"auto_examples/{page.parent.name}/{page.stem}"
    for page in sorted((HERE.parent / "examples").glob("*/plot_*.py"))
]
code_comment_pages = TUTORIAL_PAGES
figure_text_pages = TUTORIAL_PAGES

# -- The fast path to Grad-CAM (docs/_ext/fast_path.py) ------------------------
# The one list of the path: its pages in reading order, each with what it gives the
# next (English, Chinese; ``literal`` in double back-quotes). The box on the home page
# and on the tutorials' index (``fast-path`` directive), the number of pages in its
# title and the "step n of N, next: ..." banner on each of these pages are made from
# it; a page's prerequisites must come before it here, or the build warns.
fast_path = [
    (
        "course_notes",
        "what the course notes get right and wrong, and which page shows each point.",
        "课程笔记哪里对、哪里错，以及本站哪一页演示了每一点。",
    ),
    (
        "auto_examples/01_python_foundations/plot_01_callbacks",
        "a hook is a callback that PyTorch calls.",
        "钩子就是由 PyTorch 调用的回调函数。",
    ),
    (
        "auto_examples/02_module_hooks/plot_05_forward_hooks",
        "a forward hook keeps a layer's activations.",
        "前向钩子把某一层的激活值保存下来。",
    ),
    (
        "auto_examples/02_module_hooks/plot_07_backward_hooks",
        (
            "why the notes' ``register_backward_hook`` gets the gradients wrong, and what "
            "to use instead."
        ),
        "笔记中的 ``register_backward_hook`` 为什么给出错误的梯度，以及应该改用什么。",
    ),
    (
        "auto_examples/02_module_hooks/plot_08_handles_and_leaks",
        "leave no hook behind, even when an error strikes.",
        "即使中途出错，也不留下任何钩子。",
    ),
    (
        "auto_examples/03_tensor_hooks/plot_10_tensor_hooks",
        "a tensor hook on a layer's output receives its gradient, the other half of Grad-CAM.",
        "挂在某一层输出上的张量钩子会收到这个输出的梯度，这是 Grad-CAM 的另一半。",
    ),
    (
        "auto_examples/04_grad_cam/plot_15_train_cnn",
        "the model to explain, and images whose right answer is known.",
        "要解释的模型，以及正确答案已知的图像。",
    ),
    (
        "auto_examples/04_grad_cam/plot_16_gradcam_from_scratch",
        "the two hooks together, turning activations and their gradients into a map.",
        "两个钩子配合使用，把激活值和它们的梯度变成一张热力图。",
    ),
    (
        "auto_examples/04_grad_cam/plot_17_gradcam_library",
        "the same in one call, with ``hooks_tutorial.GradCAM``.",
        "同样的事，用 ``hooks_tutorial.GradCAM`` 一次调用完成。",
    ),
    (
        "auto_examples/04_grad_cam/plot_18_cam_family",
        "the methods that came after Grad-CAM, what each one changes, and how they compare.",
        "Grad-CAM 之后出现的各种方法，它们各自改动了什么，彼此相比又如何。",
    ),
]

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
# The cheat sheet's tables take the page's width: no section navigation beside them (the
# page has no sub-pages; on a phone the menu still opens) and no table of contents
# (cheatsheet.md's front matter)
html_sidebars = {"cheatsheet": []}
html_theme_options = {
    "navbar_end": ["lang-switcher", "theme-switcher", "navbar-icon-links"],
    "secondary_sidebar_items": ["page-toc", "edit-this-page"],
    "use_edit_page_button": True,  # html_context["edit_page_url_template"]
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "article_footer_items": ["feedback"],  # _templates/feedback.html, on every page
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
    # "Feedback on this page" (_templates/feedback.html): a new issue, titled with the page
    "feedback_url": f"{REPOSITORY}/issues/new",
}

# Chinese search: jieba segments the text; the user dictionary keeps compound
# terms (反向传播, 热力图, 类激活图, ...) whole.
html_search_options = {"dict": str(HERE / "jieba_userdict.txt")}
# The search's ranking (both languages): a page's score adds up what each part of the query
# finds on it, weighted by how rare the part is, so that the page that treats every word
# comes first; a Chinese query typed without spaces is cut into the index's words. Sphinx
# puts the file into _static/language_data.js; the reasons are at its top.
html_search_scorer = str(HERE / "search_scorer.js")

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
