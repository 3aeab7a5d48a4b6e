"""The final value of a worked solution (stages/curate/worked.py) and how `verifiable` uses it.

Items are shaped like real textbook keys (combinatorics, linear algebra): the working first, the
result in the last sentence."""

from __future__ import annotations

import pytest

from rlclimb.environments.answer_check import boolean_value

from rlclimb.pipelines.stage import Drop, StageContext
from rlclimb.stages.curate.verifiable import VerifiableStage
from rlclimb.stages.curate.worked import worked_final

CTX = StageContext()
LOCK_Q = ("A combination lock consists of a dial with 40 numbers on it. To open the lock, you turn the dial to the right "
          "until you reach a first number, then to the left until you get to second number, then to the right again to the "
          "third number. The numbers are distinct. How many different combinations are possible?")
LOCK_A = ("Despite its name, we are not looking for a combination here. The order in which the three numbers appears "
          "matters. There are P(40, 3) = 40 · 39 · 38 different possibilities for the “combination”.")
DET_Q = ("Calculate the determinant of the matrix A = \\begin{pmatrix} a & a \\\\ a & b \\end{pmatrix}. (The easiest method "
         "is to start with a row operation.)")
DET_A = ("We subtract the first row from the second row to get a new matrix B = \\begin{pmatrix} a & a \\\\ 0 & b−a "
         "\\end{pmatrix}. As we have not swapped any rows, det(A) = det(B). As B is upper triangular, the determinant is "
         "just the product of the diagonal entries, giving det(A) = a(b −a).")


