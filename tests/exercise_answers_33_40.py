"""Right and wrong answers to the exercises of pages 33-37 and 40 (tests/test_exercises.py)."""

from __future__ import annotations

import torch

import hooks_tutorial as ht
from hooks_tutorial import lm

# -- page 33 ---------------------------------------------------------------------------


def middle_stream(model, tokens):
    middle = {}
    handle = model.blocks[1].ln2.register_forward_pre_hook(
        lambda module, args: middle.update(stream=args[0].detach())
    )
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        handle.remove()
    return middle["stream"]


def middle_stream_of(module_name):
    """A wrong middle_stream: a forward hook on another part of block 1 (input or output)."""

    def answer(model, tokens):
        kept = {}
        module = model.blocks[1].get_submodule(module_name) if module_name else model.blocks[1]
        handle = module.register_forward_hook(
            lambda m, args, output: kept.update(input=args[0], output=output)
        )
        with torch.no_grad():
            model(tokens)
        handle.remove()
        return kept["output"] if module_name != "input" else kept["input"]

    return answer


def block_input(model, tokens):
    kept = {}
    with model.blocks[1].register_forward_pre_hook(lambda m, args: kept.update(x=args[0])):
        model(tokens)
    return kept["x"]


def generation_shapes(model, tokens):
    shapes = []
    handle = model.blocks[2].register_forward_hook(
        lambda module, args, output: shapes.append(list(output.shape))
    )
    try:
        lm.generate(model, tokens, max_new_tokens=4)
    finally:
        handle.remove()
    return shapes


def generation_shapes_one_run(model, tokens):
    shapes = []
    with model.blocks[2].register_forward_hook(
        lambda module, args, output: shapes.append(output.shape)
    ):
        model(tokens)
    return shapes


def generation_shapes_of_logits(model, tokens):
    shapes = []
    with model.register_forward_hook(lambda module, args, output: shapes.append(output.shape)):
        lm.generate(model, tokens)
    return shapes


def generation_shapes_leaky(model, tokens):
    shapes = []
    model.blocks[2].register_forward_hook(lambda m, args, output: shapes.append(output.shape))
    lm.generate(model, tokens)
    return shapes


def fit_affine(x, y):
    weights = torch.linalg.lstsq(torch.cat([x, torch.ones(len(x), 1)], dim=1), y).solution
    return lambda new: torch.cat([new, torch.ones(len(new), 1)], dim=1) @ weights


def fit_affine_pinv(x, y):
    inputs = torch.cat([x, torch.ones(len(x), 1)], dim=1)
    weights = torch.linalg.pinv(inputs) @ y
    return lambda new: torch.cat([new, torch.ones(len(new), 1)], dim=1) @ weights


def fit_linear(x, y):
    weights = torch.linalg.lstsq(x, y).solution
    return lambda new: new @ weights


def fit_backwards(x, y):
    weights = torch.linalg.lstsq(torch.cat([y, torch.ones(len(y), 1)], dim=1), x).solution
    return lambda new: torch.cat([new, torch.ones(len(new), 1)], dim=1) @ weights


# -- page 34 ---------------------------------------------------------------------------


def resample_head(head):
    columns = slice(16 * head, 16 * (head + 1))

    def hook(module, args):
        x = args[0].clone()
        x[..., columns] = torch.roll(args[0][..., columns], 1, dims=0)
        return (x,)

    return hook


def resample_variant(kind):
    def resample(head):
        columns = slice(16 * head, 16 * (head + 1))

        def hook(module, args):
            if kind == "all heads":
                return (torch.roll(args[0], 1, dims=0),)
            x = args[0] if kind == "in place" else args[0].clone()
            dims = 1 if kind == "positions" else 0
            x[..., columns] = torch.roll(args[0][..., columns].clone(), 1, dims=dims)
            return None if kind == "no return" else (x,)

        return hook

    return resample


def replace_heads(heads, values):
    def hook(module, args):
        x = args[0].clone()
        for head in heads:
            columns = slice(16 * head, 16 * (head + 1))
            x[..., columns] = values[..., columns]
        return (x,)

    return hook


def replace_heads_copy_each_time(heads, values):
    def hook(module, args):
        for head in heads:
            x = args[0].clone()
            columns = slice(16 * head, 16 * (head + 1))
            x[..., columns] = values[..., columns]
        return (x,)

    return hook


