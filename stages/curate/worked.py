"""The final value of a worked solution: textbook keys print the working and state the result in
its last sentence ("Thus she has 15\\binom{14}{5} choices", "giving det(A) = a(b − a)(c − b)(d − c).",
"... and has dimension zero.", "... gives this. Rep_{B,B}(t) \\begin{pmatrix} ... \\end{pmatrix}").

A value is taken only when three cues agree: the stem asks for one value of a kind (a count, a
named quantity, a matrix, a formula, one symbol: "Find M ⊥."); the value closes the answer's last
sentence in a form that states a result (after "=", after "there are" / "has" for a count, after
the asked noun or symbol, a display after "this"); and the value reads as one clean formula (no prose, no ellipsis, nothing the stem
already prints). Anything else is None: the item stays long-form (dropped or tagged by the caller).
"""

from __future__ import annotations

import re

from rlclimb.environments.answer_check import infer_answer_type

_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                 "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
_FUNCTION_WORDS = r"(?:sin|cos|tan|cot|sec|csc|log|ln|exp|det|dim|rank|arcsin|arccos|arctan|diag|tr|mod|gcd|lcm)"

# one ask of a value: "How many ...?", "What is the dimension ...?", "Calculate the determinant ...",
# "Produce a matrix ...", "derive the formula for ..."
_COUNT_ASK = re.compile(r"\bhow\s+many\b|\bin\s+how\s+many\s+ways\b|\bcount\s+the\s+number\b"
                        r"|\b(?:fewest|least|smallest|minimum|largest|greatest|maximum)\s+number\s+of\b", re.I)
# "Thus only two boxes are needed."
_NEEDED = re.compile(r"\b(?:only\s+)?(?P<v>\d+|" + "|".join(_NUMBER_WORDS) + r")\s+(?:[a-z]+\s+)?[a-z]+\s+(?:are|is)\s+"
                     r"(?:needed|required|necessary|enough|sufficient)\s*$", re.I)
_PERCENT_ASK = re.compile(r"\bwhat\s+(?:percentage|percent|fraction|proportion|share)\b", re.I)
_NOUN_ASK = re.compile(r"\b(?:what\s+is|what\s+are|find|compute|calculate|determine|evaluate|give)\s+(?:the\s+|its\s+)?"
                       r"(?P<noun>dimension|determinant|rank|nullity|value|sum|product|number|order|degree|index|area|volume|length"
                       r"|probability|formula|limit|derivative|integral|trace|characteristic\s+polynomial|minimal\s+polynomial"
                       r"|inverse|matrix|coefficient|remainder|period|maximum|minimum|distance|angle|speed|velocity|mass|force"
                       r"|energy|height|temperature|pressure|resistance|current|voltage|charge|radius|mean|variance|tension|acceleration"
                       r"|frequency|wavelength|momentum|torque|power|work|displacement|generating\s+function)\b", re.I)
_MATRIX_ASK = re.compile(r"\b(?:find|produce|give|compute|calculate|write\s+down|determine)\s+(?:the\s+|a\s+)?(?:matrix|matrices"
                         r"|representation|inverse|jordan\s+form|canonical\s+form)\b|\b(?:to\s+)?what\s+vector\b"
                         r"|(?:^|[.:]\s+)project\s+(?:the|each|this|these)\b|\brepresent\s+(?:with\s+respect\s+to|each|the|this|these)\b|\b(?:find|compute|calculate)\s+[A-Z]\s*=\s*Rep_|\bRep_\{?[A-Za-z,]+\}?\(", re.I)
_FORMULA_ASK = re.compile(r"\b(?:derive|find|give|obtain|guess)\s+(?:the|a)\s+(?:closed\s+|general\s+|explicit\s+|correct\s+)?formula\b|\bexpand\b", re.I)
# "Find M ⊥.", "Compute A^{-1}.", "What is x_3?": the ask names one symbol, alone in its sentence
_SYMBOL_ASK = re.compile(r"(?:^|[.?:]\s+)(?:find|compute|calculate|determine|evaluate|what\s+is)\s+(?P<sym>[A-Za-z](?:\s*[⊥′'*]|_\{?\w+\}?|\^\{?[^\s{}]+\}?)?)\s*[.?](?:\s|$)", re.I)
# more than one thing asked: "Find the characteristic polynomial, eigenvalues and ...", "... and then find ..."
_MORE_ASKS = re.compile(r"\band\s+also\b|\b(?:and|then)\s*,?\s+(?:if\s+so\s*,\s*)?(?:also\s+)?(?:find|compute|calculate|determine|show|prove|explain|give|list|describe|decide)\b"
                        r"|,\s*(?:eigenvalues|eigenvectors|basis|kernel|inverse|rank)\b|\b(?:explain|justify|prove|show)\b", re.I)

