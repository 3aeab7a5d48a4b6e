"""Splitting exercises into parts (issue 16) on generated exercises whose truth is the generator's:
label styles "(a)" and "a)", labels at line starts or inline, answers opening with shared prose,
parts named in the stem ("Pour b), c), d), ..."), and question / answer labels that do not line
up (the split is refused and the item tagged, never shifted)."""

from __future__ import annotations

import json
import random

import pytest

from rlclimb.stages.curate.parts import SplitParts, split_exercise, split_parts

STEMS = ["Solve the equation below.", "Soit x' = e^{-x}.", "Describe each of the following sets.",
         "Consider the recurrence a_n = 2a_{n-1} - a_{n-2}."]
ASKS = ["Find the critical points.", "Classify them.", "Compute lim x(t) for x(0) = 1.", "What is a_9?",
        "Find |P(A)|.", "Sketch the phase diagram.", "Is the list a basis for R^3?", "Compute 3 + 4."]
VALUES = ["0, 1, 2", "x = 3", "∞", "a_n = 1 + n", "512", "no solutions", "yes", "7"]
LEADS = ["The general solution is a_n = a + bn.", "For all of these, plug in every integer.", "Stars and bars."]


def _exercise(rng: random.Random):
    """(question, answer, truth [(letter, part question, part answer)], lead)."""
    n = rng.randint(2, 6)
    style = rng.choice(["({})", "{})"])
    sep_q = rng.choice(["\n", " "])
    sep_a = rng.choice(["\n", " "])
    letters = "abcdefgh"[:n]
    asks = rng.sample(ASKS, n)
    stem = rng.choice(STEMS)
    question = stem + "".join(f"{sep_q}{style.format(k)} {a}" for k, a in zip(letters, asks, strict=True))
    answered = sorted(rng.sample(letters, rng.randint(1, n)))
    values = {k: rng.choice(VALUES) for k in answered}
    lead = rng.choice(LEADS) if rng.random() < 0.4 and len(answered) > 1 else ""
    answer = (lead + "\n" if lead else "") + sep_a.join(f"{style.format(k)} {values[k]}." for k in answered)
    truth = [(k, f"{stem}\n{style.format(k)} {asks[letters.index(k)]}", values[k]) for k in answered]
    return question, answer, truth, lead


@pytest.mark.parametrize("seed", range(200))
def test_generated_exercises_split_as_drawn(seed):
    question, answer, truth, lead = _exercise(random.Random(seed))
    split = split_exercise(question, answer)
    assert split.parts == truth, (question, answer)
    assert split.lead == lead and not split.refused


@pytest.mark.parametrize("question,answer,expected", [
    # a stem naming later parts ("Pour b), c), d)") is no label: the parts are the line-start ones
    ("Soit x' = (x-a)(x-b).\na) Calculez les points critiques.\nPour b), c), d), calculez lim x(t).\n"
     "b) x(0) < α,\nc) α < x(0) < β,\nd) β < x(0).", "a) α, β b) α, c) α,\nd) ∞",
     ["a", "b", "c", "d"]),
    ("Let S = {1, 2}.\n(a) Find |S|.\n(b) Using parts (a), (b) and (c), find T.\n(c) Find U.", "(a) 2 (b) T (c) U",
     ["a", "b", "c"]),
    # the answer names parts in its prose: not part by part
    ("Let f.\n(a) Show A.\n(b) Show B.\n(c) Show C.", "For (a) and (b) use induction. (c) Show that f.", []),
    # prose then a label in mid-sentence: no split
    ("Let f.\n(a) Show A.\n(b) Show B.", "It follows as in (a) (b) holds.", []),
    # one label after prose is too weak a cue
    ("Let f.\n(a) Show A.\n(b) Show B.", "Any basis has n vectors.\n(b) yes", []),
    ("What is f(a)?", "(a) is 2", []),
])
def test_labels_that_name_parts_are_no_labels(question, answer, expected):
    assert [k for k, _, _ in split_parts(question, answer)] == expected


@pytest.mark.parametrize("question,answer", [
    ("Show.\n(a) x\n(b) y", "(a) 1 (c) 2"),  # the answer has a part the question lacks
    ("Find.\n(a) x\n(b) y\n(d) z", "(a) 1 (b) 2"),  # the question jumps a letter: a label was lost
    ("Soit x.\na) Trouvez x. Calculez lim x(t).\nb)", "a) 1 b) ∞"),  # a label apart from its text
    ("Find.\n(a) x\n(b) y", "(a) (b) 2"),  # an empty answer part
])
def test_labels_out_of_step_are_refused_and_tagged(question, answer):
    split = split_exercise(question, answer)
    assert split.parts == [] and split.refused
    record = {"id": "qa-1", "question": question, "answer": answer, "tags": [], "meta": "{}", "source": {"number": "3"}}
    out = SplitParts().process(record, None)
    assert out == [{**record, "tags": ["parts_unaligned"]}]