@pytest.mark.parametrize("question,answer,final", [
    (LOCK_Q, LOCK_A, "40 · 39 · 38"),
    (DET_Q, DET_A, "a(b −a)"),
    ("A woman has 15 friends and selects 6 bride's maids, one of them maid of honor. How many ways can she do this?\n"
     "(b) What if she first selects her maid of honor, and then 5 other bride's maids?",
     "She has 15 choices for who will be her maid of honor. Then she needs to select 5 of the remaining 14 friends, "
     "which she can do in \\binom{14}{5} ways. Thus she has 15\\binom{14}{5} choices", "15\\binom{14}{5}"),
    ("What is the dimension of the vector space of functions f: S →R where the domain S is the empty set?",
     "A function is a set of ordered pairs (x, f(x)). So there is only one function with an empty domain, namely the "
     "empty set. A vector space with only one element is a trivial vector space and has dimension zero.", "0"),
    ("Find T = Rep_{B,B}(t) where B = ⟨x^2, x, 1⟩.",
     "Because t is described with the members of B, the representation is easy: Rep_B(t(x^2)) = \\begin{pmatrix} 0 \\\\ 1 "
     "\\end{pmatrix} gives this. Rep_{B,B}(t) \\begin{pmatrix} 0 & 1 \\\\ 1 & 0 \\end{pmatrix}",
     "\\begin{pmatrix} 0 & 1 \\\\ 1 & 0 \\end{pmatrix}"),
    ("How many multisets of size 5 can be made using the 10 digits?",
     "Use stars and bars: each star is one of the 5 elements. So there are 5 stars and 9 bars, giving us \\binom{14}{9}",
     "\\binom{14}{9}"),  # the later value, not the "5 stars"
    # a count of a "Find the number of ..." ask, an aside after the value, arithmetic before "="
    ("Find the number of different 5-digit numbers such that: (c) Digits cannot be repeated and must be written in "
     "increasing order.", "Once we pick 5 of the 7 digits, there is only one way to order them. Thus there are "
     "\\binom{7}{5} such numbers", "\\binom{7}{5}"),
    ("You lay out every possible row of 3 pennies and 3 nickels. How many coins will you need?",
     "There are \\binom{6}{3} = 20 rows. Each row requires 6 coins, so we will need 120 coins (60 of each)", "120"),
    ("If you have 7 ties and may wear up to all of them, how many choices do you have?",
     "For each tie you choose to wear it or not, minus the empty choice. Thus total you have 7 · 31 = 217", "217"),
    ("Find a closed formula for the sequence with recursive definition a_n = 2a_{n−1} − a_{n−2}, a_1 = 1, a_2 = 2.",
     "Write out the first terms: 1, 2, 3, 4. So we see that a_n = n^2 is the closed formula", "n^2"),
    ("Find the dimension of the subspace W of R^4 spanned by the vectors below.",
     "Row reduction leaves two nonzero rows, so the vectors span a plane. Hence the dimension of W is 2.", "2"),
    # the parse spaced a period after a matrix: still a sentence end
    ("(d) Give a general formula for a_n.",
     "We get u_n = \\begin{pmatrix} 10^6+10^{n+4} \\\\ 10^6+10^{n+3} \\end{pmatrix} . In particular, a_n is the bottom "
     "entry in u_n, which is a_n = 10^6 + 10^{n+3}", "10^6 + 10^{n+3}"),
    # the working answers a first ask ("Explain ..."), the last sentence the formula the last ask wants
    ("Consider the sequence 1, 3, 7, 13, 21,.... Explain how you know the closed formula for the sequence will be "
     "quadratic. Then guess the correct formula by comparing this sequence to the squares 1, 4, 9, 16,....",
     "The second differences are 2, 2, 2. Consider a_n −n^2. This gives 0, −1, −2, −3. That sequence has closed formula "
     "1 −n so we have a_n −n^2 = 1 −n or equivalently a_n = n^2 −n + 1.", "n^2 −n + 1"),
    # a projection, a Jordan form: a vector or matrix asked; a formula opens the last sentence lower-case
    ("Project the vectors into M along N.\n(a) \\begin{pmatrix} 3 \\\\ −2 \\end{pmatrix}, M = { x + y = 0 }",
     "The given vector is 1 · b_1 + 1 · b_2, and the answer comes from retaining the M part. proj_{M,N}(v) = "
     "\\begin{pmatrix} 1 \\\\ −1 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ −1 \\end{pmatrix}"),
    ("Find the Jordan form from the given data.\n(a) The matrix T is 2×2 with the single eigenvalue 3 and T − 3I has nullity one.",
     "The map t − 3 is nilpotent with one string. Consequently T is similar to this. J = N + 3I = "
     "\\begin{pmatrix} 3 & 0 \\\\ 1 & 3 \\end{pmatrix}", "\\begin{pmatrix} 3 & 0 \\\\ 1 & 3 \\end{pmatrix}"),
    # a fewest number: "only two boxes are needed"; an example in the working does not make a count one of many
    ("You don't want two consecutive letters in the same box. What is the fewest number of boxes you need?",
     "Draw a graph with the letters as vertices; for example, D would be adjacent to both C and E. By Brooks' theorem the "
     "chromatic number is at most 2. Thus only two boxes are needed.", "2"),
    # a percentage asked, one percentage concluded
    ("If 50% of students are awake at the start, what percentage will be awake at the end of the lecture?",
     "We have v_{10} = \\frac{1}{2}w_1 + \\frac{1}{2}(0.8)^{10}w_2. Since (0.8)^{10} ≈0.107374, we conclude that approximately "
     "55.37% of students are awake at the end of the lecture.", "55.37%"),
    # a physical quantity asked, stated of its object ("the tension in ... is zero")
    ("Box 4 stops accelerating when it hits 3.0 m/s. What is the tension in the rope between box 1 and 2 a moment later?",
     "The boxes no longer accelerate. If all of the boxes are moving with a constant speed, then the tension in all of "
     "the ropes is zero", "0"),
    # a count whose verb the book dropped ("Thus there \\binom{7}{2} anagrams"), a total after "all together:"
    ("How many arrangements of the letters of BANANA start with B?",
     "After the B we arrange the other five letters. Only the A's and N's remain. Thus there \\binom{5}{2} arrangements starting with B.",
     "\\binom{5}{2}"),
    ("How many 4-digit strings from {1, 2, 3} have more 1s than other digits?",
     "We need 3 or more 1s. 3 ones: \\binom{4}{3}2. 4 ones: 1. So all together: \\binom{4}{3}2 + 1", "\\binom{4}{3}2 + 1"),
    # a generating function asked, the last sentence gives it
    ("Use differencing to find the generating function for 1, 2, 4, 7, 11, ....",
     "Call the generating function A. Then A − xA = 1 + x + x^2 + · · · = \\frac{1}{1 −x} . Solving for A gives \\frac{1}{(1 −x)^2} .",
     "\\frac{1}{(1 −x)^2}"),
    # an approximation after the exact form: the exact form; a formula opening the sentence after a period
    ("Find the angle between the diagonal of the unit square and the x-axis.",
     "Take the x-axis. arccos(\\frac{(1)(1) + (0)(1)}{\\sqrt{1}\\sqrt{2}}) ≈0.79 radians",
     "arccos(\\frac{(1)(1) + (0)(1)}{\\sqrt{1}\\sqrt{2}})"),
    # a parenthesised last term is the formula's, not an aside
    ("Find the formula for the characteristic polynomial of a 2×2 matrix.",
     "Expand the determinant of T − xI. This gives det(T −xI) = (a −x)(d −x) −bc = x^2 + (−a −d) · x + (ad −bc)",
     "x^2 + (−a −d) · x + (ad −bc)"),
    # the ask names one symbol ("Find M ⊥."): the working's last equation for that symbol
    ("Find M ⊥.\n(a) M = { (x, y) | x − y = 0 }",
     "Here M is the line spanned by (1, 1). Solving u + v = 0 gives the perpendiculars. M ⊥= { (u, v) | u + v = 0 } = { k · (−1, 1) | k ∈R }",
     "{ k · (−1, 1) | k ∈R }"),
])
def test_the_value_a_worked_solution_states_last(question, answer, final):
    assert worked_final(question, answer) == final