def replace_heads_counted_from_1(heads, values):
    def hook(module, args):
        x = args[0].clone()
        for head in heads:
            columns = slice(16 * (head - 1), 16 * head)
            x[..., columns] = values[..., columns]
        return (x,)

    return hook


def replace_head_at(head, values, positions):
    columns = slice(16 * head, 16 * (head + 1))

    def hook(module, args):
        x = args[0].clone()
        x[:, positions, columns] = values[positions, columns]
        return (x,)

    return hook


def replace_head_everywhere(head, values, positions):
    columns = slice(16 * head, 16 * (head + 1))

    def hook(module, args):
        x = args[0].clone()
        x[..., columns] = values[..., columns]
        return (x,)

    return hook


def replace_head_at_batch(head, values, positions):
    columns = slice(16 * head, 16 * (head + 1))

    def hook(module, args):
        x = args[0].clone()
        x[positions, :, columns] = values[:, columns]
        return (x,)

    return hook


# -- page 35 ---------------------------------------------------------------------------


def put_last(clean_output):
    def hook(module, args, out):
        out = out.clone()
        out[:, -1] = clean_output[:, -1]
        return out

    return hook


def put_last_variant(kind):
    def factory(clean_output):
        def hook(module, args, out):
            out = out.clone()
            if kind == "all":
                out[:] = clean_output
            elif kind == "sentence":
                out[-1] = clean_output[-1]
            elif kind == "first":
                out[:, 0] = clean_output[:, 0]
            elif kind == "no return":
                out[:, -1] = clean_output[:, -1]
                return None
            elif kind == "last only":
                return out[:, -1]
            return out

        return hook

    return factory


def put_last_in_place(clean_output):
    def hook(module, args, out):
        out[:, -1] = clean_output[:, -1]

    return hook


def patch_pattern(clean_pattern, head):
    def hook(module, args, out):
        out = out.clone()
        out[:, head] = clean_pattern[:, head]
        return out

    return hook


def patch_pattern_variant(kind):
    def factory(clean_pattern, head):
        def hook(module, args, out):
            out = out.clone()
            if kind == "all":
                return clean_pattern
            if kind == "column":
                out[..., head] = clean_pattern[..., head]
            if kind == "no return":
                out[:, head] = clean_pattern[:, head]
                return None
            return out

        return hook

    return factory


def next_name(ids):
    return (ids - 10 + 1) % 16 + 10


def third_name(sentences):
    third = next_name(sentences.subjects)
    third = torch.where(third == sentences.answers, next_name(third), third)
    prompts = sentences.prompts.clone()
    prompts[:, 10] = third
    return prompts


def third_name_variant(kind):
    def answer(sentences):
        third = next_name(sentences.subjects)
        if kind != "may repeat":
            third = torch.where(third == sentences.answers, next_name(third), third)
        prompts = sentences.prompts if kind == "in place" else sentences.prompts.clone()
        if kind == "not a name":
            third = third + 16
        if kind == "answer too":
            prompts[:, 10] = third
            prompts[:, 4] = third
        prompts[:, 10] = third
        return sentences.tokens.clone() if kind == "tokens" else prompts

    return answer


# -- page 36 ---------------------------------------------------------------------------


def difference_of_means(residuals, in_first):
    return residuals[in_first].mean(0) - residuals[~in_first].mean(0)


def steered_answers(model, block, prompts, vector):
    def hook(module, args, output):
        steered = output.clone()
        steered[:, -1] += vector
        return steered

    with block.register_forward_hook(hook), torch.no_grad():
        return model(prompts)[:, -1].argmax(-1)


def steered_answers_variant(kind):
    def answer(model, block, prompts, vector):
        def hook(module, args, output):
            steered = output.clone()
            if kind == "everywhere":
                steered += vector
            elif kind == "subtract":
                steered[:, -1] -= vector
            elif kind == "no return":
                steered[:, -1] += vector
                return None
            else:
                steered[:, -1] += vector
            return steered

        handle = block.register_forward_hook(hook)
        with torch.no_grad():
            logits = model(prompts)
        if kind != "leaky":
            handle.remove()
        return logits if kind == "logits" else logits[:, -1].argmax(-1)

    return answer


def prompt_only(vector):
    def hook(module, args, output):
        if output.shape[1] != 15:
            return None
        steered = output.clone()
        steered[:, 14] += vector
        return steered

    return hook