def test_split_children_carry_the_shared_lead():
    record = {"id": "qa-1", "question": "Solve.\n(a) x + 1 = 2\n(b) 2x = 8", "answer": "Subtract, then divide.\n(a) 1\n(b) 4",
              "tags": [], "meta": "{}", "source": {"number": "3"}}
    out = SplitParts().process(record, None)
    assert [(r["source"]["number"], r["answer"]) for r in out] == [("3(a)", "1"), ("3(b)", "4")]
    assert all(json.loads(r["meta"])["answer_lead"] == "Subtract, then divide." for r in out)


def test_an_instruction_naming_later_parts_goes_to_their_stems():
    question = ("Soit x' = (x-a)(x-b).\na) Calculez les points critiques. Pour b), c), calculez lim x(t).\n"
                "b) x(0) < a,\nc) a < x(0).")
    parts = split_parts(question, "a) a, b b) a, c) ∞")
    assert parts == [("a", "Soit x' = (x-a)(x-b).\na) Calculez les points critiques.", "a, b"),
                     ("b", "Soit x' = (x-a)(x-b).\nPour b), c), calculez lim x(t).\nb) x(0) < a", "a"),
                     ("c", "Soit x' = (x-a)(x-b).\nPour b), c), calculez lim x(t).\nc) a < x(0).", "∞")]


def test_parts_with_no_stem_stand_alone():
    parts = split_parts("(a) Define f: N -> N one-to-one, not onto.\n(b) Define g: N -> N onto, not one-to-one.",
                        "(a) f(n) = n + 1.\n(b) g(n) = n // 2.")
    assert parts == [("a", "(a) Define f: N -> N one-to-one, not onto.", "f(n) = n + 1"),
                     ("b", "(b) Define g: N -> N onto, not one-to-one.", "g(n) = n // 2")]


def test_letters_past_h_only_continue_a_run():
    letters = "abcdefghijkl"
    question = "Which are equivalent?\n" + "\n".join(f"({k}) Statement {k}." for k in letters)
    answer = "\n".join(f"({k}) verdict {k}." for k in letters)
    assert [k for k, _, _ in split_parts(question, answer)] == list(letters)
    # "(x)" of "f (x)" is no label after (b): the answer still splits into a and b
    parts = split_parts("Let f be given.\n(a) Find f (1).\n(b) Find f (x).", "(a) f (x) = 1 at 1.\n(b) f (x) = x")
    assert parts == [("a", "Let f be given.\n(a) Find f (1).", "f (x) = 1 at 1"), ("b", "Let f be given.\n(b) Find f (x).", "f (x) = x")]


def test_a_letter_in_notation_is_no_lost_label():
    # "N (h)": the nullspace of h, not a part (h) after (a) -- no jump, the exercise splits
    question = "For h: P_3 -> P_3 find these.\n(a) N (h) (b) h^{-1}(2 - x^3) (c) h^{-1}(1 + x^2)"
    answer = "(a) The nullspace is {a_3 x^3}.\n(b) The set {2 - 2x}.\n(c) The empty set."
    assert [k for k, _, _ in split_parts(question, answer)] == ["a", "b", "c"]
    assert split_exercise("Find.\n(a) x\n(b) y\n(d) z", "(a) 1 (b) 2").refused  # a real jump, at a line start


def test_a_function_argument_followed_by_a_comma_is_no_instruction():
    # "V (t), given that ...": "(t)" then "," reads as a list of mentions; it names no part of this
    # exercise, so part (b) keeps its second sentence (ostp p194 lost it)
    question = ("A loop of side a is a distance b from a wire.\n(a) Find the flux through the loop.\n"
                "(b) The loop moves at speed v. Give the voltage as a function of time, V (t), given that b(t) = b_0 + vt.\n"
                "(c) What force F(t) keeps it moving?")
    parts = split_parts(question, "(a) Φ = x\n(b) ∆V (t) = y\n(c) F(t) = z")
    assert parts[1] == ("b", "A loop of side a is a distance b from a wire.\n(b) The loop moves at speed v. "
                             "Give the voltage as a function of time, V (t), given that b(t) = b_0 + vt.", "∆V (t) = y")