@pytest.mark.parametrize("question,answer", [
    # the working picks one of many
    ("Use this to give a formula expressing b as a linear combination of a_1, ..., a_4.",
     "Here λ_3 is independent so it can take arbitrary values. We can choose λ_3 = 0, giving λ_1 = 6. This means that "
     "b = ∑ λ_ia_i = 6a_1 + 2a_2 −5a_4."),
    # "1/R = ...": the value of another expression, not of the one asked
    ("Find the formula for the equivalent resistance if the two resistors in parallel are r_1 ohms and r_2 ohms.",
     "Resistances in parallel add as reciprocals. So the equivalent resistance satisfies 1/R = 1/r_1 + 1/r_2."),
    # a name, not a value
    ("What is the minimal polynomial of the map π projecting onto the first two coordinates?",
     "We have π^2 = π, so m(x) = x^2 −x will do. No linear polynomial will do. Thus the minimal polynomial is m."),
    # more than one thing asked, or a proof
    ("Find the characteristic polynomial, eigenvalues and all the eigenvectors of A.",
     "We compute det(A − tI). Thus the characteristic polynomial is (1 − t)(2 − t)(3 − t)."),
    ("Show that there are n! permutations of a set containing n items.",
     "There are n ways to choose a_1 and n − 1 ways to choose a_2. Therefore, we can form σ in n(n −1) · · · 2 · 1 = n! ways."),
    # several assignments are no chain of one value
    ("Find the value of the constants in the solution.", "Substituting gives two equations. Thus the value is x = 3 and y = 4."),
    # no working: the answer is only the sentence
    (LOCK_Q, "There are 59280 different possibilities."),
    # "Then find ..." after a proof: still two asks
    ("Prove that a_n − a_{n−1} = 2n. Then find a closed formula for a_n.",
     "Subtracting the recurrences gives the difference. Summing, we get a_n = n(n+1)."),
    # a value cut off by an ellipsis
    ("How many subsets does a set of n elements have?", "Each element is in or out. So there are 2 · 2 · · · 2 subsets."),
    # "... and also a formula for u_2": two asks, one value
    ("Put v_1 = u_1 + u_2 and v_2 = u_1 − u_2. Give a formula for u_1 in terms of v_1 and v_2, and also a formula for u_2.",
     "Adding the equations gives 2u_1 = v_1 + v_2. So we get u_1 = v_1/2 + v_2/2"),
    # "Determine whether ... and, if so, find its sum": a verdict and a value
    ("Determine whether the series converges and, if so, find its sum.",
     "It is a geometric series with ratio 1/2. Adding up its terms we get that its sum is 2."),
])
def test_no_value_when_a_cue_is_missing(question, answer):
    assert worked_final(question, answer) is None


def test_verifiable_keeps_the_stated_value_and_the_working_as_solution():
    out = VerifiableStage().embedded({"question": LOCK_Q, "answer": LOCK_A, "question_type": "open", "tags": []}, CTX)
    assert not isinstance(out, Drop)
    assert out["answer"] == "40 · 39 · 38" and out["solution"] == LOCK_A and "final_from_working" in out["tags"]
    assert out["answer_type"] == "numeric"


def test_a_stem_read_as_a_proof_whose_part_asks_for_a_matrix_keeps_the_matrix():
    q = ("Consider the map taking a vector to its projection into the line y = x. These two each show that the map is "
         "linear.\n(a) Produce a matrix that describes the function’s action.")
    a = ("Fixing \\vec{s} = \\begin{pmatrix} 1 \\\\ 1 \\end{pmatrix} as the vector whose span is the line, the formula gives "
         "\\frac{x + y}{2} · \\begin{pmatrix} 1 \\\\ 1 \\end{pmatrix}, which is the effect of this matrix. "
         "\\begin{pmatrix} 1/2 & 1/2 \\\\ 1/2 & 1/2 \\end{pmatrix}")
    out = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "proof", "tags": []}, CTX)
    assert not isinstance(out, Drop) and out["question_type"] == "open"
    assert out["answer"] == "\\begin{pmatrix} 1/2 & 1/2 \\\\ 1/2 & 1/2 \\end{pmatrix}"
    proof = VerifiableStage().embedded({"question": "Prove that no group of order 96 is simple.", "question_type": "proof",
                                        "answer": "By the Third Sylow Theorem there are one or three Sylow 2-subgroups. "
                                                  "Thus H ∩ K is normal in both H and K since it has index 2.", "tags": []}, CTX)
    assert isinstance(proof, Drop) and proof.reason == "proof_without_conclusion"


