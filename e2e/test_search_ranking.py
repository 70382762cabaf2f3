"""Search finds the page that teaches a term: it is among the first three results.

Sphinx's search finds the pages that hold every word of the query; it ranks an exact
index entry (score 100) above a title (15) and a full-text match (5), and orders equal
scores alphabetically by title. Each page therefore declares what it teaches with a
``.. index::`` directive (the English term, the API name and the Chinese term; index
entries are not translated, so both sites have all of them). The order of the results is
docs/search_scorer.js's (conf.py's ``html_search_scorer``): a page's score adds up what
each word and each phrase of the query finds on it, weighted by how rare it is, so a
query of several words puts first the page that treats them all; a Chinese query typed
without spaces is cut into the index's words; API pages count half, so the page that
teaches a name (``grad_input``) comes before the pages that only take it as a parameter.
These tests run the queries a learner types on the real search page of both sites, in
Chromium, and read the ranked results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from builtsite import READER, watch

M, T, G, R, P, L, E = (
    "auto_examples/02_module_hooks/",
    "auto_examples/03_tensor_hooks/",
    "auto_examples/04_grad_cam/",
    "auto_examples/05_real_models/",
    "auto_examples/06_pytorch_uses_hooks/",
    "auto_examples/07_language_models/",
    "auto_examples/08_troubleshooting/",
)
# (query, the page that teaches it)
QUERIES = [
    ("register_forward_hook", M + "plot_05_forward_hooks"),
    ("register_full_backward_hook", M + "plot_07_backward_hooks"),
    ("register_hook", T + "plot_10_tensor_hooks"),
    ("saved_tensors_hooks", T + "plot_12_saved_tensor_hooks"),
    ("remove", M + "plot_08_handles_and_leaks"),
    ("remove hook", M + "plot_08_handles_and_leaks"),
    ("Grad-CAM", G + "plot_16_gradcam_from_scratch"),
    ("Score-CAM", G + "plot_18_cam_family"),
    ("HiResCAM", G + "plot_18_cam_family"),
    ("hook order", M + "plot_09_firing_order"),
    ("in-place", T + "plot_14_pitfalls"),
    ("pointing game", G + "plot_18b_measuring_cams"),
    ("pruning", P + "plot_28_pruning"),
    ("checkpoint", P + "plot_29_checkpointing"),
    ("FSDP", P + "plot_30_distributed_data_parallel"),
    ("钩子", M + "plot_05_forward_hooks"),
    ("前向钩子", M + "plot_05_forward_hooks"),
    ("反向钩子", M + "plot_07_backward_hooks"),
    ("张量钩子", T + "plot_10_tensor_hooks"),
    ("梯度", T + "plot_10_tensor_hooks"),
    ("热力图", G + "plot_16_gradcam_from_scratch"),
    ("剪枝", P + "plot_28_pruning"),
    ("注意力", R + "plot_26_vit_attention"),
    ("检查点", P + "plot_29_checkpointing"),
    ("logit lens", L + "plot_33_logit_lens"),
    ("residual stream", L + "plot_33_logit_lens"),
    ("ablation", L + "plot_34_attention_and_ablation"),
    ("activation patching", L + "plot_35_activation_patching"),
    ("steering vector", L + "plot_36_steering"),
    ("sparse autoencoder", L + "plot_36b_sparse_autoencoder"),
    ("TransformerLens", L + "plot_37_interpretability_libraries"),
    ("残差流", L + "plot_33_logit_lens"),
    ("注意力头", L + "plot_34_attention_and_ablation"),
    ("激活修补", L + "plot_35_activation_patching"),
    ("引导向量", L + "plot_36_steering"),
    ("稀疏自编码器", L + "plot_36b_sparse_autoencoder"),
    ("cheat sheet", "cheatsheet"),
    ("速查表", "cheatsheet"),
]
# the start of an error message finds the error-message page first
ERRORS = [
    "element 0 of tensors does not require grad",
    "Output 0 of BackwardHookFunction is a view",
    "Trying to backward through the graph a second time",
    "Inference tensors cannot be saved for backward",
    "cannot register a hook on a tensor that doesn't require gradient",
    "Using a non-full backward hook when the forward contains multiple autograd Nodes",
]
# a few words from inside an error message (a heading of the error page quotes it in full)
ERROR_WORDS = [
    "does not require grad",
    "modified by an inplace operation",
    "backward through the graph",
]
ERROR_PAGE = E + "plot_40_error_messages"
# (language, query, the page that treats every word of it): that page comes first
SEVERAL_WORDS = [
    *(
        (language, query, teacher)
        for language in ("en", "zh_CN")
        for query, teacher in [
            ("Grad-CAM 原理", G + "plot_16_gradcam_from_scratch"),
            ("attention head ablation", L + "plot_34_attention_and_ablation"),
        ]
    ),
    ("zh_CN", "反向钩子 梯度", M + "plot_07_backward_hooks"),
    ("zh_CN", "反向钩子梯度", M + "plot_07_backward_hooks"),  # typed without a space
    ("zh_CN", "Grad-CAM原理", G + "plot_16_gradcam_from_scratch"),
    ("zh_CN", "张量钩子 梯度", T + "plot_10_tensor_hooks"),
    ("zh_CN", "张量钩子修改梯度", T + "plot_10_tensor_hooks"),
    ("zh_CN", "热力图 可信", G + "plot_19_trust"),
    ("zh_CN", "钩子 泄漏", M + "plot_08_handles_and_leaks"),
    ("zh_CN", "钩子 触发顺序", M + "plot_09_firing_order"),
    ("zh_CN", "剪枝 前向预钩子", P + "plot_28_pruning"),
    ("zh_CN", "状态字典 钩子", P + "plot_31_state_dict_hooks"),
    ("zh_CN", "注意力头 消融", L + "plot_34_attention_and_ablation"),
    ("en", "backward hook gradient", M + "plot_07_backward_hooks"),
    ("en", "tensor hook gradient", T + "plot_10_tensor_hooks"),
    ("en", "how Grad-CAM works", G + "plot_16_gradcam_from_scratch"),
    ("en", "remove hooks leak", M + "plot_08_handles_and_leaks"),
    ("en", "pruning forward pre-hook", P + "plot_28_pruning"),
    ("en", "state dict hook", P + "plot_31_state_dict_hooks"),
    ("en", "global hook order", M + "plot_09_firing_order"),
]
# a name from PyTorch that API pages take as a parameter or mention: the page that
# teaches it comes first, before every API page
IDENTIFIERS = [
    ("grad_input", M + "plot_07_backward_hooks"),
    ("grad_output", M + "plot_07_backward_hooks"),
    ("register_post_accumulate_grad_hook", T + "plot_11_parameter_hooks"),
    ("reshape_transform", G + "plot_22_beyond_cnns"),
    ("RemovableHandle", M + "plot_08_handles_and_leaks"),
]
API_PAGES = re.compile(r"^(api|generated/.*)$")


SEARCH_FINISHED = (
    "() => { const s = document.querySelector('#search-results p.search-summary');"
    " return s && s.innerText.trim().length > 0; }"
)
RESULT_LINKS = "#search-results ul.search li a"
HREFS = "els => els.map(a => a.getAttribute('href'))"


def _pages(hrefs: list[str]) -> list[str]:
    """The result links as page names, best first, each once."""
    ranked: list[str] = []
    for href in hrefs:
        name = re.sub(r"\.html.*$", "", href)
        if name not in ranked:
            ranked.append(name)
    return ranked


@pytest.fixture(scope="module")
def search(
    browser: Any, browser_context_args: dict[str, Any], server: str, stats: Any
) -> Iterator[Callable[[str, str], list[str]]]:
    """``search(language, query)``: the result pages of the site's search page, best first.

    The first query of each language opens ``search.html?q=...``, as the search box does;
    the page then stays open and each further query goes into its URL (``?q=``, which the
    site's scorer reads) and runs through the function that page load calls with the URL's
    query (``Search.performSearch``, Sphinx's searchtools.js), on the same index, scorer and
    result list. Loading search.html again for every query
    (the search index parsed anew each time, and the snippet fetches of the last query's
    results cancelled) took about 116 of the e2e session's worker-seconds, measured.
    """
    context = browser.new_context(**browser_context_args, **READER)
    context.set_default_timeout(20_000)
    pages: dict[str, Any] = {}
    records: dict[str, Any] = {}

    def ranked_results(language: str, query: str) -> list[str]:
        if language not in pages:
            page = pages[language] = context.new_page()
            records[language] = watch(page, server)
            page.goto(f"{server}{language}/search.html?q={quote(query)}", wait_until="load")
            stats.pages.add(page.url.split("?")[0])
        else:
            page = pages[language]
            # the URL holds the query, as after a page load (docs/search_scorer.js reads it)
            page.evaluate(
                "query => { history.replaceState(null, '', '?q=' + encodeURIComponent(query));"
                " document.getElementById('search-results').replaceChildren();"
                " Search.performSearch(query); }",
                query,
            )
        page.wait_for_function(SEARCH_FINISHED)
        hrefs = page.eval_on_selector_all(RESULT_LINKS, HREFS)
        # the search fetches each result page for its snippet: a missing page, a script
        # error or a request to another host is a problem of this query (or the last one)
        problems = records[language].problems()
        records[language].clear()
        assert not problems, problems
        return _pages(hrefs)

    yield ranked_results
    context.close()


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_a_query_run_in_the_open_page_ranks_as_a_fresh_page_load_does(
    search: Callable[[str, str], list[str]],
    browser: Any,
    browser_context_args: dict[str, Any],
    server: str,
    language: str,
) -> None:
    """The fixture's shortcut (later queries run in the open search page) changes nothing."""
    search(language, "cheat sheet")  # the open page has run another query first
    context = browser.new_context(**browser_context_args, **READER)
    try:
        own = ("反向钩子梯度",) if language == "zh_CN" else ("remove hooks leak",)
        for query in (*own, "backward hook gradient", "grad_input"):
            fresh = context.new_page()
            fresh.goto(f"{server}{language}/search.html?q={quote(query)}", wait_until="load")
            fresh.wait_for_function(SEARCH_FINISHED)
            loaded = fresh.eval_on_selector_all(RESULT_LINKS, HREFS)
            fresh.close()
            assert len(loaded) > 3, (query, loaded)
            assert _pages(loaded) == search(language, query), query
    finally:
        context.close()


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize(("query", "teacher"), QUERIES)
def test_the_page_that_teaches_a_term_is_in_the_top_three(
    search: Callable[[str, str], list[str]],
    stats: Any,
    language: str,
    query: str,
    teacher: str,
) -> None:
    pages = search(language, query)
    stats.notes.append(
        f"search {language} {query!r}: {teacher} at {pages.index(teacher) + 1 if teacher in pages else '-'}"
    )
    assert teacher in pages[:3], f"{query!r} ({language}): top 3 are {pages[:3]}"


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("message", ERRORS + ERROR_WORDS)
def test_an_error_message_finds_the_error_page_first(
    search: Callable[[str, str], list[str]], language: str, message: str
) -> None:
    pages = search(language, message)
    assert pages[:1] == [ERROR_PAGE], f"{message!r} ({language}): results {pages[:3]}"


@pytest.mark.parametrize(("language", "query", "teacher"), SEVERAL_WORDS)
def test_the_page_that_treats_every_word_comes_first(
    search: Callable[[str, str], list[str]],
    stats: Any,
    language: str,
    query: str,
    teacher: str,
) -> None:
    pages = search(language, query)
    stats.notes.append(
        f"search {language} {query!r}: {teacher} at {pages.index(teacher) + 1 if teacher in pages else '-'}"
    )
    assert pages[:1] == [teacher], f"{query!r} ({language}): top 3 are {pages[:3]}"


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize(("query", "teacher"), IDENTIFIERS)
def test_the_teaching_page_comes_before_the_api_pages_for_a_name(
    search: Callable[[str, str], list[str]], language: str, query: str, teacher: str
) -> None:
    pages = search(language, query)
    assert any(API_PAGES.match(p) for p in pages), f"{query!r}: no API page mentions it any more"
    assert pages[:1] == [teacher], f"{query!r} ({language}): top 3 are {pages[:3]}"