def test_a_part_that_leans_on_an_earlier_parts_given_gets_the_earlier_parts_back():
    from rlclimb.stages.curate.context import PartContext
    from rlclimb.stages.curate.usability import UsabilityStage

    question = ("A kettle heats 1.5 kg of water in 4 minutes.\n(a) Its element runs from a 230 V supply. What power does it draw?\n"
                "(b) What is the resistance of the element?\n(c) A 2 Ω lead is added in series. What current flows?\n"
                "(d) Plot the temperature from 0 s to 240 s.\n(e) What current flows at the end?")
    answer = "(a) 2.3 kW (b) 23 Ω (c) 9.2 A (e) 10 A"
    split = split_exercise(question, answer)
    # (b) needs (a)'s 230 V; (c) states its own given; (e) needs them too; a time range is no given
    assert {k: c["cue"] for k, c in split.context.items()} == {"b": "only an earlier part gives 230 V",
                                                                "e": "only an earlier part gives 230 V, 2 Ω"}
    out = SplitParts().process({"id": "x", "question": question, "answer": answer,
                                "source": {"number": "7"}, "meta": "{}", "tags": []}, None)
    part_b = next(r for r in out if r["source"]["number"] == "7(b)")
    # the stages that judge one ask see the part's own text; part_context adds the earlier parts last
    assert part_b["question"] == "A kettle heats 1.5 kg of water in 4 minutes.\n(b) What is the resistance of the element?"
    assert json.loads(part_b["meta"])["context"]["earlier_parts"].startswith("(a) Its element runs from a 230 V supply.")
    judged = UsabilityStage().embedded({**part_b, "answer_type": "numeric"}, None)
    assert judged["question"] == part_b["question"]  # kept: the context will travel with it
    final = PartContext().process(part_b, None)
    assert final["question"] == ("A kettle heats 1.5 kg of water in 4 minutes.\n"
                                 "(a) Its element runs from a 230 V supply. What power does it draw?\n"
                                 "(b) What is the resistance of the element?\nAnswer part (b) only.")
    assert final["id"] != part_b["id"] and final["answer"] == "23 Ω"
    part_c = next(r for r in out if r["source"]["number"] == "7(c)")
    assert "context" not in json.loads(part_c["meta"]) and PartContext().process(part_c, None) is part_c


@pytest.mark.parametrize(("parts", "cue"), [
    # references back
    (["Set up a system of equations for the traffic at each node.", "Solve that system."], "Solve that system"),
    (["Rotate the vector about the x-axis.", "Repeat the prior item, only rotate about the y-axis."], "Repeat"),
    (["How much current does the machine draw?", "If μ_s is less than this, what is the speed?"], "than this,"),
    (["Find the flux through the other five faces.", "Would this change if it was not a cube?"], "Would this change"),
    (["Prove that a point through the origin is a subspace.", "What if it doesn't contain the origin?"], "What if"),
    (["Find the impulse.", "What is the average force of the impulse calculated in part (a)?"], "names an earlier part"),
    (["How many ways can the 20 golfers be split into a first, second, ... fifth foursome?",
      "You want each foursome to include one of the five CEOs. How many ways can you do this?"], "do this"),
    (["Find the speed.", "In the frame of the muon, how far did it travel before decaying?"], None),
    # a symbol only an earlier part defines
    (["Find S = Rep_{D,D}(t) where D = ⟨1, 1 + x⟩.", "Find the matrix P such that T = PSP^{-1}."], "uses S from an earlier part"),
    # self-contained later parts: "that" opening a clause, a relative "that", the part's own object, a generic symbol
    (["Show that (GH)^T = H^T G^T.", "Show that an incidence matrix is symmetric."], None),
    (["A list of vectors in R^3 that spans R^3.", "A list of vectors in R^3 that is linearly dependent."], None),
    (["The subset { a b | a + b = 0 }", "This subset { (x, y) | x = 2y } of R^2"], None),
    (["Show that (GH)^T = H^T G^T.", "Show that the matrix H H^T is symmetric."], None),
])
def test_which_later_parts_lean_on_earlier_ones(parts, cue):
    from rlclimb.stages.curate.parts import leans_on_earlier

    got = leans_on_earlier("Consider the following.", {"a": parts[0], "b": parts[1]}, ["a", "b"], "b")
    assert got == cue if cue is None else got is not None and got.startswith(cue)


def test_part_context_speaks_the_texts_language_and_drops_a_part_whose_label_is_gone():
    from rlclimb.pipelines.stage import Drop
    from rlclimb.stages.curate.context import PartContext, with_context

    context = {"cue": "names an earlier part", "label": "b)", "earlier_parts": "a) Trouver la solution x(t)."}
    assert with_context("Soit l'équation x' = x.\nb) Calculer la limite de la solution de a) pour t grand.", context, "b") == (
        "Soit l'équation x' = x.\na) Trouver la solution x(t).\nb) Calculer la limite de la solution de a) pour t grand.\n"
        "Répondre seulement à la partie (b).")
    rewritten = {"id": "x", "question": "What is the limit of the solution for large t?", "answer": "0",
                 "meta": json.dumps({"part": "b", "context": context})}
    dropped = PartContext().process(rewritten, None)
    assert isinstance(dropped, Drop) and dropped.reason == "needs_context"
