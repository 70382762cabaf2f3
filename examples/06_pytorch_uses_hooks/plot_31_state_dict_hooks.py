# Needs the hooks_tutorial library: pip install hooks-tutorial
# (or the development version: pip install "git+https://github.com/hooks-tutorial/hooks-tutorial")
"""
State-dict hooks: load an old checkpoint into a renamed model
=============================================================

.. index::
   ! state_dict
   ! register_state_dict_pre_hook
   ! load_state_dict
   ! state-dict hooks

A checkpoint is a dictionary from parameter names to tensors. Rename a layer
in your code and every checkpoint saved before the rename stops loading.
Hooks on ``state_dict()`` and ``load_state_dict()`` fix this at the door:
a load pre-hook rewrites the old names, and a state-dict post-hook stamps
new checkpoints with a format version so that the two kinds can be told
apart. Optimizers have the same four hooks, for their own state.

.. rubric:: What you will learn
   :heading-level: 2

- why ``load_state_dict`` rejects a checkpoint after a layer was renamed;
- how ``register_load_state_dict_pre_hook`` renames keys before loading;
- how ``register_state_dict_post_hook`` adds metadata, and why it must
  return ``None``;
- how the optimizer's state-dict hooks fire when saving and loading.

**Prerequisites**: :doc:`/auto_examples/02_module_hooks/plot_08_handles_and_leaks`.

**Needs PyTorch 2.5 or later**: ``register_load_state_dict_pre_hook`` and
``register_state_dict_post_hook`` became public methods of ``nn.Module`` in
that release.
"""

# %%
# A checkpoint from before the rename
# -----------------------------------
#
# The first version of a model called its layers ``features`` and ``head``.
# A later version renamed them ``encoder`` and ``classifier``; the maths is
# the same. The old checkpoint no longer loads.

import io

import torch
from torch import nn

import hooks_tutorial as ht

print("torch", torch.__version__)


class OldNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(torch.relu(self.features(x)))


class NewNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.classifier = nn.Linear(8, 2)

    def forward(self, x):
        return self.classifier(torch.relu(self.encoder(x)))


torch.manual_seed(0)
old_model = OldNet()
checkpoint = old_model.state_dict()
print("keys in the old checkpoint:", list(checkpoint))

new_model = NewNet()
try:
    new_model.load_state_dict(checkpoint)
except RuntimeError as error:
    message = f"{type(error).__name__}: {error}"
    print(message)

# sphinx_gallery_start_ignore
# "The old checkpoint no longer loads" (missing and unexpected keys)
assert list(checkpoint) == ["features.weight", "features.bias", "head.weight", "head.bias"]
assert message.startswith("RuntimeError: Error(s) in loading state_dict for NewNet:")
assert 'Missing key(s) in state_dict: "encoder.weight"' in message
assert 'Unexpected key(s) in state_dict: "features.weight"' in message
# sphinx_gallery_end_ignore

# %%
# A load pre-hook renames the keys
# --------------------------------
#
# ``module.register_load_state_dict_pre_hook(hook)`` calls ``hook`` before the
# module copies any tensor. The hook receives the state dict and the
# module's ``prefix`` (empty for the top module) and may edit the dict in
# place: here it moves every old name to the new one.

RENAMES = {"features.": "encoder.", "head.": "classifier."}


def rename_old_keys(
    module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
):
    for key in list(state_dict):
        for old, new in RENAMES.items():
            if key.startswith(prefix + old):
                state_dict[prefix + new + key.removeprefix(prefix + old)] = state_dict.pop(key)


handle = new_model.register_load_state_dict_pre_hook(rename_old_keys)
result = new_model.load_state_dict(checkpoint)
print(result)
x = torch.randn(3, 4)
print("same outputs as the old model:", torch.equal(new_model(x), old_model(x)))
print("keys in the old checkpoint now:", list(checkpoint))

# sphinx_gallery_start_ignore
# "here it moves every old name to the new one": the load succeeds, same outputs
assert not result.missing_keys
assert not result.unexpected_keys
assert torch.equal(new_model(x), old_model(x))
# sphinx_gallery_end_ignore

