"""Claims of page 40 (error messages), checked against what the page printed."""

from __future__ import annotations

from sitecheck import match, outputs, page_path, search_index

PAGE = "40"


def test_each_message_is_printed_by_the_page() -> None:
    # every section title quotes the start of a message that the page's code printed
    printed = " ".join(outputs(PAGE).split())  # the messages are wrapped to fit the page
    for start in [
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
        "RuntimeError: Output 0 of BackwardHookFunction is a view and is being modified inplace",
        "RuntimeError: Trying to backward through the graph a second time",
        "RuntimeError: Inference tensors cannot be saved for backward",
        "RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
        (
            "RuntimeError: one of the variables needed for gradient computation has been modified "
            "by an inplace operation"
        ),
        (
            "FutureWarning: Using a non-full backward hook when the forward contains multiple "
            "autograd Nodes is deprecated"
        ),
        (
            "RuntimeError: Cannot use both regular backward hooks and full backward hooks on a "
            "single Module"
        ),
        "RuntimeError: GradCAM needs gradients, which torch.inference_mode() forbids",
        "ValueError: no submodule named 'relu4'; did you mean 'relu3'",
        "IndexError: target class 7 is out of range for a model with 5 outputs",
        (
            "CAM methods need a feature map [B, C, H, W]; for transformer tokens [B, tokens, C] "
            "pass reshape_transform=token_reshape_transform"
        ),
    ]:
        assert start in printed, start


def test_every_message_start_is_an_index_entry_of_this_page() -> None:
    # "Searching for the start of each message finds this page first": each message start is
    # a main index entry (`! ...`) of the page, which Sphinx's search lists above any other match
    path = page_path(PAGE)
    for language in ("en", "zh_CN"):
        index = search_index(language)
        entries = index["indexentries"]
        for start in [
            "element 0 of tensors does not require grad and does not have a grad_fn",
            "output 0 of backwardhookfunction is a view and is being modified inplace",
            "trying to backward through the graph a second time",
            "inference tensors cannot be saved for backward",
            "cannot register a hook on a tensor that doesn't require gradient",
            (
                "one of the variables needed for gradient computation has been modified by an "
                "inplace operation"
            ),
            (
                "using a non-full backward hook when the forward contains multiple autograd nodes "
                "is deprecated"
            ),
            "cannot use both regular backward hooks and full backward hooks on a single module",
            "gradcam needs gradients",
            "no submodule named",
            "is out of range for a model with",
            "cam methods need a feature map",
        ]:
            docs = {index["docnames"][entry[0]] for entry in entries[start] if entry[2]}
            assert docs == {path}, (language, start, docs)


def test_fixes_work_and_leave_no_hooks() -> None:
    printed = outputs(PAGE)
    # "The library's CAM methods do this themselves, so they work inside torch.no_grad()"
    assert match(r"maps: \(4, 64, 64\) \| hooks left: (\d+)", printed)[1] == "0"
    assert "two backward passes through one graph with retain_graph=True: done" in printed
    assert "gradient of the layer's weight: (2, 3)" in printed
    assert "the hook saw a gradient of shape (4, 3, 64, 64)" in printed
    # "A fresh module ... takes the full hook, and nothing warns"
    assert "warnings with the full backward hook: 0" in printed
    # "the old hook marked it for good, even after handle.remove()": the error came after
    # the old hook's removal (the page removes it in the block that warned)
    assert printed.index("FutureWarning: Using a non-full") < printed.index(
        "RuntimeError: Cannot use both"
    )
    assert printed.count("hooks left: 0") == 3


def test_silent_cases() -> None:
    printed = outputs(PAGE)
    # "The compiled model keeps the trace it made without the hook"
    assert "hook added after compiling, calls of the compiled model: 0" in printed
    assert "after one call of the model itself: 1" in printed
    # "or call torch.compiler.reset() after adding one: the next call traces the model
    # again, hook included"
    assert "hook added, then torch.compiler.reset(), calls of the compiled model: 1" in printed
    # "a hook on model.act never fires"
    assert "hook on a module that forward never calls: 0 calls" in printed
    # "runs its hooks twice per call, and a hook that stores 'the' activation keeps the
    # second one"
    assert "the shared ReLU's hook fired 2 times, with outputs [(3, 8), (3, 2)]" in printed
