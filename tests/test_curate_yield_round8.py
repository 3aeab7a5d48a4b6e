"""Curation's yield (round 8): answers a rule cannot grade but that state their answer are kept for
a judge (`needs_judge`) instead of dropped; answers that state nothing, or one of many, still drop.
Items are written in the style of textbook keys (counting, linear algebra, ODE and physics books),
not copied from any one book."""

from __future__ import annotations

import json

import pytest

from rlclimb.pipelines.stage import Drop, StageContext
from rlclimb.stages.curate.usability import UsabilityStage, checkability
from rlclimb.stages.curate.verifiable import VerifiableStage, verdict_led
from rlclimb.stages.curate.worked import worked_final

CTX = StageContext()


def rec(question, answer, answer_type="text"):
    return {"question": question, "answer": answer, "answer_type": answer_type, "tags": [], "meta": json.dumps({})}


# ---- usability: prose that carries a value, for an ask with one closed answer ------------------------

@pytest.mark.parametrize("question,answer", [
    ("How many 4-letter words can be formed from the letters A to F if letters may repeat?",
     "6^4, since each of the four positions can hold any of the six letters"),
    ("A cylindrical tank is filled at 2 cubic metres per minute. At what rate is the water level rising when it is 3 m deep?",
     "At the rate of \\frac{2}{9π} metres per minute, whatever the depth of the water."),
    ("For which real numbers t is the matrix \\begin{pmatrix} t & 2 \\\\ 2 & t \\end{pmatrix} singular? Which values of t make it so?",
     "Setting its determinant t^2 − 4 to zero gives the roots t = 2 and t = −2 as the only values."),
    ("Peut-on résoudre y′ = 1/x avec y(0) = 1?", "Non car la fonction 1/x n’est pas définie au point x = 0 et donc aucune solution n’existe."),
])
def test_prose_with_a_value_for_a_closed_ask_is_kept_for_a_judge(question, answer):
    out = UsabilityStage().embedded(rec(question, answer), CTX)
    assert not isinstance(out, Drop), out
    assert {"maybe_not_checkable", "needs_judge"} <= set(out["tags"])


@pytest.mark.parametrize("question,answer", [
    # no value and no verdict: nothing to compare
    ("How many edges does the graph have?", "The graph has as many edges as half the sum of the degrees of its vertices, whatever its shape."),
    # one of many: a construction, not the answer
    ("Find a nonzero 2 × 2 matrix whose square is the zero matrix and say why it works.",
     "We could take A = \\begin{pmatrix} 0 & 1 \\\\ 0 & 0 \\end{pmatrix} or A = \\begin{pmatrix} 0 & 0 \\\\ 1 & 0 \\end{pmatrix}, both square to zero."),
    # an open ask ("Give two ...") with values in its prose: not a closed ask
    ("Give two sets that have the same number of elements but are not equal as sets of integers.",
     "Here are two of them with the same size: {1, 2} and {3, 4}, neither contains the other one."),
])
def test_prose_that_states_no_answer_still_drops(question, answer):
    out = UsabilityStage().embedded(rec(question, answer), CTX)
    assert isinstance(out, Drop) and out.reason == "not_checkable", out


def test_a_long_prose_answer_drops_even_with_a_value():
    words = " ".join(["because the reasoning goes on"] * 10)
    found = checkability(f"The count is 12 {words}.", "text", 8, "How many subsets are there?")
    assert found is not None and found.sure


# ---- verifiable: a long answer that opens with its verdict ------------------------------------------

YES_NO_Q = ("Is there a 2 × 2 matrix A, other than the identity, with A^2 = I? Can such a matrix be diagonal?")
YES_NO_A = ("Yes. Take A = \\begin{pmatrix} 1 & 0 \\\\ 0 & −1 \\end{pmatrix}; squaring it multiplies each diagonal entry by itself, "
            "which gives one in both places, and so A^2 is the identity while A itself is not. This example is also diagonal, "
            "so a diagonal one exists as well.")


def test_a_verdict_led_long_answer_is_kept_for_a_judge():
    out = VerifiableStage().embedded({"question": YES_NO_Q, "answer": YES_NO_A, "question_type": "open", "tags": []}, CTX)
    assert not isinstance(out, Drop), out
    assert {"needs_judge", "long_form_answer"} <= set(out["tags"]) and out["answer_type"] == "text"
    # usability does not drop it again as prose: verifiable decided a judge grades it
    assert not isinstance(UsabilityStage().embedded(out, CTX), Drop)