# %%
# ``load_state_dict`` hands the hook a shallow copy of the checkpoint, so the
# renaming does not touch the caller's dictionary. Note also what
# :obj:`hooks_tutorial.count_hooks` reports: it counts the module hooks of
# the forward and backward passes (forward, forward pre-, backward and
# backward pre-hooks) and the gradient hooks on parameters, but not
# state-dict hooks. Those live in their own dictionaries, such as
# ``_load_state_dict_pre_hooks``, and are removed with their handle as usual.

print("count_hooks:", ht.count_hooks(new_model))
print("load pre-hooks on the model:", len(new_model._load_state_dict_pre_hooks))

# sphinx_gallery_start_ignore
# "the renaming does not touch the caller's dictionary"
assert list(checkpoint) == ["features.weight", "features.bias", "head.weight", "head.bias"]
# "count_hooks ... counts the module hooks of the forward and backward passes (forward,
# forward pre-, backward and backward pre-hooks) and the gradient hooks on parameters,
# but not state-dict hooks"
assert not ht.count_hooks(new_model)
assert len(new_model._load_state_dict_pre_hooks) == 1
probe = nn.Linear(2, 2)
probe_handles = [
    probe.register_forward_hook(lambda m, a, o: None),
    probe.register_forward_pre_hook(lambda m, a: None),
    probe.register_full_backward_hook(lambda m, gi, go: None),
    probe.register_full_backward_pre_hook(lambda m, go: None),
    probe.weight.register_hook(lambda g: None),
    probe.bias.register_post_accumulate_grad_hook(lambda p: None),
    probe.register_load_state_dict_pre_hook(lambda *args: None),
    probe.register_state_dict_post_hook(lambda *args: None),
]
assert tuple(ht.count_hooks(probe)[""]) == (1, 1, 1, 1, 2)
assert ht.count_hooks(probe).total == 6  # the two state-dict hooks are not counted
for probe_handle in probe_handles:
    probe_handle.remove()
# sphinx_gallery_end_ignore

# %%
# Stamp new checkpoints with a version
# ------------------------------------
#
# The hook above renames blindly. Better: mark new checkpoints so the hook
# knows which format it is reading. ``register_state_dict_post_hook(hook)``
# runs after ``state_dict()`` has collected the tensors, with the same
# ``local_metadata`` dictionary that PyTorch saves next to them (in the state
# dict's ``_metadata`` attribute, which ``torch.save`` keeps). This public
# post-hook must edit in place and return ``None``; returning the dict is an
# error. (The private ``_register_state_dict_hook`` that it replaced let a
# hook return a new dict.)


def add_format_version(module, state_dict, prefix, local_metadata):
    local_metadata["format_version"] = 2


def return_the_dict(module, state_dict, prefix, local_metadata):
    return state_dict


with new_model.register_state_dict_post_hook(return_the_dict):
    try:
        new_model.state_dict()
    except RuntimeError as error:
        message = f"RuntimeError: {error}"
        print(message)

stamp = new_model.register_state_dict_post_hook(add_format_version)
buffer = io.BytesIO()
torch.save(new_model.state_dict(), buffer)
buffer.seek(0)
new_checkpoint = torch.load(buffer, weights_only=True)
print("metadata of the top module after torch.load:", new_checkpoint._metadata[""])

# sphinx_gallery_start_ignore
# "This public post-hook must edit in place and return None; returning the dict is an
# error"; "local_metadata ... which torch.save keeps"
assert message == "RuntimeError: state_dict post-hook must return None", message
assert new_checkpoint._metadata[""] == {"version": 1, "format_version": 2}
# sphinx_gallery_end_ignore

# %%
# Now the load pre-hook renames only checkpoints without a version. It reads
# the version from ``local_metadata``, the metadata of the module it is
# registered on.


