"""Streaming a generated Posts.xml: selection, the answer join, both tag spellings, bounded memory."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from apps.corpus.screening import RULE_ACCEPTED_ONLY, RULE_KEYWORDS, RULE_TAGS, TOSEM23_STACKOVERFLOW
from apps.corpus.so_dump import DumpError, PostsDumpReader, read_posts


def row(**attrs: object) -> str:
    # The dump writes attributes escaped, newlines included, as the official files do.
    parts = [
        f'{name}="{escape(str(value), {chr(34): "&quot;", chr(10): "&#xA;"})}"'
        for name, value in attrs.items()
    ]
    return "<row " + " ".join(parts) + " />"


def posts_xml(rows: list[str]) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "".join(f"  {r}\n" for r in rows) + "</posts>\n"
    )


def question(
    post_id: int, title: str, tags: str, body: str = "<p>text</p>", accepted: int | None = None
) -> str:
    attrs: dict[str, object] = {
        "Id": post_id,
        "PostTypeId": 1,
        "CreationDate": "2017-09-01T10:00:00.123",
        "Score": 3,
        "ViewCount": 120,
        "Body": body,
        "OwnerUserId": 42,
        "LastActivityDate": "2018-01-01T00:00:00.000",
        "Title": title,
        "Tags": tags,
        "AnswerCount": 2,
        "CommentCount": 0,
        "ContentLicense": "CC BY-SA 3.0",
    }
    if accepted is not None:
        attrs["AcceptedAnswerId"] = accepted
    return row(**attrs)


def answer(post_id: int, parent: int, score: int = 0, author: str | None = None) -> str:
    attrs: dict[str, object] = {
        "Id": post_id,
        "PostTypeId": 2,
        "ParentId": parent,
        "CreationDate": "2017-09-02T10:00:00.000",
        "Score": score,
        "Body": f"<p>answer {post_id}</p>",
        "ContentLicense": "CC BY-SA 3.0",
    }
    if author:
        attrs["OwnerDisplayName"] = author
    else:
        attrs["OwnerUserId"] = 7
    return row(**attrs)


SAMPLE_ROWS = [
    question(
        1,
        "Distributed training with MirroredStrategy",
        "<tensorflow><python>",
        "<p>How?\nThanks</p>",
        accepted=3,
    ),
    answer(2, 1, score=5),
    answer(3, 1, score=1, author="deleted user"),
    question(4, "Install fails", "|horovod|", accepted=10),
    question(5, "Shape mismatch", "<keras>", accepted=6),
    answer(6, 5),
    question(7, "DataParallel hangs", "<pytorch>"),
    question(8, "parallel streams", "<java>", accepted=9),
    answer(9, 8),
    answer(10, 4, score=2),
    row(Id=11, PostTypeId=5, Body="<p>tag wiki</p>", CreationDate="2017-09-03T00:00:00.000"),
    row(Id=12, PostTypeId=4, Body="excerpt", CreationDate="2017-09-03T00:00:00.000"),
    question(
        13, "Error", "<tensorflow>", "<p>see</p><pre><code>tf.distribute.MirroredStrategy()</code></pre>", 14
    ),
]


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "Posts.xml"
    path.write_text(posts_xml(SAMPLE_ROWS), encoding="utf-8")
    return path


def test_the_tosem_rule_selects_questions_and_joins_their_answers(dump: Path) -> None:
    reader = PostsDumpReader(dump, TOSEM23_STACKOVERFLOW)
    records = list(reader)
    assert [record.external_id for record in records] == ["1", "4"]
    first = records[0]
    assert first.url == "https://stackoverflow.com/questions/1"
    assert (first.source, first.body_format) == ("stackoverflow", "html")
    assert first.title == "Distributed training with MirroredStrategy"
    assert first.body == "<p>How?\nThanks</p>"
    assert first.tags == ["tensorflow", "python"]
    assert first.created_at == datetime(2017, 9, 1, 10, 0, 0, 123000, tzinfo=UTC)
    assert first.metadata["accepted_answer_id"] == 3
    assert first.metadata["author"] == "user:42"
    assert [(c.external_id, c.is_accepted, c.score, c.author) for c in first.comments] == [
        ("3", True, 1, "deleted user"),
        ("2", False, 5, "user:7"),
    ]
    assert all(c.is_answer for c in first.comments)
    assert records[1].tags == ["horovod"]
    assert [c.external_id for c in records[1].comments] == ["10"]
    assert records[1].comments[0].is_accepted
    assert records[1].raw["answers"][0]["ParentId"] == "4"


def test_counts_say_why_each_question_was_left_out(dump: Path) -> None:
    reader = PostsDumpReader(dump, TOSEM23_STACKOVERFLOW)
    list(reader)
    stats = reader.stats
    assert (stats.posts, stats.questions, stats.answers, stats.selected, stats.answers_joined) == (
        13,
        6,
        5,
        2,
        3,
    )
    assert dict(stats.rejected) == {RULE_KEYWORDS: 2, RULE_ACCEPTED_ONLY: 1, RULE_TAGS: 1}


def test_without_rules_every_question_is_read(dump: Path) -> None:
    records = list(read_posts(dump))
    assert [record.external_id for record in records] == ["1", "4", "5", "7", "8", "13"]
    assert [c.external_id for c in records[2].comments] == ["6"]


def test_another_site_keeps_its_host(dump: Path) -> None:
    [record, *_] = list(read_posts(dump, site_host="datascience.stackexchange.com"))
    assert (record.url, record.source, record.external_id) == (
        "https://datascience.stackexchange.com/questions/1",
        "stackexchange",
        "datascience:1",
    )


def test_a_malformed_dump_raises_before_any_record_is_yielded(tmp_path: Path) -> None:
    text = posts_xml(SAMPLE_ROWS)
    path = tmp_path / "Posts.xml"
    path.write_text(text[: int(len(text) * 0.8)], encoding="utf-8")
    iterator = iter(PostsDumpReader(path))
    with pytest.raises(DumpError, match=r"malformed XML at line \d+, column \d+"):
        next(iterator)


def test_an_unusable_attribute_names_the_post(tmp_path: Path) -> None:
    path = tmp_path / "Posts.xml"
    path.write_text(posts_xml([question(1, "t", "<a>"), answer(2, 1), row(Id=3, PostTypeId=2, ParentId="x")]))
    with pytest.raises(DumpError, match="post Id='3': ParentId='x' is not an integer"):
        list(read_posts(path))


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "Posts.xml"
    path.write_text("")
    with pytest.raises(DumpError):
        list(read_posts(path))


def test_progress_is_reported_up_to_the_whole_file(dump: Path) -> None:
    seen: list[tuple[int, int]] = []
    list(PostsDumpReader(dump, on_progress=lambda done, total: seen.append((done, total)), progress_every=4))
    size = dump.stat().st_size
    assert seen[-1] == (size, size)
    assert len(seen) == 4  # after rows 4, 8 and 12, then the end
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def _generated_dump(path: Path, questions: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        post_id = 0
        for number in range(questions):
            post_id += 1
            # One question in 50 is selected; bodies are ~1 KB like real ones.
            tags = "<horovod>" if number % 50 == 0 else "<java>"
            handle.write(
                question(post_id, f"question {number}", tags, "<p>" + "x" * 1000 + "</p>", post_id + 1) + "\n"
            )
            post_id += 1
            handle.write(answer(post_id, post_id - 1) + "\n")
        handle.write("</posts>\n")


def _peak_memory(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        selected = sum(1 for _ in PostsDumpReader(path, TOSEM23_STACKOVERFLOW))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return selected, peak


def test_memory_does_not_grow_with_the_size_of_the_dump(tmp_path: Path) -> None:
    small, large = tmp_path / "small.xml", tmp_path / "large.xml"
    _generated_dump(small, 1_000)
    _generated_dump(large, 10_000)
    assert large.stat().st_size > 10_000_000
    selected_small, peak_small = _peak_memory(small)
    selected_large, peak_large = _peak_memory(large)
    assert (selected_small, selected_large) == (20, 200)
    # Ten times the file: the peak stays within a small constant of the small file's, far below its size.
    assert peak_large < peak_small + 1_000_000
    assert peak_large < large.stat().st_size / 10