@pytest.mark.parametrize("question,answer,led", [
    ("Existe-t-il une solution pour tout x? Pourquoi ou pourquoi pas?", "Oui, car f est continue partout.", True),
    (YES_NO_Q, YES_NO_A, True),
    # a second ask that is not yes/no wants more than the verdict
    ("Is the graph planar? How many faces does it have?", "Yes. By Euler's formula it has 4 faces.", False),
    # no verdict first: an argument
    ("Is every subgroup of an abelian group normal?", "Let H be a subgroup and g an element; then gH = Hg.", False),
    # a hedge before the verdict; "Decide whether ..." is a yes/no ask (Hefferon)
    ("Is R^2 a subspace of R^3?", "Technically, no. Subspaces of R^3 are sets of three-tall vectors.", True),
    ("Decide whether each map is an isomorphism (if it is an isomorphism then prove it and if it isn’t then state a "
     "condition that it fails to satisfy).\n(a) f: M_{2×2} →R given by a matrix ↦ ad − bc",
     "No; this map is not one-to-one. The matrix of all zeroes is mapped to the same image as the matrix of all ones.", True),
    ("Decide whether each map is an isomorphism. Find its inverse.", "No; it is not onto.", False),
])
def test_verdict_led(question, answer, led):
    assert verdict_led(question, answer) is led


def test_a_long_answer_without_a_verdict_still_drops():
    q = "Is the set of invertible 2 × 2 matrices a subspace of the space of all 2 × 2 matrices?"
    a = ("Consider the zero matrix, which every subspace must contain; it has determinant zero and so it is not invertible, "
         "and also the sum of the identity and its negative is the zero matrix, which again fails to be invertible here.")
    out = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "open", "tags": []}, CTX)
    assert isinstance(out, Drop) and out.reason == "long_form_answer"


# ---- worked: "in total there are four ..." ----------------------------------------------------------

@pytest.mark.parametrize("last,final", [
    ("So in total there are four possible necklaces.", "4"),
    ("In all there are 12 different arrangements.", "12"),
])
def test_a_count_stated_after_in_total_there_are(last, final):
    q = "How many different necklaces can be made from three red and one blue bead?"
    a = ("We count orbits under rotation and reflection. The blue bead can sit anywhere, so fix it at the top; the red beads "
         "then fill the other places and every rotation maps one choice onto another. " + last)
    assert worked_final(q, a) == final


# ---- usability: two asks that are one, a conditional follow-up the answer covers ----------------------

@pytest.mark.parametrize("question,answer,answer_type", [
    ("Which of the following rings are integral domains? If the ring is an integral domain, is it also a field? (b) Z_7",
     "Z_7 is a field", "text"),
    ("Which of the following maps are linear? If the map is linear, what is its null space? (a) T(x, y) = (x + y, 0)",
     "is linear with null space the line y = −x", "text"),
    ("A crate slides 5 m across a floor at constant speed. (c) What is the total work done on the crate? Calculate the total work and explain.",
     "0 J", "numeric"),
    # the answer denies the follow-up's condition: the follow-up does not arise (Judson)
    ("Which of the following sets are rings? If the set is a ring, is it also a field?\n(f) R = {a + b\\sqrt[3]{3}: a, b ∈Q}",
     "R is not a ring", "text"),
    ("Which of the following maps are homomorphisms? If the map is a homomorphism, what is the kernel? (c) φ(A) = a + d",
     "is not a homomorphism", "text"),
])
def test_follow_up_asks_the_answer_covers_are_not_partial(question, answer, answer_type):
    out = UsabilityStage().embedded(rec(question, answer, answer_type), CTX)
    assert not isinstance(out, Drop), out


@pytest.mark.parametrize("question,answer", [
    # the follow-up names a thing the answer does not: the degree is not given
    ("Find a basis for the extension Q(√5) over Q. What is the degree of the extension?", "{1, √5}"),
    # a conditional follow-up left unanswered
    ("Which of the following maps are homomorphisms? If the map is a homomorphism, what is the kernel? (c) φ(n) = 3n",
     "φ is a homomorphism"),
])
def test_an_unanswered_second_ask_is_still_partial(question, answer):
    out = UsabilityStage().embedded(rec(question, answer), CTX)
    assert isinstance(out, Drop) and out.reason == "partial_answer", out


# ---- usability: a drawing beside asks for values --------------------------------------------------------

def test_a_drawing_with_value_asks_answered_by_values_is_kept_for_a_judge():
    q = ("A stone falls so that its height is h = 80 − 5t^2 metres after t seconds. Find its velocity at t = 1 and t = 3. "
         "Sketch the graph of h against t.")
    out = UsabilityStage().embedded(rec(q, "v = −10 m/s and v = −30 m/s respectively.", "text"), CTX)
    assert not isinstance(out, Drop), out
    assert {"maybe_not_checkable", "needs_judge"} <= set(out["tags"])