def upgrade_old_checkpoints(
    module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
):
    version = local_metadata.get("format_version", 1)
    print(f"  loading a checkpoint of format {version}")
    if version < 2:
        rename_old_keys(
            module,
            state_dict,
            prefix,
            local_metadata,
            strict,
            missing_keys,
            unexpected_keys,
            error_msgs,
        )


handle.remove()
upgrade = new_model.register_load_state_dict_pre_hook(upgrade_old_checkpoints)
print("old checkpoint:", new_model.load_state_dict(checkpoint))
print("new checkpoint:", new_model.load_state_dict(new_checkpoint))

# sphinx_gallery_start_ignore
# "the load pre-hook renames only checkpoints without a version. It reads the version from
# local_metadata": the old checkpoint reads as format 1, the new one as 2, and both load
# (the hook's prints go to a buffer, not to the reader's output)
import contextlib

with contextlib.redirect_stdout(io.StringIO()) as hook_prints:
    assert not new_model.load_state_dict(checkpoint).missing_keys
    assert not new_model.load_state_dict(new_checkpoint).missing_keys
assert hook_prints.getvalue().split("\n")[:2] == [
    "  loading a checkpoint of format 1",
    "  loading a checkpoint of format 2",
], hook_prints.getvalue()
# "BatchNorm stores a version in the same metadata and adds num_batches_tracked when it
# loads a checkpoint written before that buffer existed"
norm = nn.BatchNorm1d(3)
norm_state = norm.state_dict()
assert norm_state._metadata[""]["version"] == 2
norm_old = type(norm_state)((k, v) for k, v in norm_state.items() if k != "num_batches_tracked")
norm_old._metadata = type(norm_state._metadata)({"": {"version": 1}})
assert not norm.load_state_dict(norm_old).missing_keys
# sphinx_gallery_end_ignore

# %%
# This is how PyTorch upgrades its own modules: ``BatchNorm`` stores a
# ``version`` in the same metadata and adds ``num_batches_tracked`` when it
# loads a checkpoint written before that buffer existed.
#
# The optimizer's state-dict hooks
# --------------------------------
#
# An optimizer's state (momentum buffers, step counts) is saved with
# ``optimizer.state_dict()`` too, and it has four hooks of its own:
#
# - ``register_state_dict_pre_hook(hook(optimizer))``, before saving;
# - ``register_state_dict_post_hook(hook(optimizer, state_dict))``, after
#   saving; it may return a new state dict;
# - ``register_load_state_dict_pre_hook(hook(optimizer, state_dict))``,
#   before loading; it may return a new state dict;
# - ``register_load_state_dict_post_hook(hook(optimizer))``, after loading.
#
# A common use: resume training from a checkpoint with a new learning rate.
# The save post-hook shows the learning rate it saves, the load pre-hook
# replaces it before the optimizer reads it.

optimizer = torch.optim.SGD(new_model.parameters(), lr=0.1, momentum=0.9)
new_model(x).sum().backward()
optimizer.step()


def before_saving(optimizer):
    print("  state_dict pre-hook")


def after_saving(optimizer, state_dict):
    print("  state_dict post-hook: learning rate", state_dict["param_groups"][0]["lr"])


NEW_LEARNING_RATE = 0.01


def new_learning_rate(optimizer, state_dict):
    groups = [dict(group) for group in state_dict["param_groups"]]  # copies
    print(f"  load pre-hook: learning rate {groups[0]['lr']} -> {NEW_LEARNING_RATE}")
    for group in groups:
        group["lr"] = NEW_LEARNING_RATE
    return {**state_dict, "param_groups": groups}


def after_loading(optimizer):
    print("  load post-hook: momentum buffers restored:", len(optimizer.state))


optimizer_handles = [
    optimizer.register_state_dict_pre_hook(before_saving),
    optimizer.register_state_dict_post_hook(after_saving),
    optimizer.register_load_state_dict_pre_hook(new_learning_rate),
    optimizer.register_load_state_dict_post_hook(after_loading),
]