_CONCLUDES = re.compile(r"\b(?:thus|so|hence|therefore|giving|gives|get|obtain|conclude|tells\s+us|we\s+have|which\s+is|this\s+is"
                        r"|the\s+answer\s+is|we\s+find|it\s+follows|in\s+all|all\s+together|altogether|total|in\s+other\s+words)\b", re.I)
_COUNT_SENTENCE = re.compile(r"\b(?:there(?:\s+(?:are|is|were|(?:must|will|would)\s+be)|(?=\s+(?:\d|\\binom)))|(?:she|he|we|you|they|one)\s+(?:will\s+|would\s+)?(?:has|have|had|need|get"
                             r"|can\s+do\s+(?:this|it)\s+in)|(?:can|could)\s+be\s+(?:done|chosen|formed|made|arranged)\s+in|in\s+all"
                             r"|in\s+total)\s+(?:a\s+total\s+of\s+)?(?P<v>.+?)"
                             r"\s+(?:different\s+|distinct\s+|possible\s+|such\s+)?(?:[a-z]+s|ways?)\b(?!\s*\()", re.I)


# the working picks one of many ("We can choose λ_3 = 0", "for example"): the value is not the answer
_NOT_UNIQUE = re.compile(r"\b(?:arbitrary|we\s+(?:can|could|may)\s+(?:choose|take|pick)|for\s+(?:example|instance)|one\s+(?:possible|such)"
                         r"|(?:is|are)\s+not\s+unique|any\s+(?:other\s+)?choice)\b", re.I)


_GIVES = re.compile(r"\b(?:giving(?:\s+us)?|gives(?:\s+us)?|we\s+(?:get|obtain)|the\s+answer\s+is|(?:all\s+together|altogether|in\s+total|in\s+all|total)\s*:)\s+(?P<v>[^=]+?)\s*$", re.I)


def _last_sentence(answer: str) -> str:
    text = re.sub(r"\s*(?:qed|∎|□)\s*$", "", answer.strip(), flags=re.I).rstrip(" .")
    # "a_n = \\frac{(4+3n)(n+1)}{2} (we have n + 1 there because ...)": an aside after the value
    text = re.sub(r"\s*\((?!mod\b)(?=[^()]*\b(?!" + _FUNCTION_WORDS + r"\b)[a-z]{3,}\b)[^()]*\)\s*$", "", text).rstrip(" .")  # not "(ad − bc)"
    # split at sentence ends outside formulas: ". " before a capital, not after a one-letter abbreviation
    parts = re.split(r"(?<=[^\s.]{2})\.\s+(?=[A-Z•]|\\begin)|(?<=\d)\.\s+(?=[A-Z])|(?<=\bthis)[.:]\s+|\n+|•"
                     r"|(?<=[}\])])\s+\.\s+(?=[A-Z])"  # "... \\end{pmatrix} . In particular, ...": the parse spaced the period
                     r"|(?<=[a-z]{3})\.\s+(?=[a-z]+_\{|" + _FUNCTION_WORDS + r"\()"  # "... the N part. proj_{M,N}(v) = ...", "... x-axis. arccos(...)": a formula opens the sentence
                     r"|(?<=[⟩}\])])\s+(?=(?:The|So|Thus|Hence|Therefore|This|We|It)\b)", text)
    return parts[-1].strip() if parts else text