@pytest.mark.parametrize("question,answer", [
    ("Sketch the direction field of y′ = y − x and the solution through the origin.", "y = x + 1 − e^x"),  # a drawing only
    # the stem's "(a) Find" belongs to another part; this part only draws
    ("A spring has force F = 3x + x^2. (a) Find the work done stretching it 2 m.\n(b) Plot F against x for 0 ≤ x ≤ 2.", "F(2) = 10 N"),
])
def test_a_drawing_task_alone_still_drops(question, answer):
    out = UsabilityStage().embedded(rec(question, answer, "text"), CTX)
    assert isinstance(out, Drop) and out.reason == "not_checkable", out


# ---- verifiable: an ask between two alternatives, answered by naming one -------------------------------

ALT_Q = ("A ball is thrown upward with air resistance.\n(b) Compared with part a), is the time to rise longer or shorter than "
         "the time to fall back down? Explain your answer.")
ALT_A = ("On the way up both gravity and drag point down, so the ball decelerates faster than it accelerates on the way down, where "
         "drag opposes gravity; it also comes back with less speed than it left with, so the time to rise is shorter than the time to fall.")


def test_a_long_answer_naming_one_of_two_asked_alternatives_is_kept_for_a_judge():
    out = VerifiableStage().embedded({"question": ALT_Q, "answer": ALT_A, "question_type": "open", "tags": []}, CTX)
    assert not isinstance(out, Drop), out
    assert {"needs_judge", "long_form_answer"} <= set(out["tags"])
    assert not isinstance(UsabilityStage().embedded(out, CTX), Drop)  # "part a)" is a label, not a bracket left open


def test_naming_both_alternatives_is_no_verdict():
    a = ALT_A.replace("so the time to rise is shorter than the time to fall", "so whether it is longer or shorter depends on the drag")
    out = VerifiableStage().embedded({"question": ALT_Q, "answer": a, "question_type": "open", "tags": []}, CTX)
    assert isinstance(out, Drop) and out.reason == "long_form_answer"


def test_a_short_prose_answer_tagged_before_is_not_sent_to_a_judge():
    # five to eight words with a value: tagged maybe_not_checkable as before, still trained on (no needs_judge)
    out = UsabilityStage().embedded(rec("How many faces does a cube have?", "A cube has exactly 6 square faces here."), CTX)
    assert not isinstance(out, Drop), out
    assert "maybe_not_checkable" in out["tags"] and "needs_judge" not in out["tags"]


# ---- prove or disprove settled by the answer's opening; yes/no asks after a clause or per part --------------

@pytest.mark.parametrize("question,answer", [
    ("Prove or disprove that every group containing six elements is abelian.",  # Judson: the counterexample exists
     "There is a nonabelian group containing six elements."),
    ("Consider the statement: for all integers n, if n is even then 8n is even.\n(b) Is the converse true? Prove or disprove.",
     "The converse is false. That is, there is an integer n such that 8n is even but n is odd. For example, consider n = 3."),
])
def test_a_settled_prove_or_disprove_is_kept_for_a_judge(question, answer):
    from rlclimb.stages.curate.convert import ConvertStage

    out = VerifiableStage().embedded({"question": question, "answer": answer, "question_type": "proof", "tags": []}, CTX)
    assert not isinstance(out, Drop), out
    assert out["answer_type"] == "text" and {"needs_judge", "statement_answer"} <= set(out["tags"])
    out = ConvertStage().embedded(out, CTX)  # no claim to convert: the verdict stays
    assert not isinstance(out, Drop) and out["answer"] == answer


def test_a_proof_that_settles_nothing_still_drops():
    out = VerifiableStage().embedded({"question": "Prove or disprove that Z_6 is cyclic.", "answer": "Let g = 1; then ⟨g⟩ = Z_6.",
                                      "question_type": "proof", "tags": []}, CTX)
    assert isinstance(out, Drop) and out.reason == "proof_without_conclusion"


@pytest.mark.parametrize("question,answer", [
    ("Among a group of n people, is it possible for everyone to be friends with an odd number of people in the group? "
     "If so, what can you say about n?",
     "Yes, as long as n is even. If n were odd, then corresponding graph would have an odd number of odd degree vertices."),
    ("Which of these are members of the span [{ cos^2 x, sin^2 x }] in the vector space of real-valued functions of one "
     "real variable?\n(c) f(x) = sin x", "No; consider what happens on setting x to be π/2 and 3π/2"),
])
def test_a_verdict_to_a_yes_no_ask_in_other_forms_goes_to_a_judge(question, answer):
    out = UsabilityStage().embedded(rec(question, answer, "text"), CTX)
    assert not isinstance(out, Drop), out
    assert "needs_judge" in out["tags"]