print("saving:")
optimizer_state = optimizer.state_dict()
print("loading:")
optimizer.load_state_dict(optimizer_state)
print("learning rate after loading:", optimizer.param_groups[0]["lr"])
print("saved learning rate unchanged:", optimizer_state["param_groups"][0]["lr"])

# sphinx_gallery_start_ignore
# "the load pre-hook replaces it before the optimizer reads it"; the saved dict keeps 0.1
assert optimizer.param_groups[0]["lr"] == NEW_LEARNING_RATE
assert optimizer_state["param_groups"][0]["lr"] == 0.1
assert len(optimizer.state) == 4  # momentum buffers of the four parameters
# sphinx_gallery_end_ignore

# %%
# State-dict hooks are hooks like any other: when the job is done, remove
# them with their handles, so that the next ``state_dict()`` or
# ``load_state_dict()`` runs plain.

for handle in [stamp, upgrade, *optimizer_handles]:
    handle.remove()
model_hooks = (
    new_model._state_dict_pre_hooks,
    new_model._state_dict_hooks,
    new_model._load_state_dict_pre_hooks,
    new_model._load_state_dict_post_hooks,
)
optimizer_hooks = (
    optimizer._optimizer_state_dict_pre_hooks,
    optimizer._optimizer_state_dict_post_hooks,
    optimizer._optimizer_load_state_dict_pre_hooks,
    optimizer._optimizer_load_state_dict_post_hooks,
)
print("state-dict hooks left on the model:", sum(len(hooks) for hooks in model_hooks))
print("state-dict hooks left on the optimizer:", sum(len(hooks) for hooks in optimizer_hooks))

# sphinx_gallery_start_ignore
# "remove them with their handles, so that the next state_dict() ... runs plain"
assert sum(len(hooks) for hooks in model_hooks) == 0
assert sum(len(hooks) for hooks in optimizer_hooks) == 0
# sphinx_gallery_end_ignore

# %%
# Summary
# -------
#
# - ``load_state_dict`` matches tensors by name, so a renamed layer breaks
#   old checkpoints (missing and unexpected keys).
# - A load pre-hook receives the state dict before anything is copied and
#   can rename keys in place; it works on a copy of the caller's dict.
# - A state-dict post-hook runs after ``state_dict()``; it must return
#   ``None``. Its ``local_metadata`` travels with the checkpoint, which makes
#   it the place for a format version.
# - ``count_hooks`` counts forward, backward and parameter hooks, not
#   state-dict hooks; those have their own dictionaries and handles.
# - Optimizers have the same four hooks; their post-hook (save) and pre-hook
#   (load) may return a new state dict, for example with a new learning rate.
#
# Exercises
# ---------
#
# Exercises that ask for code come with a check that runs offline, in the
# downloaded notebook or script: write your answer, then run the
# ``ht.exercises.check(...)`` call that ends the exercise. The check says what
# is wrong, or what is right, in the language of the download, and leaves no
# hook behind; each solution ends with the same call. Exercises marked *in
# words* ask why: they have no check.
#
# 1. Give ``NewNet`` an extra buffer ``self.register_buffer("scale",
#    torch.ones(1))``. Loading an old checkpoint now reports a missing key.
#    Write ``accept_missing_scale(module, incompatible_keys)``, a
#    ``register_load_state_dict_post_hook`` hook that accepts this one missing
#    key. What does ``load_state_dict`` return? Check:
#    ``ht.exercises.check("31.1", accept_missing_scale)``.
# 2. *In words:* register ``rename_old_keys`` on ``new_model.encoder`` instead
#    of ``new_model``. What ``prefix`` does it receive, does the old checkpoint
#    load, and why?
# 3. *In words:* create a new ``SGD`` optimizer with ``lr=0.5`` and no hooks,
#    and load ``optimizer_state`` into it. Which learning rate does it use
#    afterwards, and why?

# %%
# .. rst-class:: solution
#
# **Solution 1.** ``<All keys matched successfully>``. Without the post-hook,
# loading fails on the missing ``scale``; the post-hook runs after the tensors
# were copied and before the strict check, and removes ``scale`` from the list
# of missing keys in place.


