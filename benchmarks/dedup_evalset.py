"""Labeled evaluation sets for dedup and decontamination (used by tests and benchmark scripts).

Problems come from STEM templates, each written in three phrasings of the same problem, filled
with numbers from a seeded RNG. Around each base problem the builder adds, with labels:
  exact       the same text with case / whitespace / LaTeX spacing changed         duplicate
  light_edit  one or two small edits (a word, delimiters, \\dfrac, spacing)          duplicate
  paraphrase  another phrasing of the same problem, same numbers                  duplicate
  variant     the same phrasing with other numbers: another problem of the template  distinct
  other_ask   the same numbers and setting, a different question                  distinct
  unrelated   problems of other templates                                         distinct
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Template:
    name: str
    phrasings: tuple[str, str, str]
    numbers: Callable[[random.Random], dict]
    other_ask: str | None = None  # same numbers, another question


def _ints(**ranges: tuple[int, int]) -> Callable[[random.Random], dict]:
    return lambda rng: {k: rng.randint(lo, hi) for k, (lo, hi) in ranges.items()}


def _quadratic(rng: random.Random) -> dict:
    r1, r2 = rng.sample(range(1, 13), 2)
    return {"s": r1 + r2, "p": r1 * r2}


TEMPLATES: list[Template] = [
    Template("quadratic", (
        "Find all real solutions of $x^2 - {s}x + {p} = 0$.",
        "Solve the equation $x^{{2}} - {s}x + {p} = 0$ over the real numbers.",
        "What are the real roots of the quadratic $x^2-{s}x+{p}=0$?"), _quadratic,
        "What is the product of the roots of $x^2 - {s}x + {p} = 0$?"),
    Template("linear", (
        "Solve for $x$: ${a}x + {b} = {c}$.",
        "Find the value of $x$ that satisfies ${a}x+{b}={c}$.",
        "If ${a}x + {b} = {c}$, what is $x$?"), _ints(a=(2, 9), b=(1, 30), c=(31, 99)),
        "Solve for $x$: ${a}x - {b} = {c}$."),
    Template("train", (
        "A train travels {d} km in {t} hours at constant speed. What is its speed in km/h?",
        "What is the speed, in km/h, of a train that covers {d} km in {t} hours at a constant rate?",
        "Moving at a constant speed, a train goes {d} km in {t} hours. Find its speed in kilometres per hour."),
        _ints(d=(100, 900), t=(2, 9)),
        "A train travels {d} km in {t} hours at constant speed. How far does it go in one hour more?"),
    Template("rectangle", (
        "A rectangle has length {a} cm and width {b} cm. What is its area?",
        "Find the area of a rectangle whose sides measure {a} cm and {b} cm.",
        "What is the area, in square centimetres, of a {a} cm by {b} cm rectangle?"),
        _ints(a=(3, 40), b=(3, 40)),
        "A rectangle has length {a} cm and width {b} cm. What is its perimeter?"),
    Template("derivative", (
        "What is the derivative of $x^{n} + {a}x$ with respect to $x$?",
        "Differentiate $f(x) = x^{n} + {a}x$.",
        "Compute $\\frac{{d}}{{dx}}\\left(x^{n} + {a}x\\right)$."), _ints(n=(3, 9), a=(2, 20)),
        "What is the integral of $x^{n} + {a}x$ with respect to $x$?"),
    Template("integral", (
        "Evaluate $\\int_0^{b} {a}x\\,dx$.",
        "Compute the definite integral of ${a}x$ from $0$ to ${b}$.",
        "What is the value of $\\int_{{0}}^{{{b}}} {a} x \\, dx$?"), _ints(a=(2, 12), b=(2, 9))),
    Template("gcd", (
        "What is the greatest common divisor of {a} and {b}?",
        "Find $\\gcd({a}, {b})$.",
        "Compute the GCD of the numbers {a} and {b}."), _ints(a=(20, 400), b=(20, 400)),
        "What is the least common multiple of {a} and {b}?"),
    Template("arrangements", (
        "How many ways can {n} distinct books be arranged on a shelf?",
        "In how many different orders can {n} distinct books be placed on a shelf?",
        "Find the number of arrangements of {n} different books in a row on a shelf."),
        _ints(n=(4, 20)),
        "How many ways can {n} distinct books be split into two nonempty piles?"),
    Template("dice", (
        "Three fair dice are rolled. What is the probability that the sum is {s}?",
        "If you roll three fair six-sided dice, what is the probability of getting a total of {s}?",
        "Find the probability that the sum of three fair dice equals {s}."), _ints(s=(3, 18)),
        "Three fair dice are rolled. What is the probability that the sum is at least {s}?"),
    Template("kinetic", (
        "What is the kinetic energy of a {m} kg mass moving at {v} m/s?",
        "A {m} kg object moves with speed {v} m/s. Find its kinetic energy.",
        "Compute the kinetic energy, in joules, of a mass of {m} kg travelling at {v} m/s."),
        _ints(m=(2, 50), v=(2, 30)),
        "What is the momentum of a {m} kg mass moving at {v} m/s?"),
    Template("ohm", (
        "A {r} ohm resistor carries a current of {i} A. What voltage is across it?",
        "What is the potential difference across a {r} Ω resistor when {i} A flows through it?",
        "Find the voltage across a resistor of {r} ohms carrying {i} amperes."),
        _ints(r=(2, 100), i=(2, 15)),
        "A {r} ohm resistor carries a current of {i} A. How much power does it dissipate?"),
    Template("moles", (
        "How many moles are in {g} g of water (molar mass 18 g/mol)?",
        "Calculate the number of moles in a {g} g sample of water, given a molar mass of 18 g/mol.",
        "Given that water has a molar mass of 18 g/mol, how many moles of water are in {g} g?"),
        _ints(g=(20, 900)),
        "How many molecules are in {g} g of water (molar mass 18 g/mol)?"),
    Template("ph", (
        "What is the pH of a solution with $[H^+] = 10^{{-{k}}}$ M?",
        "Find the pH of a solution whose hydrogen ion concentration is $10^{{-{k}}}$ mol/L.",
        "A solution has $[\\mathrm{{H}}^+] = 10^{{-{k}}}\\ \\text{{M}}$. Determine its pH."), _ints(k=(1, 14)),
        "What is the pOH of a solution with $[H^+] = 10^{{-{k}}}$ M?"),
    Template("binary", (
        "What is {n} in binary?",
        "Write the decimal number {n} in base 2.",
        "Convert {n} from base 10 to binary."), _ints(n=(20, 500)),
        "What is {n} in hexadecimal?"),
    Template("interest", (
        "A principal of ${p} is invested at {r}% simple interest per year. How much interest is earned after {t} years?",
        "How much simple interest does ${p} earn in {t} years at an annual rate of {r}%?",
        "Find the simple interest on ${p} invested for {t} years at {r}% per year."),
        _ints(p=(200, 9000), r=(2, 12), t=(2, 10)),
        "A principal of ${p} is invested at {r}% interest compounded yearly. How much is it worth after {t} years?"),
    Template("triangle", (
        "A right triangle has legs of length {a} and {b}. What is the length of its hypotenuse?",
        "Find the hypotenuse of a right triangle whose legs measure {a} and {b}.",
        "The two legs of a right triangle are {a} and {b} units long. How long is the hypotenuse?"),
        _ints(a=(3, 30), b=(3, 30)),
        "A right triangle has legs of length {a} and {b}. What is its area?"),
    Template("series", (
        "What is the sum of the first {n} positive integers?",
        "Compute $1 + 2 + 3 + \\cdots + {n}$.",
        "Find the sum of all integers from 1 to {n}."), _ints(n=(10, 500)),
        "What is the sum of the first {n} positive odd integers?"),
    Template("matrix", (
        "What is the determinant of the matrix $\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {d} \\end{{pmatrix}}$?",
        "Compute $\\det\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {d} \\end{{pmatrix}}$.",
        "Find the determinant of the 2x2 matrix with rows ({a}, {b}) and ({c}, {d})."),
        _ints(a=(1, 9), b=(1, 9), c=(1, 9), d=(1, 9)),
        "What is the trace of the matrix $\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {d} \\end{{pmatrix}}$?"),
    Template("fall", (
        "An object is dropped from rest. Taking g = 10 m/s^2 and ignoring air resistance, how far does it fall in {t} s?",
        "Ignoring air resistance and using g = 10 m/s², find the distance a body dropped from rest falls in {t} seconds.",
        "A stone is released from rest. With g = 10 m/s^2 and no air resistance, what distance does it cover in {t} s?"),
        _ints(t=(2, 20)),
        "An object is dropped from rest. Taking g = 10 m/s^2 and ignoring air resistance, how fast is it moving after {t} s?"),
    Template("log", (
        "Compute $\\log_{b} {v}$.",
        "What is the logarithm base {b} of {v}?",
        "Evaluate $\\log_{{{b}}}({v})$."), lambda rng: (lambda b, k: {"b": b, "v": b**k})(rng.randint(2, 7), rng.randint(2, 5))),
    Template("percent", (
        "What is {p}% of {n}?",
        "Find {p} percent of {n}.",
        "Calculate {p}% of the number {n}."), _ints(p=(5, 95), n=(40, 2000)),
        "What percent of {n} is {p}?"),
    Template("sequence", (
        "The first term of an arithmetic sequence is {a} and the common difference is {d}. What is the {n}th term?",
        "An arithmetic progression starts at {a} and increases by {d} each step. Find its {n}th term.",
        "Find term number {n} of the arithmetic sequence with first term {a} and common difference {d}."),
        _ints(a=(1, 30), d=(2, 12), n=(10, 60)),
        "The first term of an arithmetic sequence is {a} and the common difference is {d}. What is the sum of the first {n} terms?"),
    Template("circle", (
        "What is the area of a circle with radius {r} cm? Give your answer in terms of $\\pi$.",
        "Find the area of a circle of radius {r} centimetres, in terms of $\\pi$.",
        "A circle has a radius of {r} cm. Express its area in terms of π."), _ints(r=(2, 40)),
        "What is the circumference of a circle with radius {r} cm? Give your answer in terms of $\\pi$."),
    Template("work", (
        "{a} workers can build a wall in {d} days. How many days would {b} workers take, working at the same rate?",
        "If {a} workers build a wall in {d} days, how long would it take {b} workers at the same rate?",
        "Working at equal rates, {a} workers finish a wall in {d} days. How many days do {b} workers need?"),
        _ints(a=(2, 12), d=(3, 30), b=(13, 24))),
]

UNRELATED = [
    "Name the process by which plants convert light energy into chemical energy.",
    "What is the time complexity of binary search on a sorted array?",
    "Explain why the sky appears blue during the day.",
    "Which organelle is known as the powerhouse of the cell?",
    "What is the chemical symbol for sodium?",
    "State Newton's third law of motion.",
    "What data structure uses first-in, first-out order?",
    "Why does ice float on liquid water?",
    "Prove that the square root of two is irrational.",
    "What is the difference between a compiler and an interpreter?",
    "Describe the structure of a DNA molecule.",
    "What is an eigenvector of a linear transformation?",
]


@dataclass
class Item:
    id: str
    text: str
    group: str  # items of one group are the same problem
    category: str  # exact | light_edit | paraphrase | variant | other_ask | unrelated | base
    base: str | None = None  # the base item this one was made from


@dataclass
class EvalSet:
    items: list[Item] = field(default_factory=list)
    pairs: list[tuple[str, str, str, bool]] = field(default_factory=list)  # (a, b, category, duplicate)

    def texts(self) -> list[str]:
        return [it.text for it in self.items]


_WORD_EDITS = [("What is", "What's"), ("Find", "Determine"), ("Compute", "Calculate"), ("How many", "How many different"),
               ("A ", "One "), ("the ", "the given "), ("? ", "? Explain. "), ("Evaluate", "Find")]


def light_edit(text: str, rng: random.Random) -> str:
    """One or two small edits of the kind copied problems pick up."""
    edits = [
        lambda t: next((t.replace(a, b, 1) for a, b in rng.sample(_WORD_EDITS, len(_WORD_EDITS)) if a in t), t + " "),
        lambda t: t.replace("$", "\\(", 1).replace("$", "\\)", 1) if t.count("$") >= 2 else t + " Show your work.",
        lambda t: t.replace("\\frac", "\\dfrac").replace(" = ", "="),
        lambda t: t.rstrip(".?") + (" ." if t.endswith(".") else " ?"),
        lambda t: "Problem: " + t,
    ]
    out = text
    for edit in rng.sample(edits, rng.choice((1, 2))):
        out = edit(out)
    return out if out != text else text + " Answer:"


def exact_copy(text: str, rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return text.upper()[:1] + text[1:].lower() if rng.random() < 0.3 else "  " + text.replace(" ", "  ")
    if choice == 1:
        return text.replace("\\,", "\\;") if "\\," in text else text.replace(" ", "\n", 1)
    return text.lower()


def _fresh_numbers(t: Template, seen: set[tuple], rng: random.Random) -> dict:
    """Numbers this template has not used yet (no two items of a template share their numbers)."""
    for _ in range(10_000):
        nums = t.numbers(rng)
        if (key := tuple(sorted(nums.items()))) not in seen:
            seen.add(key)
            return nums
    raise ValueError(f"template {t.name}: too few distinct numbers for the items asked for")


def build(seed: int = 0, per_template: int = 6, templates: list[Template] | None = None) -> EvalSet:
    """Base problems with their labeled neighbours (see module doc), shuffled."""
    rng = random.Random(seed)
    out = EvalSet()
    for t in templates or TEMPLATES:
        seen: set[tuple] = set()
        for k in range(per_template):
            nums = _fresh_numbers(t, seen, rng)
            group = f"{t.name}-{k}"
            base = Item(f"{group}-base", t.phrasings[0].format(**nums), group, "base")
            items = [base,
                     Item(f"{group}-exact", exact_copy(base.text, rng), group, "exact", base.id),
                     Item(f"{group}-edit", light_edit(base.text, rng), group, "light_edit", base.id)]
            items += [Item(f"{group}-para{j}", t.phrasings[j].format(**nums), group, "paraphrase", base.id) for j in (1, 2)]
            other = _fresh_numbers(t, seen, rng)
            items.append(Item(f"{group}-variant", t.phrasings[0].format(**other), f"{group}-v", "variant", base.id))
            if t.other_ask:
                items.append(Item(f"{group}-ask", t.other_ask.format(**nums), f"{group}-a", "other_ask", base.id))
            out.items += items
            out.pairs += [(base.id, it.id, it.category, it.group == group) for it in items[1:]]
    for i, text in enumerate(UNRELATED):
        out.items.append(Item(f"unrelated-{i}", text, f"unrelated-{i}", "unrelated"))
    bases = [it for it in out.items if it.category == "base"]
    for _ in range(len(bases)):  # unrelated pairs: bases of different templates
        a, b = rng.sample(bases, 2)
        if a.group.rsplit("-", 1)[0] != b.group.rsplit("-", 1)[0]:
            out.pairs.append((a.id, b.id, "unrelated", False))
    rng.shuffle(out.items)
    return out


@dataclass
class DecontamSet:
    benchmark: list[Item]
    inputs: list[Item]  # category says whether it is a leak (exact/light_edit/paraphrase) or not

    LEAKS = ("exact", "light_edit", "paraphrase")


def build_decontam(seed: int = 0, per_template: int = 6, templates: list[Template] | None = None) -> DecontamSet:
    """Benchmark = the base problems; inputs = their neighbours plus unrelated items."""
    ev = build(seed, per_template, templates)
    bench = [it for it in ev.items if it.category == "base"]
    inputs = [it for it in ev.items if it.category != "base"]
    return DecontamSet(bench, inputs)


# ---- scoring -------------------------------------------------------------------------------------


def stage_clusters(stage, items: list[Item], ctx=None) -> dict[str, str]:
    """Run a dedup stage over the items; map every item id to its cluster's kept id."""
    from rlclimb.pipelines.stage import StageContext

    records = [{"id": it.id, "question": it.text, "answer": "", "meta": "{}"} for it in items]
    stage.setup(ctx or StageContext())
    rep = {}
    for out in stage.run(records, ctx or StageContext()):
        if isinstance(out, tuple):
            rec, drop = out
            rep[rec["id"]] = re.search(r"(?:duplicate of|as) (\S+)", drop.detail).group(1)
        else:
            rep[out["id"]] = out["id"]
    return rep