def prompt_only_variant(kind):
    def factory(vector):
        def hook(module, args, output):
            if kind != "every step" and output.shape[1] != 15:
                return None
            steered = output.clone()
            if kind == "all positions":
                steered += vector
            elif kind == "every step":
                steered[:, -1] += vector
            elif kind == "twice":
                steered[:, 14] += 2 * vector
            else:
                steered[:, 14] += vector
            return None if kind == "no return" else steered

        return hook

    return factory


# -- page 40 ---------------------------------------------------------------------------


def grads_after_cam(model, layer, images):
    with torch.no_grad():
        maps = ht.GradCAM(model, layer)(images)
    return maps, sum(p.grad is not None for p in model.parameters())


def grads_after_backward(model, layer, images):
    model(images).max(1).values.sum().backward()
    return grads_after_cam(model, layer, images)


def grads_counted_wrong(model, layer, images):
    with torch.no_grad():
        maps = ht.GradCAM(model, layer)(images)
    return maps, sum(p.requires_grad for p in model.parameters())


def count_fires(model, module, x):
    fired = []
    handle = module.register_forward_hook(lambda m, args, output: fired.append(1))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return len(fired)


def count_fires_per_module(model, module, x):
    fired = set()
    with module.register_forward_hook(lambda m, args, output: fired.add(m)), torch.no_grad():
        model(x)
    return len(fired)


def count_fires_leaky(model, module, x):
    fired = []
    module.register_forward_hook(lambda m, args, output: fired.append(1))
    model(x)
    return len(fired)


def called_names(model, x):
    return [row.name for row in ht.trace(model, x)]


# -- page 37 ---------------------------------------------------------------------------


def pattern_by_hook(model, tokens):
    patterns = []
    handle = model.blocks[1].attn.softmax.register_forward_hook(
        lambda module, args, output: patterns.append(output)
    )
    try:
        model(tokens)
    finally:
        handle.remove()
    return patterns[0]


def pattern_variant(kind):
    def answer(model, tokens):
        kept = {}
        block = model.blocks[0 if kind == "block 0" else 1]
        with block.attn.softmax.register_forward_hook(
            lambda module, args, output: kept.update(input=args[0], output=output)
        ):
            model(tokens)
        if kind == "scores":
            return kept["input"]
        if kind == "head 3":
            return kept["output"][:, 3]
        return kept["output"]

    return answer


def patch_position(clean_output, position):
    def hook(module, args, output):
        output = output.clone()
        output[:, position] = clean_output[:, position]
        return output

    return hook


def patch_position_variant(kind):
    def factory(clean_output, position):
        def hook(module, args, output):
            output = output.clone()
            if kind == "sentence":
                output[position] = clean_output[position]
            elif kind == "all":
                output[:] = clean_output
            elif kind == "last":
                output[:, -1] = clean_output[:, -1]
            elif kind == "no return":
                output[:, position] = clean_output[:, position]
                return None
            return output

        return hook

    return factory


def broken(activation, name):
    msg = "broken hook"
    raise ValueError(msg)


RIGHT_40 = {
    "37.1": pattern_by_hook,
    "37.2": patch_position,
    "37.3": broken,
    "40.1": grads_after_cam,
    "40.2": count_fires,
    "40.3": called_names,
}


RIGHT = {
    "33.1": middle_stream,
    "33.2": generation_shapes,
    "33.3": fit_affine,
    "34.1": resample_head,
    "34.2": replace_heads,
    "34.3": replace_head_at,
    "35.1": put_last,
    "35.2": patch_pattern,
    "35.3": third_name,
    "36.1": difference_of_means,
    "36.2": steered_answers,
    "36.3": prompt_only,
    **RIGHT_40,
}

