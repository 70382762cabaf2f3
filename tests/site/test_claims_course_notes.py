"""Claims of the course-notes page, checked against the pages and the installed PyTorch."""

from __future__ import annotations

import torch
from sitecheck import outputs, quoted_in_both_languages
from torch import nn

PAGE = "course_notes"


def test_checked_on_the_installed_pytorch() -> None:
    # "The facts were checked on PyTorch 2.14."
    assert torch.__version__.startswith("2.14")
    quoted_in_both_languages(PAGE, "PyTorch 2.14")


def test_tensor_hook_numbers_match_page_10() -> None:
    # "Correct: 96 with the hook, 192 without."
    printed = outputs("10")
    assert "x.grad with the hook: tensor([96.])" in printed
    assert "x.grad without a hook: tensor([192.])" in printed
    quoted_in_both_languages(PAGE, "96", "192")


def test_kinds_of_hooks_exist() -> None:
    # "Modules also have forward pre-hooks, full backward hooks and backward
    # pre-hooks, and global hooks reach every module. Beyond modules, PyTorch has
    # hooks on tensors and on autograd nodes, saved-tensor hooks, optimizer hooks
    # and ``state_dict`` hooks"
    module = nn.Linear(2, 2)
    for name in [
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_state_dict_post_hook",
        "register_load_state_dict_post_hook",
    ]:
        assert callable(getattr(module, name))
    assert callable(torch.nn.modules.module.register_module_forward_hook)
    x = torch.ones(1, requires_grad=True)
    y = x * 2
    assert callable(x.register_hook)
    assert callable(y.grad_fn.register_hook)  # an autograd node
    assert callable(torch.autograd.graph.saved_tensors_hooks)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    assert callable(optimizer.register_step_pre_hook)


def test_detach_shares_memory_as_page_5_shows() -> None:
    # "but ``detach()`` shares memory with the output"
    assert "same memory: True" in outputs("05")
