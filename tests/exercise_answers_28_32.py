"""Right and wrong answers to the checked exercises of pages 28 to 32 (tests/test_exercises.py)."""

from __future__ import annotations

from torch import nn
from torch.nn.utils import prune
from torch.utils.checkpoint import checkpoint

# -- page 28: pruning -------------------------------------------------------------------


def prune_together(model):
    prune.global_unstructured(
        [(model[0], "weight"), (model[2], "weight")],
        pruning_method=prune.L1Unstructured,
        amount=0.3,
    )


def prune_each(model):  # each layer by itself: 10 of 32 and 5 of 16
    prune.l1_unstructured(model[0], "weight", amount=0.3)
    prune.l1_unstructured(model[2], "weight", amount=0.3)


def prune_together_half(model):
    prune.global_unstructured(
        [(model[0], "weight"), (model[2], "weight")],
        pruning_method=prune.L1Unstructured,
        amount=0.5,
    )


def prune_everything(model):  # the biases and the ReLU's (absent) weight too
    prune.global_unstructured(
        [(model[0], "weight"), (model[0], "bias"), (model[2], "weight")],
        pruning_method=prune.L1Unstructured,
        amount=0.3,
    )


# -- page 29: activation checkpointing ------------------------------------------------------


class Net(nn.Module):  # page 29's model
    def __init__(self, use_checkpoint):
        super().__init__()
        self.use_checkpoint = use_checkpoint
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 128)) for _ in range(4)
        )

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x.sum()


class HalfCheckpointed(Net):
    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if i % 2 else block(x)
        return x.sum()


class FirstHalfCheckpointed(Net):  # blocks 0 and 1: half of them, but not every second one
    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if i < 2 else block(x)
        return x.sum()


class Unchecked(Net):  # the checkpoint forgotten
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x.sum()


# -- page 30: distributed data parallel -------------------------------------------------------


def three_steps(ddp_model, batch):
    for step in range(3):
        ddp_model.zero_grad()
        if step == 0:
            with ddp_model.no_sync():
                ddp_model(batch).sum().backward()
        else:
            ddp_model(batch).sum().backward()


def three_steps_forward_outside(ddp_model, batch):  # DDP decided to sync in the forward pass
    for step in range(3):
        ddp_model.zero_grad()
        loss = ddp_model(batch).sum()
        if step == 0:
            with ddp_model.no_sync():
                loss.backward()
        else:
            loss.backward()


def three_synced_steps(ddp_model, batch):
    for _ in range(3):
        ddp_model.zero_grad()
        ddp_model(batch).sum().backward()


def three_steps_never_synced(ddp_model, batch):
    with ddp_model.no_sync():
        three_synced_steps(ddp_model, batch)


# -- page 31: state-dict hooks -----------------------------------------------------------


def accept_missing_scale(module, incompatible_keys):
    if "scale" in incompatible_keys.missing_keys:
        incompatible_keys.missing_keys.remove("scale")


def accept_everything(module, incompatible_keys):
    incompatible_keys.missing_keys.clear()


def filter_a_copy(module, incompatible_keys):  # a new list: the original stays as it was
    missing = [key for key in incompatible_keys.missing_keys if key != "scale"]
    del missing


def return_the_keys(module, incompatible_keys):
    incompatible_keys.missing_keys.remove("scale")
    return incompatible_keys


def remove_always(module, incompatible_keys):
    incompatible_keys.missing_keys.remove("scale")


# -- page 32: autograd graph hooks --------------------------------------------------------


def double_grads(grad_outputs):
    return tuple(2 * g for g in grad_outputs)


RIGHT = {
    "28.2": prune_together,
    "29.2": HalfCheckpointed,
    "30.1": three_steps,
    "31.1": accept_missing_scale,
    "32.1": double_grads,
}

WRONG = [
    ("28.2", prune_each, "pruned_separately"),
    ("28.2", prune_together_half, "wrong_amount"),
    ("28.2", prune_everything, "wrong_modules"),
    ("28.2", lambda model: None, "not_pruned"),
    ("29.2", Net, "checkpointed_all"),
    ("29.2", Unchecked, "checkpointed_none"),
    ("29.2", FirstHalfCheckpointed, "wrong_blocks"),
    ("29.2", lambda use_checkpoint: nn.Linear(2, 2), "not_a_net"),
    ("30.1", three_steps_forward_outside, "forward_outside"),
    ("30.1", three_synced_steps, "synced_step_0"),
    ("30.1", three_steps_never_synced, "never_synced"),
    ("30.1", lambda ddp_model, batch: ddp_model(batch), "wrong_steps"),
    ("31.1", accept_everything, "accepted_all"),
    ("31.1", filter_a_copy, "still_missing"),
    ("31.1", return_the_keys, "returned_value"),
    ("31.1", remove_always, "removed_absent"),
    ("32.1", print, "returned_none"),
    ("32.1", lambda grad_outputs: [2 * g for g in grad_outputs], "not_a_tuple"),
    ("32.1", lambda grad_outputs: tuple(3 * g for g in grad_outputs), "wrong_factor"),
]
