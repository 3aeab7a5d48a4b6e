"""Suspect glyphs and the page quality score on plain strings (fast: no PDF, no OCR): the cheap
pre-checks and per-word caches must not change what is found."""

from __future__ import annotations

from rlclimb.stages.documents.parse_quality import assess
from rlclimb.stages.documents.parse_repair import has_candidates, repair, suspect_chars, suspects


def test_math_signs_alone_are_no_candidates():
    text = "Compute 3 · 4 × 5 ÷ 2 ± 1 for an angle of 90° and 5 µm, ¬p\xa0holds."
    assert not has_candidates(text)
    assert suspects(text) == []


def test_a_math_sign_in_a_latin1_noise_word_is_still_suspect():
    # "·" is no candidate by itself, but beside another Latin-1 symbol in a word it is evidence
    text = "The word S·®çã is no word."
    found = {text[a] for a, _ in suspects(text)}
    assert {"·", "®"} <= found
    assert has_candidates(text)


def test_repeated_words_give_the_same_suspects_each_time():
    line = "1. Compute ϭϯ + ϮϬ and check Section Ϭ.Ϭ."
    first = suspects(line)
    assert first and suspects(line) == first  # the second call comes from the word cache
    text = "\n".join([line] * 5)
    assert suspect_chars(text) == {c: 5 * n for c, n in suspect_chars(line).items()}
    fixed, done, left = repair(line, {"ϭ": "1", "ϯ": "3", "Ϯ": "2", "Ϭ": "0"})
    assert fixed == "1. Compute 13 + 20 and check Section 0.0." and left == 0 and done == len(first)


def test_repair_counts_what_it_could_not_map():
    fixed, done, left = repair("Compute ϭϯ now.", {"ϭ": "1"})
    assert fixed == "Compute 1ϯ now." and (done, left) == (1, 1)


def test_quality_counts_every_occurrence_of_a_foreign_word():
    prose = "the sum of the two values is what we find and then show that it holds for all of them "
    # Cyrillic letters where digits stood, each word many times: weighted by its count
    once = assess(prose * 6 + "Ж and Л")
    often = assess(prose * 6 + " ".join(["Ж and Л"] * 8))
    assert often.details["isolated_foreign"] > once.details["isolated_foreign"] > 0
    assert often.garbled == "mixed scripts"
