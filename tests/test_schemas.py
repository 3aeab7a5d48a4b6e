"""Record models: Arrow schemas, Parquet round trips, stable ids, JSONL reading and writing."""

from __future__ import annotations

import gzip
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlclimb.schemas import (
    RECORD_KINDS,
    CodeProblem,
    JsonlError,
    QAItem,
    Rollout,
    Solution,
    Source,
    StageEvent,
    SWETask,
    TestCase,
    ToolCall,
    ToolEnvironment,
    ToolSpec,
    ToolTask,
    arrow_schema,
    content_id,
    normalize_text,
    qa_id,
    read_jsonl,
    read_records,
    write_jsonl,
    write_records,
)
from rlclimb.schemas.io import read_rows
from rlclimb.schemas.records import pass_rate_map

EVENT = StageEvent(stage="judge", version="2", decision="modify", reason="2/3 agree", model="m",
                   votes=["a", "a", "b"], cost=0.125)
SOURCE = Source(document="book.pdf", page=12, section="3.1", number="7b", span="10:20",
                url="https://example.org/x", commit="abc123", line=42, license="CC-BY-4.0")


def _samples() -> dict[str, list]:
    """Two records per kind: one with every nested field filled, one minimal (defaults, nulls)."""
    task = ToolTask(environment_id="env-1", instruction="Book a table for two.", persona="busy",
                    actions=[ToolCall(name="book", arguments='{"n": 2}'), ToolCall(name="confirm")],
                    outputs=["booked", "table 4"], needs_tools=True)
    return {
        "qa": [
            QAItem(question="What is 2+2?", answer="4", solution="2+2=4", answer_type="numeric",
                   question_type="open", choices=["3", "4"], topic=["math", "arithmetic"],
                   difficulty="easy", tags=["t1", "t2"], pass_rates={"tier-0": 0.25, "tier-1": 1.0},
                   meta='{"k": 1}', source=SOURCE,
                   provenance=[EVENT, StageEvent(stage="split", version="1", decision="expand")]),
            QAItem(question="Ünïcode ∫ question — long enough?", answer=""),
        ],
        "code": [
            CodeProblem(statement="Print the sum of two ints.",
                        tests=[TestCase(input="1 2\n", output="3\n"),
                               TestCase(input="add(1, 2)", output="3", kind="call")],
                        solutions=[Solution(language="python", code="print(sum(map(int, input().split())))")],
                        entry_point="add", time_limit_s=2.5, memory_limit_mb=256, difficulty="easy",
                        tags=["math"], source=SOURCE, provenance=[EVENT]),
            CodeProblem(statement="Nothing.", tests=[]),
        ],
        "swe": [
            SWETask(id="owner__repo-1", repo="owner/repo", base_commit="deadbeef", patch="--- a\n+++ b\n",
                    test_patch="--- t\n", problem_statement="It breaks.", FAIL_TO_PASS=["t::a", "t::b"],
                    PASS_TO_PASS=["t::c"], image="img:1", test_command="pytest", created_at="2024-01-01",
                    source=SOURCE, provenance=[EVENT]),
            SWETask(repo="o/r", base_commit="c0ffee", patch="", test_patch="", problem_statement="p"),
        ],
        "toolenv": [
            ToolEnvironment(name="restaurant", description="Book tables.",
                            tools=[ToolSpec(name="book", description="book a table",
                                            parameters='{"type": "object"}', implementation="def invoke(d): ..."),
                                   ToolSpec(name="confirm", description="confirm")],
                            database='{"tables": [1, 2]}', tasks=[task, ToolTask(instruction="Say hi.")],
                            source=SOURCE, provenance=[EVENT]),
            ToolEnvironment(name="empty", description="nothing here"),
        ],
        "tooltask": [task, ToolTask(instruction="Just answer.", needs_tools=False)],
        "rollout": [
            Rollout(prompt_id="qa-1", environment="math", policy_version=3, prompt="2+2?", completion="4",
                    reward=1.0, reward_components={"task": 1.0, "format": 0.5, "length": 0.25},
                    num_tokens=17, truncated=True, step=9),
            Rollout(prompt_id="qa-2", environment="code", policy_version=0, prompt="p", completion="c",
                    reward=-0.5),
        ],
    }


def test_every_record_kind_has_a_sample():
    assert set(_samples()) == set(RECORD_KINDS)
    for kind, records in _samples().items():
        assert all(type(r) is RECORD_KINDS[kind] for r in records)


@pytest.mark.parametrize("kind", sorted(RECORD_KINDS))
def test_parquet_round_trip_equals_the_model(kind, tmp_path):
    records = _samples()[kind]
    model = RECORD_KINDS[kind]
    path = write_records(records, tmp_path / f"{kind}.parquet")
    file_schema = pq.read_schema(path)
    expected = arrow_schema(model)
    assert file_schema.names == list(model.model_fields)
    assert file_schema.remove_metadata().equals(expected.remove_metadata())
    assert (file_schema.metadata or {}).get(b"rlclimb.record") == model.__name__.encode()
    back = read_records(path, model)
    assert back == records
    assert [r.model_dump() for r in back] == [r.model_dump() for r in records]