@pytest.mark.parametrize("question,answer,final,judge", [
    ("(c) If S, T are subsets of a vector space, is [S ∩T] = [S] ∩[T]?",
     "Sometimes. Clearly [S ∩T] ⊆[S]∩[T] because any linear combination of vectors from S ∩T is a combination of vectors "
     "from S and also from T. Containment the other way does not always hold. For instance, in R^2, take S = {e_1, e_2}, T = {2e_1}.",
     "Sometimes", True),
    ("(b) If the set of w's is independent, must the set of v's also be independent?",
     "Not necessarily. For instance, the transformation of R^2 given by (x, y) ↦ (x + y, x + y) sends the independent standard "
     "basis to a dependent set, and so the converse fails in general for every map that is not one-to-one.",
     "Not necessarily", True),
    ("(b) If the boxes all have the same mass, would the tensions be the same in each rope?",
     "No, the tension in the rope between boxes 3 and 4 will always be the highest, as that rope has to pull all of the other "
     "masses along with it, while the first rope pulls one box only.", "No", False),
])
def test_a_verdict_to_a_conditional_yes_no_ask_is_the_answer(question, answer, final, judge):
    out = VerifiableStage().embedded({"question": question, "answer": answer, "question_type": "open", "tags": []}, CTX)
    assert not isinstance(out, Drop) and out["answer"] == final and out["solution"] == answer
    assert ("needs_judge" in out["tags"]) is judge


def test_a_statement_asked_with_is_it_true_keeps_the_statement_and_its_verdict_for_a_judge():
    q = ("Consider the statement: for all integers n, if n is even and n ≤7 then n is negative or n ∈{0, 2, 4, 6}.\n"
         "(d) State the converse of the statement. Is it true? Explain.")
    a = "For all integers n, if n is negative or n ∈{0, 2, 4, 6} then n is even and n ≤7. This is false. n = −3 is a counter-example"
    out = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "true_false", "tags": []}, CTX)
    assert not isinstance(out, Drop) and out["answer_type"] == "text" and {"statement_answer", "needs_judge"} <= set(out["tags"])
    # no statement before the verdict, or an argument instead of one: still no boolean answer
    for answer in ("This is false.", "Suppose n = −3. Then n is odd, hence the claim fails. This is false."):
        out = VerifiableStage().embedded({"question": q, "answer": answer, "question_type": "true_false", "tags": []}, CTX)
        assert isinstance(out, Drop) and out.reason == "no_boolean_answer"


@pytest.mark.parametrize("answer,value", [
    ("True by Lemma 4.8.", "True"),
    ("False for instance, multiplying an isomorphism by 2 gives another one.", "False"),
])
def test_a_true_false_verdict_then_its_reason_is_the_answer(answer, value):
    q = "True or false: between any n-dimensional space and R^n there is exactly one isomorphism."
    out = VerifiableStage().embedded({"question": q, "answer": answer, "question_type": "true_false", "tags": []}, CTX)
    assert not isinstance(out, Drop), out
    assert boolean_value(out["answer"]) is (value == "True")
    # a verdict word that opens a sentence about something else is none ("True love ...")
    out = VerifiableStage().embedded({"question": q, "answer": "Truly a hard one: the map is not unique.", "question_type": "true_false", "tags": []}, CTX)
    assert isinstance(out, Drop) and out.reason == "no_boolean_answer"


def test_a_formula_asked_with_derive_and_answered_with_the_bare_formula_is_kept():
    q = "A thin rod of mass M and length L turns about one end. Derive a formula for its moment of inertia about that end."
    out = VerifiableStage().embedded({"question": q, "answer": "\\frac{1}{3}ML^2", "question_type": "proof", "tags": []}, CTX)
    assert not isinstance(out, Drop) and out["question_type"] == "open" and out["answer_type"] == "expression"
    restated = VerifiableStage().embedded({"question": "Derive the formula for the period, T = 2π\\sqrt{L/g}, of a pendulum.",
                                           "answer": "T = 2π\\sqrt{L/g}", "question_type": "proof", "tags": []}, CTX)
    assert isinstance(restated, Drop) and restated.reason == "proof_without_conclusion"


def test_a_stated_verdict_to_is_the_statement_true_is_kept_for_a_judge():
    q = "Consider the statement: for all integers n, if n is odd then n^2 is odd.\n(a) Is the statement true? Explain why."
    a = ("The statement is true. If n = 2k + 1 then n^2 = 4k^2 + 4k + 1, which is one more than an even number, so it is odd, "
         "and this holds for every integer k whatsoever, positive or negative, so there is no counterexample at all.")
    out = VerifiableStage().embedded({"question": q, "answer": a, "question_type": "open", "tags": []}, CTX)
    assert not isinstance(out, Drop) and "needs_judge" in out["tags"]
