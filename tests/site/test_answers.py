"""Every exercise has an answer in prose, in both languages, that states what its solution printed.

A page ends with "Exercises" (an enumerated list) and a "Solutions" dropdown: one code
block with the solutions of all exercises, then a bold "Answers" line and an
enumerated list with one answer per exercise, in prose (the Chinese reader gets
the answer from the translated prose, not from English comments in the code).

For every page, on the built HTML of both languages, these tests check that

- there is one answer per exercise;
- every number an answer states in its prose (not in inline code) is printed by
  the solution code, with the same digits (:func:`sitecheck.run_page` runs the
  page, then its solutions in the page's namespace);
- the Chinese answer states the same numbers as the English one.

Numbers that name a page, an exercise or a step ("page 17", "exercise 2", "step 0",
"第 17 页", "第 0 步") are not claims and are not checked. :mod:`test_solutions_leave_no_hooks` checks that
the same solutions leave no hook behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from sitecheck import EXAMPLES, LANGUAGES, html, run_page

PAGES = sorted(p.stem.split("_")[1] for p in EXAMPLES.glob("*/plot_*.py"))
# page 23 needs the pretrained photo models and page 30 starts worker processes: their
# answers are checked by their own claim tests (test_claims_23.py, test_claims_30.py)
RUN_ELSEWHERE = {"23", "30"}

_W = "A-Za-z0-9_"
NUMBER = re.compile(rf"(?<![{_W}.\-])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![{_W}]|\.\d)")
NOT_A_CLAIM = re.compile(
    # "page 17", "exercise 2", "step 0" name a page, an exercise, a step ("第 17 页", "第 0 步")
    r"(?:pages?|exercises?|Exercises?|[Ss]teps?|练习|第)\s*$",
)


@dataclass
class Item:
    """One list item: its prose (inline code left out) and its inline code."""

    prose: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.prose)).strip()


class _ExercisesParser(HTMLParser):
    """Collects the exercises' and the answers' top-level list items of one page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.in_section = False  # inside <section id="exercises">
        self.section_depth = 0
        self.in_details = False
        self.after_answers = False  # the bold "Answers" line has been seen
        self.in_strong = False
        self.strong_text = ""
        self.lists: list[str] = []  # stack of open ol/ul: "exercises", "answers", "other"
        self.code_depth = 0
        self.exercises: list[Item] = []
        self.answers: list[Item] = []
        self.current: Item | None = None
        self.li_depth = 0  # nesting of <li> below the collected list

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "section":
            if self.in_section:
                self.section_depth += 1
            elif attributes.get("id") == "exercises":
                self.in_section, self.section_depth = True, 0
            return
        if not self.in_section:
            return
        if tag == "details":
            self.in_details = True
        elif tag == "strong":
            self.in_strong, self.strong_text = True, ""
        elif tag == "code":
            self.code_depth += 1
        elif tag in {"ol", "ul"}:
            if not self.lists and not self.in_details and not self.exercises:
                self.lists.append("exercises")
            elif not self.lists and self.in_details and self.after_answers and not self.answers:
                self.lists.append("answers")
            else:
                self.lists.append("other")
        elif tag == "li" and len(self.lists) == 1 and self.lists[0] != "other":
            self.current = Item()
            (self.exercises if self.lists[0] == "exercises" else self.answers).append(self.current)

    def handle_endtag(self, tag: str) -> None:
        if not self.in_section:
            return
        if tag == "section":
            if self.section_depth == 0:
                self.in_section = False
            else:
                self.section_depth -= 1
        elif tag == "details":
            self.in_details = False
        elif tag == "strong":
            self.in_strong = False
            if self.in_details and self.strong_text.strip().rstrip(".:：。") in {"Answers", "答案"}:
                self.after_answers = True
        elif tag == "code":
            self.code_depth -= 1
        elif tag in {"ol", "ul"} and self.lists:
            self.lists.pop()
            if not self.lists:
                self.current = None

    def handle_data(self, data: str) -> None:
        if self.in_strong:
            self.strong_text += data
        if self.current is None:
            return
        (self.current.code if self.code_depth else self.current.prose).append(data)


def exercises_and_answers(page: str, language: str) -> tuple[list[Item], list[Item]]:
    parser = _ExercisesParser()
    parser.feed(html(page, language))
    return parser.exercises, parser.answers


def claimed_numbers(text: str) -> list[str]:
    """The numbers a sentence states, without those that name a page or an exercise."""
    found = []
    for m in NUMBER.finditer(text):
        before, after = text[: m.start()], text[m.end() :]
        if NOT_A_CLAIM.search(before) or re.match(r"\s*页", after):
            continue
        found.append(m.group())
    return found


def printed(number: str, output: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", output) is not None


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", PAGES)
def test_one_answer_in_prose_per_exercise(page: str, language: str) -> None:
    exercises, answers = exercises_and_answers(page, language)
    assert exercises, f"page {page} ({language}) has no enumerated Exercises list"
    assert answers, (
        f"page {page} ({language}): the Solutions dropdown has no '**Answers**' list "
        "(one prose answer per exercise, after the code)"
    )
    assert len(answers) == len(exercises), (
        f"page {page} ({language}): {len(exercises)} exercises but {len(answers)} answers"
    )
    for i, answer in enumerate(answers, 1):
        assert len(answer.text) > 20, f"page {page} ({language}), answer {i} says nothing"


@pytest.mark.parametrize("page", PAGES)
def test_answers_state_the_same_numbers_in_both_languages(page: str) -> None:
    _, english = exercises_and_answers(page, "en")
    _, chinese = exercises_and_answers(page, "zh_CN")
    assert len(english) == len(chinese)
    for i, (en, zh) in enumerate(zip(english, chinese, strict=True), 1):
        assert sorted(set(claimed_numbers(en.text))) == sorted(set(claimed_numbers(zh.text))), (
            f"page {page}, answer {i}: the English and Chinese answers state different numbers"
        )


@pytest.mark.parametrize("page", [p for p in PAGES if p not in RUN_ELSEWHERE])
def test_every_number_an_answer_states_is_printed_by_its_solution(page: str) -> None:
    run = run_page(page)
    _, answers = exercises_and_answers(page, "en")
    missing = [
        f"answer {i}: {number}"
        for i, answer in enumerate(answers, 1)
        for number in claimed_numbers(answer.text)
        if not printed(number, run.solutions)
    ]
    assert not missing, (
        f"page {page}: numbers stated by the answers but not printed by the solutions: "
        f"{missing}\n--- the solutions printed:\n{run.solutions}"
    )


def test_claimed_numbers_skip_page_and_exercise_references() -> None:
    text = "See page 17 and exercise 2: 0.213 of 64, ResNet-18, 3x3, layer4, -0.5, 第 17 页，2e-7"
    assert claimed_numbers(text) == ["0.213", "64", "-0.5", "2e-7"]
    assert printed("0.21", "acc 0.213") is False
    assert printed("0.213", "acc 0.213\n") is True