def score_pairs(ev: EvalSet, rep: dict[str, str]) -> dict:
    """Pairwise precision / recall of 'same cluster' against the labels, and per category the
    share of pairs put in one cluster (duplicates: recall; distinct: false-positive rate)."""
    by: dict[str, list[bool]] = {}
    tp = fp = fn = 0
    for a, b, category, dup in ev.pairs:
        same = rep[a] == rep[b]
        by.setdefault(category, []).append(same)
        tp += same and dup
        fp += same and not dup
        fn += dup and not same
    return {
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "matched_share": {c: round(sum(v) / len(v), 3) for c, v in sorted(by.items())},
    }


def score_decontam(ds: DecontamSet, flagged: dict[str, str]) -> dict:
    """flagged: input id -> benchmark id it was matched to. A flag counts as correct when the
    input is a leak of exactly that benchmark item; a flagged non-leak is a false positive."""
    base_of = {it.id: it.base for it in ds.inputs}
    by: dict[str, list[bool]] = {}
    tp = fp = fn = 0
    for it in ds.inputs:
        leak = it.category in DecontamSet.LEAKS
        hit = it.id in flagged
        right = hit and leak and flagged[it.id] == base_of[it.id]
        by.setdefault(it.category, []).append(hit)
        tp += leak and right
        fp += hit and not right
        fn += leak and not right
    return {
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "flagged_share": {c: round(sum(v) / len(v), 3) for c, v in sorted(by.items())},
    }