WRONG = [
    ("33.1", middle_stream_of("ln2"), "normalised"),
    ("33.1", middle_stream_of(""), "after_mlp"),
    ("33.1", middle_stream_of("attn"), "attention_only"),
    ("33.1", block_input, "before_attention"),
    ("33.1", lambda model, tokens: model(tokens), "wrong_stream"),
    ("33.1", lambda model, tokens: None, "not_a_tensor"),
    ("33.2", generation_shapes_one_run, "one_call"),
    ("33.2", generation_shapes_of_logits, "wrong_module"),
    ("33.2", generation_shapes_leaky, "hooks_left"),
    ("33.2", lambda model, tokens: len(lm.generate(model, tokens)), "not_shapes"),
    ("33.3", fit_linear, "no_bias"),
    ("33.3", fit_backwards, "raised_at"),
    ("33.3", lambda x, y: torch.linalg.lstsq(x, y).solution, "not_callable_map"),
    ("33.3", lambda x, y: lambda new: new[:, :4] * 0 + y.mean(0), "not_least_squares"),
    ("34.1", resample_variant("all heads"), "all_heads"),
    ("34.1", resample_variant("positions"), "same_sentence"),
    ("34.1", resample_variant("in place"), "changed_in_place"),
    ("34.1", resample_variant("no return"), "returned_none"),
    ("34.1", lambda head: lambda module, args: args[0][..., :16], "not_the_input"),
    ("34.2", replace_heads_copy_each_time, "missed_heads"),
    ("34.2", replace_heads_counted_from_1, "other_columns"),
    ("34.3", replace_head_everywhere, "all_positions"),
    ("34.3", replace_head_at_batch, "wrong_dimension"),
    ("35.1", put_last_variant("all"), "all_positions"),
    ("35.1", put_last_variant("sentence"), "last_sentence"),
    ("35.1", put_last_variant("first"), "wrong_position"),
    ("35.1", put_last_variant("no return"), "returned_none"),
    ("35.1", put_last_variant("last only"), "replaced_output"),
    ("35.2", patch_pattern_variant("all"), "all_heads"),
    ("35.2", patch_pattern_variant("column"), "wrong_dimension"),
    ("35.2", patch_pattern_variant("no return"), "returned_none"),
    ("35.3", third_name_variant("may repeat"), "in_sentence"),
    ("35.3", third_name_variant("in place"), "changed_in_place"),
    ("35.3", third_name_variant("not a name"), "not_a_name"),
    ("35.3", third_name_variant("answer too"), "other_positions"),
    ("35.3", third_name_variant("tokens"), "not_prompts"),
    ("36.1", lambda r, first: r[~first].mean(0) - r[first].mean(0), "reversed"),
    ("36.1", lambda r, first: r[first].sum(0) - r[~first].sum(0), "sums"),
    ("36.1", lambda r, first: r[first].mean(0) - r.mean(0), "wrong_direction"),
    ("36.1", lambda r, first: r[first] - r[~first].mean(0), "not_a_vector"),
    ("36.2", steered_answers_variant("everywhere"), "every_position"),
    ("36.2", steered_answers_variant("subtract"), "opposite"),
    ("36.2", steered_answers_variant("no return"), "not_steered"),
    ("36.2", steered_answers_variant("logits"), "not_tokens"),
    ("36.2", steered_answers_variant("leaky"), "hooks_left"),
    ("36.3", prompt_only_variant("every step"), "every_step"),
    ("36.3", prompt_only_variant("all positions"), "all_positions"),
    ("36.3", prompt_only_variant("twice"), "wrong_push"),
    ("36.3", prompt_only_variant("no return"), "returned_none"),
    ("40.1", grads_after_backward, "filled_grads"),
    ("40.1", grads_counted_wrong, "miscounted"),
    ("40.1", lambda model, layer, images: ht.GradCAM(model, layer)(images), "not_a_pair"),
    ("40.1", lambda model, layer, images: (ht.GradCAM(model, "0")(images), 0), "wrong_maps"),
    ("40.2", count_fires_per_module, "once_per_module"),
    ("40.2", count_fires_leaky, "hooks_left"),
    ("40.2", lambda model, module, x: str(module), "not_a_count"),
    (
        "40.3",
        lambda model, x: [name for name, _ in model.named_modules() if name],
        "modules_not_calls",
    ),
    ("40.3", lambda model, x: [r.name for r in ht.trace(model, x)][:1], "wrong_calls"),
    ("40.3", ht.trace, "not_names"),
    ("37.1", pattern_variant("scores"), "scores"),
    ("37.1", pattern_variant("block 0"), "wrong_block"),
    ("37.1", pattern_variant("head 3"), "one_head"),
    ("37.1", lambda model, tokens: model(tokens), "wrong_pattern"),
    ("37.1", lambda model, tokens: [], "not_a_tensor"),
    ("37.2", patch_position_variant("sentence"), "one_sentence"),
    ("37.2", patch_position_variant("all"), "all_positions"),
    ("37.2", patch_position_variant("last"), "wrong_position"),
    ("37.2", patch_position_variant("no return"), "returned_none"),
    ("37.3", lambda activation, name: None, "did_not_raise"),
]