def test_arrow_types_of_nested_fields():
    qa = arrow_schema(QAItem)
    assert qa.field("question").type == pa.string() and not qa.field("question").nullable
    assert qa.field("solution").nullable  # Optional
    assert qa.field("tags").type == pa.list_(pa.string())
    assert pa.types.is_struct(qa.field("source").type)
    assert qa.field("source").type.field("line").type == pa.int64()
    prov = qa.field("provenance").type
    assert pa.types.is_list(prov) and pa.types.is_struct(prov.value_type)
    assert prov.value_type.field("votes").type == pa.list_(pa.string())
    assert prov.value_type.field("cost").type == pa.float64()
    assert arrow_schema(QAItem).field("answer_type").type == pa.string()  # Literal of str
    ro = arrow_schema(Rollout)
    assert pa.types.is_struct(ro.field("reward_components").type)
    assert pa.types.is_struct(qa.field("pass_rates").type.value_type)
    assert ro.field("truncated").type == pa.bool_()
    env = arrow_schema(ToolEnvironment)
    tasks = env.field("tasks").type.value_type
    assert tasks.field("actions").type.value_type.field("arguments").type == pa.string()
    code = arrow_schema(CodeProblem)
    assert code.field("tests").type.value_type.field("kind").type == pa.string()


def test_no_record_kind_has_a_map_column():
    """Hugging Face `datasets` has no Arrow map type: every column of every kind must load there."""
    datasets = pytest.importorskip("datasets")
    for kind, model in RECORD_KINDS.items():
        features = datasets.Features.from_arrow_schema(arrow_schema(model))
        assert list(features) == list(model.model_fields), kind
    with pytest.raises(TypeError, match="no map fields"):
        from rlclimb.schemas.arrow import arrow_type

        arrow_type(dict[str, float])


def test_pass_rates_are_a_list_of_tier_rates_and_accept_a_mapping(tmp_path):
    item = _samples()["qa"][0]
    assert [r.model_dump() for r in item.pass_rates] == [{"tier": "tier-0", "rate": 0.25}, {"tier": "tier-1", "rate": 1.0}]
    row = read_rows(write_records([item], tmp_path / "q.parquet"))[0]
    assert row["pass_rates"] == [{"tier": "tier-0", "rate": 0.25}, {"tier": "tier-1", "rate": 1.0}]
    assert pass_rate_map(row["pass_rates"]) == pass_rate_map(item.pass_rates) == {"tier-0": 0.25, "tier-1": 1.0}
    assert pass_rate_map({"tier-0": 0.5}) == {"tier-0": 0.5} and pass_rate_map(None) == {}


def test_rollout_components_are_a_struct_with_the_environment_parts(tmp_path):
    r = _samples()["rollout"][0]
    row = read_rows(write_records([r], tmp_path / "r.parquet"))[0]
    assert row["reward_components"] == {"task": 1.0, "format": 0.5, "lang": 0.0, "length": 0.25}
    assert json.loads(r.model_dump_json())["reward_components"]["task"] == 1.0
    with pytest.raises(ValueError):  # a part no environment reports is a mistake, not a new column
        Rollout(prompt_id="p", environment="math", policy_version=0, prompt="x", completion="y",
                reward=0, reward_components={"typo": 1.0})


def test_write_records_refuses_an_empty_list(tmp_path):
    with pytest.raises(ValueError, match="at least one record"):
        write_records([], tmp_path / "x.parquet")


# ---- ids -----------------------------------------------------------------------------------------


def test_qa_id_is_a_known_hash_of_normalized_content():
    expected = "qa-" + hashlib.sha256(b"qa\x1fWhat is 2+2?\x1f4\x1f").hexdigest()[:24]
    assert qa_id("What is 2+2?", "4") == expected
    assert QAItem(question="What is 2+2?", answer="4").id == expected
    assert content_id("qa", "What is 2+2?", "4") == expected
    assert len(expected) == 3 + 24


def test_ids_are_stable_across_calls_and_instances():
    prefixes = {"qa": "qa-", "code": "code-", "swe": "swe-", "toolenv": "toolenv-",
                "tooltask": "task-", "rollout": "rollout-"}
    first = {kind: [r.id for r in recs] for kind, recs in _samples().items()}
    second = {kind: [r.id for r in recs] for kind, recs in _samples().items()}
    assert first == second
    for kind, records in _samples().items():
        for rec in records:
            if rec.id == "owner__repo-1":  # an explicit id is kept as given
                continue
            again = type(rec).model_validate({**rec.model_dump(), "id": ""})
            assert again.id == rec.id, kind
            assert rec.id.startswith(prefixes[kind]) and len(rec.id) == len(prefixes[kind]) + 24
        assert len({r.id for r in records}) == len(records), kind  # different content, different id