def clean_value(value: str, question: str, letter: bool = False) -> str | None:
    """The value as a formula the checker reads, or None when it is prose, cut off or printed already."""
    value = value.strip().rstrip(" .,;:")
    if not value or len(value) > 200 or re.search(r"[+−\-·×*/=^_]$", value) or re.search(r"\.\s", value) or value.count("(") != value.count(")") or value.count("{") != value.count("}") or re.search(r"…|\.\s?\.\s?\.|·\s?·\s?·", value):
        return None
    plain = re.sub(r"\\(?:begin|end)\{\w+\}|\\[A-Za-z]+", " ", value)
    if re.search(rf"(?<![A-Za-z])(?!{_FUNCTION_WORDS}(?![A-Za-z]))[A-Za-z]{{3,}}", plain):
        return None  # prose words: not one value
    if not re.search(r"[\dA-Za-z]", plain) or not letter and re.fullmatch(r"\s*[A-Za-z]\s*", plain):
        return None  # nothing, or a lone letter ("the minimal polynomial is m"): a name, not its value (after "a_n =" it is one)
    if len(value) >= 6 and re.sub(r"\s+", "", value) in re.sub(r"\s+", "", question):
        return None  # the stem prints the formula: a restatement, not a result
    if infer_answer_type(value) not in ("numeric", "expression", "set", "matrix", "vector", "tuple"):
        return None
    return value


_NAME = re.compile(r"(?:^|[\s,:])(?:\\?(?:det|dim|rank|tr)\s*\(?[^=()]{1,12}\)?|[A-Za-z](?:_\{?\w{1,4}\}?)?(?:\^\{?[^=\s]{1,6}\}?)?"
                   r"(?:\([^()=]{1,16}\))?)\s*$")


def _last_side(sentence: str) -> str | None:
    """The right side of a sentence's last equation ("giving det(A) = a(b − a)(c − b)"): when the
    left side names one thing (det(A), f(x), a_n, P(40, 3)) or the equation is a chain of forms of
    one value; not "1/R = 1/r_1 + 1/r_2", which states the value of another expression."""
    sides = sentence.split("=")
    if len(sides) < 2:
        return None
    if any(re.search(r"\band\b|,\s|;|\bor\b", side) for side in sides[1:-1]):
        return None  # "Thus x = 3 and y = 4": several assignments, not one chain
    if len(sides) == 2 and not _NAME.search(sides[0]) and "\\begin{" not in sides[0] \
            and not re.search(r"\d\s*[·×*+−-]\s*\d[^A-Za-z]*$", sides[0]):
        return None  # (an expansion of matrices or "7 · 31 = 217" to its value is working, "1/R = ..." is not)
    return re.sub(r"\s+(?:is|are)\s+the\s+(?:closed\s+|general\s+|explicit\s+)?(?:formula|solution|answer)\s*$", "", sides[-1])