def accept_missing_scale(module, incompatible_keys):
    if "scale" in incompatible_keys.missing_keys:
        incompatible_keys.missing_keys.remove("scale")


class NewNetWithScale(NewNet):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(1))


model = NewNetWithScale()
with model.register_load_state_dict_pre_hook(rename_old_keys):
    try:
        model.load_state_dict(checkpoint)
    except RuntimeError as error:
        message = str(error).splitlines()[1].strip()
        print("without the post-hook:", message)
    with model.register_load_state_dict_post_hook(accept_missing_scale):
        result = model.load_state_dict(checkpoint)
        print("with the post-hook:", result)

# sphinx_gallery_start_ignore
# "loading fails on the missing scale"; "<All keys matched successfully>"
assert message == 'Missing key(s) in state_dict: "scale".', message
assert not result.missing_keys
assert not result.unexpected_keys
# "the post-hook runs after the tensors were copied and before the strict check"
copied = []
with (
    model.register_load_state_dict_pre_hook(rename_old_keys),
    model.register_load_state_dict_post_hook(
        lambda m, keys: copied.append(torch.equal(m.encoder.weight, checkpoint["features.weight"]))
    ),
    model.register_load_state_dict_post_hook(accept_missing_scale),
):
    model.encoder.weight.data.zero_()
    model.load_state_dict(checkpoint)
assert copied == [True]
# sphinx_gallery_end_ignore

ht.exercises.check("31.1", accept_missing_scale)

# sphinx_gallery_start_ignore
from page_checks import assert_check  # docs/_ext: the build's checks


# a hook that empties the list accepts every missing key, a real mistake included
def accept_every_missing_key(module, incompatible_keys):
    incompatible_keys.missing_keys.clear()


assert_check("31.1", accept_missing_scale, accept_every_missing_key, "accepted_all")
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 2.** The prefix is ``'encoder.'``, and the hook receives no key at
# all: a submodule's hook gets only the entries under its own prefix, and the
# old checkpoint has none under ``encoder.``. Nothing is renamed, and loading
# fails with missing and unexpected keys. Renaming layers is a job for the hook
# on the module that holds them.


def show_and_rename(module, state_dict, prefix, *args):
    print(f"prefix {prefix!r}, keys received: {list(state_dict)}")
    received[prefix] = list(state_dict)
    rename_old_keys(module, state_dict, prefix, *args)


received = {}
fresh_model = NewNet()
with fresh_model.encoder.register_load_state_dict_pre_hook(show_and_rename):
    try:
        fresh_model.load_state_dict(checkpoint)
    except RuntimeError as error:
        message = str(error)
        print("RuntimeError:", message)

# sphinx_gallery_start_ignore
# "The prefix is 'encoder.', and the hook receives no key at all ... loading fails with
# missing and unexpected keys"
assert received == {"encoder.": []}, received
assert "Missing key(s)" in message
assert "Unexpected key(s)" in message
# sphinx_gallery_end_ignore

# %%
# .. rst-class:: solution
#
# **Solution 3.** The saved one, 0.1, not the 0.5 it was created with:
# ``load_state_dict`` replaces the settings of the parameter groups (learning
# rate, momentum) with those in the state dict. Without the load pre-hook of
# the page, nothing changes them on the way.

fresh = torch.optim.SGD(new_model.parameters(), lr=0.5, momentum=0.9)
print("learning rate before loading:", fresh.param_groups[0]["lr"])
fresh.load_state_dict(optimizer_state)
print("learning rate after loading: ", fresh.param_groups[0]["lr"])

# sphinx_gallery_start_ignore
assert fresh.param_groups[0]["lr"] == 0.1  # "The saved one, 0.1, not the 0.5"
from page_checks import assert_exercises_checked, assert_no_hooks_left  # docs/_ext

assert_exercises_checked()
assert_no_hooks_left(globals())
# sphinx_gallery_end_ignore