def test_whitespace_only_differences_give_the_same_qa_id():
    base = QAItem(question="What is\n2 + 2?", answer="4").id
    variants = [
        ("  What   is\r\n2 + 2?  ", " 4 "),
        ("What is\t\n2 + 2?", "4\n"),
        ("What\u00a0is\r2 + 2?\n\n", "\ufeff4"),
    ]
    assert [QAItem(question=q, answer=a).id for q, a in variants] == [base, base, base]
    # a blank line between paragraphs is structure, not whitespace noise: it is kept (runs become one)
    assert QAItem(question="What is\n\n\n\n2 + 2?", answer="4").id == QAItem(question="What is\n\n2 + 2?", answer="4").id
    assert QAItem(question="What is \n\n2 + 2?", answer="4").id != base
    assert QAItem(question="What is\n2 + 3?", answer="4").id != base
    assert QAItem(question="What is\n2 + 2?", answer="5").id != base
    assert qa_id("ab", "c") != qa_id("a", "bc")  # parts are separated


def test_explicit_id_is_kept_and_other_kinds_use_their_content():
    assert QAItem(id="mine", question="q", answer="a").id == "mine"
    a = CodeProblem(statement="Add  two\r\nnumbers.", tests=[])
    b = CodeProblem(statement="Add two\nnumbers.", tests=[TestCase(input="1", output="1")])
    assert a.id == b.id == content_id("code", "Add two\nnumbers.")
    r1 = Rollout(prompt_id="p", environment="math", policy_version=1, prompt="x", completion="y", reward=0)
    r2 = Rollout(prompt_id="p", environment="math", policy_version=2, prompt="x", completion="y", reward=0)
    assert r1.id != r2.id
    assert r1.id == content_id("rollout", "p", "1", "0", "y")


def test_normalize_text():
    assert normalize_text("  a \t b  \r\n\r\n\r\n c\u00a0d \ufeff") == "a b\n\nc d"
    assert normalize_text("ﬁ ①") == "fi 1"  # NFKC
    assert normalize_text("\n\n x \n\n") == "x"


# ---- JSONL ---------------------------------------------------------------------------------------


def _write_bytes(path, lines: list[bytes]):
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_read_jsonl_reports_bad_lines_with_line_numbers(tmp_path):
    path = _write_bytes(tmp_path / "in.jsonl", [
        b'{"a": 1}',                 # 1
        b"",                         # 2 blank: skipped, still counted
        b'{"a": 2',                  # 3 bad json
        b"[1, 2]",                   # 4 not an object
        b'{"a": "\xff\xfe"}',        # 5 bad utf-8
        b"   ",                      # 6 whitespace only: skipped
        b'\xef\xbb\xbf{"a": 3}',     # 7 BOM
        b'"just a string"',          # 8 not an object
        b'{"a": "\xc3\xa9"}',        # 9 valid utf-8
    ])
    got = list(read_jsonl(path))
    assert [no for no, _ in got] == [1, 3, 4, 5, 7, 8, 9]
    ok = {no: obj for no, obj in got if not isinstance(obj, JsonlError)}
    assert ok == {1: {"a": 1}, 7: {"a": 3}, 9: {"a": "é"}}
    errors = [obj for _, obj in got if isinstance(obj, JsonlError)]
    assert [(e.line, e.reason) for e in errors] == [
        (3, "bad_json"), (4, "not_an_object"), (5, "bad_encoding"), (8, "not_an_object")]
    assert all(e.path == str(path) for e in errors)
    assert "a JSON list" in errors[1].detail and "a JSON str" in errors[3].detail
    assert "byte" in errors[2].detail


def test_jsonl_gz_round_trip(tmp_path):
    rows = [{"id": i, "text": f"ünï {i}\nline", "nested": {"x": [i, None]}} for i in range(50)]
    path = write_jsonl(rows, tmp_path / "out" / "rows.jsonl.gz")
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # really gzip
    text = gzip.decompress(raw).decode("utf-8")
    assert text.count("\n") == 50 and "ünï" in text  # not ascii-escaped
    assert list(read_jsonl(path)) == [(i + 1, r) for i, r in enumerate(rows)]
    plain = write_jsonl(rows, tmp_path / "rows.jsonl")
    assert plain.read_bytes()[:1] == b"{"
    assert [json.loads(line) for line in plain.read_text().splitlines()] == rows
    assert not list(tmp_path.rglob(".*tmp*"))  # atomic writes leave no temp files


def test_bad_gzip_line_is_reported_with_its_line(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\nnot json\n{"a": 2}\n'))
    got = list(read_jsonl(path))
    assert got[0] == (1, {"a": 1}) and got[2] == (3, {"a": 2})
    assert isinstance(got[1][1], JsonlError) and (got[1][1].line, got[1][1].reason) == (2, "bad_json")