def worked_final(question: str, answer: str) -> str | None:
    """The value a worked answer states at its end, for a one-value ask; None when unsure."""
    ask = question.strip().split("\n")[-1]
    # "Express the sequence as partial sums. Then find a closed formula ...": the working answers the
    # first ask, the formula the last, which the answer ends with
    then = re.search(r"(?:^|[.?]\s+)Then\s+(?:find|guess|give|compute|determine)\b(?P<rest>(?:(?![.?]\s+[A-Z]|\?).)*)[.?]?\s*$", ask)
    if then is not None and _FORMULA_ASK.search("find" + then.group("rest")) and not re.search(r"\b(?:prove|show)\b", ask, re.I):
        ask = then.group("rest")
    if _MORE_ASKS.search(ask) or ask.count("?") > 1 or not re.match(r"\s*\([a-z]\)", ask) and question.count("?") > 1:
        return None
    counts = _COUNT_ASK.search(question)
    if _NOT_UNIQUE.search(answer) and not counts:  # ("for example, D is adjacent to C and E": a count is one number)
        return None
    last = _last_sentence(answer)
    whole = last
    last = re.split(r"\bor\s+equivalently\b|,?\s*i\.e\.,?", last)[-1]  # "a_n − n^2 = 1 − n or equivalently a_n = n^2 − n + 1"
    if not last or whole == answer.strip().rstrip(" ."):
        return None  # no working before it: not a worked solution
    if _MATRIX_ASK.search(question):
        m = re.search(r"(?:\bthis(?:\s+matrix)?\s*[.:]?\s*(?:Rep_\{[^{}]*\}\([^()]*\)\s*=?|[A-Z]\s*=)?|=)\s*(\\begin\{pmatrix\}(?:(?!\\begin).)*?\\end\{pmatrix\})\s*\.?\s*$", answer.strip(), re.S)
        if m and answer.strip().count("\\begin{pmatrix}") >= 1:
            return clean_value(m.group(1), question)
    if (sym := _SYMBOL_ASK.search(question)) is not None and "=" in last:
        # "Find M ⊥." ended by "M ⊥= { ... } = { k · v | k ∈R }": the working names the asked symbol's value
        head, _, rest = last.partition("=")
        if re.sub(r"\s+", "", head) == re.sub(r"\s+", "", sym.group("sym")):
            return clean_value(rest.rsplit("=", 1)[-1], question, letter=True)
    noun = _NOUN_ASK.search(question)
    if noun is not None and (m := re.fullmatch(r"(?P<v>[^=≈]+?)\s*≈\s*[−-]?\d[\d.,]*\s*(?:[A-Za-z°]+)?", last)) is not None \
            and (value := clean_value(m.group("v"), question)) is not None:
        return value  # "arccos(\\frac{...}{...}) ≈ 0.96 radians": the exact form
    counts = counts or noun is not None and noun.group("noun").lower() == "number"  # "Find the number of ..."
    if counts and (m := _NEEDED.search(last)) is not None and _CONCLUDES.search(last):
        return _NUMBER_WORDS.get(m.group("v").lower(), m.group("v"))
    if _PERCENT_ASK.search(ask) and _CONCLUDES.search(last) and len(found := re.findall(r"(?<![\w.])\d+(?:\.\d+)?\s?%", last)) == 1:
        return found[0].replace(" ", "")  # "we conclude that approximately 55.37% of students are awake"
    if counts and (m := _COUNT_SENTENCE.search(last)) is not None \
            and not re.search(r"\d|\\binom", last[m.end():]):  # "there are 5 stars and 9 bars, giving us \binom{14}{9}": the later one
        value = m.group("v")
        value = value.rsplit("=", 1)[1] if "=" in value else value
        # "in total there are four possible Jordan forms": "in total" opened the match; the count is
        # the number after "there are", and the words after it name what is counted
        value = re.sub(r"^\s*there\s+(?:are|is|were|(?:must|will|would)\s+be)\s+(?:a\s+total\s+of\s+)?", "", value, flags=re.I)
        head = value.split()
        if len(head) > 1 and (head[0].lower() in _NUMBER_WORDS or head[0].isdigit()) \
                and all(re.fullmatch(r"[A-Za-z]+", x) for x in head[1:]):
            value = head[0]
        value = _NUMBER_WORDS.get(value.strip().lower(), value)
        if re.search(r"\d|\\binom|[A-Z]\(\d", value):
            return clean_value(value, question)
        return None
    if noun is not None:
        word = noun.group("noun").split()[-1]
        m = re.search(rf"\b(?:has|of|is|equals?)\s+(?:the\s+)?{word}\s+(?P<v>\S+)\s*$"  # "has dimension zero"
                      rf"|\b{word}(?:\s+(?:of|in|on|at|between)\s+[^=.]{{1,40}}?)?\s+(?:is|equals|=)\s+(?P<w>[^=]+?)\s*$", last, re.I)  # "the dimension of W is 2"
        if m is not None:
            value = (m.group("v") or m.group("w")).strip(" .")
            value = value.split("≈")[0] if "≈" in value and value.split("≈")[0].strip() else value  # the exact form
            value = _NUMBER_WORDS.get(value.lower(), value)
            if re.search(r"\d", value) or word not in ("value", "number"):
                return clean_value(value, question)
    if (noun is not None or _FORMULA_ASK.search(question) or counts) and _CONCLUDES.search(last) \
            or _FORMULA_ASK.search(question) and answer.count("=") >= 1:
        side, m = _last_side(last), None
        if side is None and (m := _GIVES.search(last)) is not None:
            side = m.group("v")
        if side is not None:
            return clean_value(side, question, letter=m is None)
    return None
