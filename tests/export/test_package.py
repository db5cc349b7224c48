"""The replication package: its files, determinism, and import_study (round trip and refusals)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from django.db import connection

from apps.accounts.models import Membership, Study, User
from apps.adjudication.models import Decision, DecisionValue, Review, ReviewState
from apps.annotation.models import Annotation, Assignment, LabelValue, Round
from apps.corpus.models import Item
from apps.export.package import DATASET_FILES, MANIFEST, PackageError, build_package, import_study
from apps.taxonomy.models import Category, Codebook, CodebookChange, CodebookVersion
from apps.taxonomy.services import merge_category, rename_category

pytestmark = pytest.mark.django_db


def package(study: Study, path: Path) -> Path:
    build_package(study, path)
    return path


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def repack(source: Path, target: Path, changes: dict[str, bytes], *, fix_checksums: bool = True) -> Path:
    """Copy a package with some files replaced; with `fix_checksums` the manifest is updated to match."""
    files = {**members(source), **changes}
    manifest = json.loads(files[MANIFEST])
    if fix_checksums:
        for name in changes:
            if name != MANIFEST:
                manifest["files"][name] = {"sha256": hashlib.sha256(files[name]).hexdigest(), "bytes": 0}
        files[MANIFEST] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return target


def with_second_item(source: Path, target: Path, **fields: object) -> tuple[str, Path]:
    """A copy of the package whose second line of items.jsonl has `fields` changed (written by Python's
    json, as a hand edit would be); the item's URL and the copy."""
    lines = members(source)["items.jsonl"].decode().splitlines()
    item = {**json.loads(lines[1]), **fields}
    lines[1] = json.dumps(item)
    return item["url"], repack(source, target, {"items.jsonl": ("\n".join(lines) + "\n").encode()})


def counts() -> tuple[int, ...]:
    return (
        Study.objects.count(),
        User.objects.count(),
        Item.objects.count(),
        Codebook.objects.count(),
        Category.objects.count(),
        Round.objects.count(),
        Annotation.objects.count(),
        Decision.objects.count(),
    )


def test_the_package_holds_every_file_with_its_checksum(labelled: Study, tmp_path: Path) -> None:
    files = members(package(labelled, tmp_path / "p.zip"))
    paper = sorted(name for name in files if name.startswith("paper/"))
    assert sorted(files) == sorted(["README.md", MANIFEST, *DATASET_FILES, *paper])
    # Issue #22 point 7: the paper's methods section, figures and cross-tabs travel with the package.
    assert {"paper/methods.md", "paper/methods.tex", "paper/references.bib"} <= set(paper)
    for kind in ("agreement", "saturation", "distribution", "crosstab"):
        assert (
            f"paper/figures/{kind}-symptom.svg" in paper or f"paper/figures/{kind}-type-symptom.pdf" in paper
        )
    assert "paper/tables/crosstab-symptom-fix.csv" in paper
    manifest = json.loads(files[MANIFEST])
    assert manifest["format"] == "taxonomist-replication-package"
    assert set(manifest["files"]) == set(files) - {MANIFEST}
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == hashlib.sha256(files[name]).hexdigest()
        assert entry["bytes"] == len(files[name])
    assert manifest["counts"] == {"items": 5, "decided_items": 3, "findings": 4, "annotations": 5}


def test_zip_entries_have_a_fixed_timestamp(labelled: Study, tmp_path: Path) -> None:
    with zipfile.ZipFile(package(labelled, tmp_path / "p.zip")) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_two_exports_of_the_same_data_are_byte_identical_but_for_the_manifest(
    labelled: Study, tmp_path: Path
) -> None:
    first, second = package(labelled, tmp_path / "a.zip"), package(labelled, tmp_path / "b.zip")
    a, b = members(first), members(second)
    for name in ("README.md", *DATASET_FILES):
        assert a[name] == b[name], name
    del a[MANIFEST], b[MANIFEST]
    assert a == b


def test_the_package_holds_the_codebook_history_sampling_and_agreement(
    labelled: Study, tmp_path: Path
) -> None:
    files = members(package(labelled, tmp_path / "p.zip"))
    codebook = json.loads(files["codebook.json"])
    assert codebook["version"] == 1
    assert [d["key"] for d in codebook["codebook"]["dimensions"]] == ["type", "symptom", "fix"]
    assert [v["number"] for v in codebook["versions"]] == [1]
    sampling = json.loads(files["sampling.json"])
    assert [(r["number"], r["seed"], r["method"], r["size"]) for r in sampling["rounds"]] == [
        (1, 7, "uniform", 2),
        (2, 8, "uniform", 2),
    ]
    agreement = json.loads(files["agreement.json"])
    assert [r["round"] for r in agreement["rounds"]] == [1, 2]
    assert agreement["rounds"][0]["dimensions"]["type"]["n_items"] == 2
    assert agreement["rounds"][0]["dimensions"]["type"]["percent_agreement"] == 0.5
    assert "| 1 (Pilot) | 2 | 2 | 2 | 4 | 0.500 |" in files["agreement.md"].decode()
    readme = files["README.md"].decode()
    for name in DATASET_FILES:
        assert f"`{name}`" in readme


def test_a_package_becomes_a_new_study_that_exports_the_same_files(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "original.zip")
    result = import_study("ddp-copy", original)
    copy = result.study
    assert (result.items, result.rounds, result.annotations, result.decisions) == (5, 2, 5, 3)
    again = package(copy, tmp_path / "again.zip")
    a, b = members(original), members(again)
    for name in DATASET_FILES:
        assert a[name] == b[name], name
    assert json.loads(b[MANIFEST])["study"] == "ddp-copy"


def test_the_imported_study_keeps_who_decided_and_the_review_state(labelled: Study, tmp_path: Path) -> None:
    copy = import_study("ddp-copy", package(labelled, tmp_path / "p.zip")).study
    decision = Decision.objects.get(study=copy, item__url="https://stackoverflow.com/questions/2")
    assert decision.decided_by is not None and decision.decided_by.username == "lena"
    assert decision.provenance == "adjudicated"
    assert decision.rationale == "=1+1 is how it reads, but it hangs"
    assert decision.source_annotations.count() == 2
    states = dict(Review.objects.filter(study=copy).values_list("item__url", "state"))
    assert states["https://stackoverflow.com/questions/2"] == ReviewState.DECIDED
    assert states["https://github.com/o/r/issues/4"] == ReviewState.ANNOTATING
    assert Assignment.objects.filter(study=copy, status="open").count() == 1
    memos = set(Annotation.objects.filter(assignment__study=copy).values_list("memo", flat=True))
    assert memos == {"", "-1 looks odd", '=HYPERLINK("x")'}  # the CSV guard was undone
    roles = dict(Membership.objects.filter(study=copy).values_list("user__username", "role"))
    assert roles == {"alice": "annotator", "bob": "annotator", "lena": "lead", "olivia": "owner"}


def test_codebook_history_and_merged_labels_survive_the_round_trip(
    labelled: Study, tmp_path: Path, lead: User
) -> None:
    oom = Category.objects.get(dimension__codebook__study=labelled, key="oom")
    hang = Category.objects.get(dimension__codebook__study=labelled, key="hang")
    merge_category(oom, hang, actor=lead)
    rename_category(hang, "Hang or timeout", actor=lead)
    assert LabelValue.objects.filter(original_category=oom).exists()
    original = package(labelled, tmp_path / "original.zip")
    copy = import_study("ddp-copy", original).study
    book = Codebook.objects.get(study=copy)
    assert book.version == 3
    assert list(CodebookVersion.objects.filter(codebook=book).values_list("number", flat=True)) == [1, 2, 3]
    kinds = list(
        CodebookChange.objects.filter(codebook=book).values_list("version", "kind", "actor__username")
    )
    assert (2, "merge", "lena") in kinds and (3, "rename", "lena") in kinds
    merged = Category.objects.get(dimension__codebook=book, key="oom")
    assert merged.status == "merged" and merged.merged_into is not None and merged.merged_into.key == "hang"
    assert LabelValue.objects.filter(
        finding__annotation__assignment__study=copy, original_category=merged
    ).exists()
    assert DecisionValue.objects.filter(finding__decision__study=copy, original_category=merged).exists()
    again = members(package(copy, tmp_path / "again.zip"))
    for name in DATASET_FILES:
        assert members(original)[name] == again[name], name
    assert '"original": "oom"' in again["dataset.json"].decode()


def test_unknown_usernames_become_inactive_placeholders(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    Membership.objects.filter(user__username="olivia").delete()
    User.objects.filter(username="olivia").update(username="olivia-renamed")
    result = import_study("ddp-copy", original)
    assert result.placeholders == ("olivia",)
    olivia = User.objects.get(username="olivia")
    assert not olivia.is_active and not olivia.has_usable_password()
    assert Decision.objects.get(study=result.study, item__url__endswith="/issues/3").decided_by == olivia
    assert User.objects.get(username="lena").is_active


def test_bodies_are_rendered_again_through_the_sanitizer(labelled: Study, tmp_path: Path) -> None:
    Item.objects.filter(study=labelled, url__endswith="/issues/1").update(
        body="Hello <script>alert(1)</script><img src=x onerror=alert(2)>",
        body_html="<script>trusted?</script>",
    )
    copy = import_study("ddp-copy", package(labelled, tmp_path / "p.zip")).study
    item = Item.objects.get(study=copy, url__endswith="/issues/1")
    assert item.body.startswith("Hello <script>")
    assert "<script" not in item.body_html and "onerror" not in item.body_html
    assert item.rendered_at is not None


def test_a_checksum_mismatch_is_refused_and_nothing_is_written(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    dataset = members(original)["dataset.csv"].replace(b"Segfault", b"Hang")
    tampered = repack(original, tmp_path / "tampered.zip", {"dataset.csv": dataset}, fix_checksums=False)
    before = counts()
    with pytest.raises(PackageError, match=r"dataset\.csv: checksum mismatch: the manifest says"):
        import_study("ddp-copy", tampered)
    assert counts() == before


def test_a_file_missing_from_the_manifest_is_refused(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    extra = repack(original, tmp_path / "extra.zip", {"notes.txt": b"hi"}, fix_checksums=False)
    with pytest.raises(PackageError, match=r"notes\.txt: is in the zip but not in the manifest"):
        import_study("ddp-copy", extra)


def test_an_inconsistent_codebook_is_refused_and_nothing_is_written(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    codebook = json.loads(members(original)["codebook.json"])
    codebook["categories"] = [c for c in codebook["categories"] if c["key"] != "hang"]
    broken = repack(original, tmp_path / "broken.zip", {"codebook.json": json.dumps(codebook).encode()})
    before = counts()
    with pytest.raises(PackageError) as error:
        import_study("ddp-copy", broken)
    message = str(error.value)
    assert "codebook.json.codebook: is inconsistent with the listed dimensions and categories" in message
    assert counts() == before


def test_a_nan_in_a_hand_edited_items_file_is_refused_naming_it_and_nothing_is_written(
    labelled: Study, tmp_path: Path
) -> None:
    original = package(labelled, tmp_path / "p.zip")
    # Python's json.dumps writes a float("nan") as NaN
    _, broken = with_second_item(original, tmp_path / "broken.zip", metadata={"score": float("nan")})
    before = counts()

    with pytest.raises(PackageError) as error:
        import_study("ddp-copy", broken)

    assert "items.jsonl line 2.metadata.score: NaN is not valid JSON: write null for a missing number" in str(
        error.value
    )
    assert counts() == before


def test_half_a_surrogate_pair_in_a_hand_edited_items_file_is_restored_as_a_replacement_character(
    labelled: Study, tmp_path: Path
) -> None:
    original = package(labelled, tmp_path / "p.zip")
    # json.dumps writes the lone surrogate as the escape "\ud83d"
    url, edited = with_second_item(original, tmp_path / "edited.zip", title="cut \ud83d")

    copy = import_study("ddp-copy", edited).study

    assert Item.objects.get(study=copy, url=url).title == "cut \ufffd"


def test_labels_whose_path_disagrees_with_the_codebook_are_refused(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    dataset = members(original)["dataset.json"].replace(b'"path": "Hang"', b'"path": "Freeze"')
    broken = repack(original, tmp_path / "broken.zip", {"dataset.json": dataset})
    with pytest.raises(PackageError, match="the path 'Freeze' is not the path of 'hang'"):
        import_study("ddp-copy", broken)


def test_an_existing_slug_and_a_file_that_is_no_package_are_refused(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    with pytest.raises(PackageError, match="A study with the slug 'ddp' already exists"):
        import_study("ddp", original)
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("hello")
    with pytest.raises(PackageError, match="not a zip file"):
        import_study("ddp-copy", not_zip)
    with pytest.raises(PackageError, match="Invalid study slug"):
        import_study("no spaces", original)


def test_a_study_without_codebook_or_items_round_trips(study: Study, tmp_path: Path) -> None:
    original = package(study, tmp_path / "empty.zip")
    result = import_study("empty-copy", original)
    assert (result.items, result.decisions, result.codebook_version) == (0, 0, 0)
    again = members(package(result.study, tmp_path / "again.zip"))
    for name in DATASET_FILES:
        assert members(original)[name] == again[name], name
    assert again["dataset.csv"] == b"url,title,source,round,finding,provenance,decided_by,rationale\n"


def test_a_package_username_that_differs_only_by_case_from_an_account_is_refused_and_nothing_is_written(
    labelled: Study, tmp_path: Path
) -> None:
    original = package(labelled, tmp_path / "p.zip")
    User.objects.filter(username="olivia").update(username="Olivia")
    before = counts()
    with pytest.raises(PackageError) as caught:
        import_study("ddp-copy", original)
    assert "the package's user 'olivia' differs only by case from the existing account 'Olivia'" in str(
        caught.value
    )
    assert counts() == before and not Study.objects.filter(slug="ddp-copy").exists()
    assert list(User.objects.filter(username__iexact="olivia").values_list("username", flat=True)) == [
        "Olivia"
    ]


def test_two_package_usernames_that_differ_only_by_case_are_refused(labelled: Study, tmp_path: Path) -> None:
    original = package(labelled, tmp_path / "p.zip")
    files = members(original)
    changed = {
        name: data.replace(b'"olivia"', b'"Olivia"')
        for name, data in files.items()
        if name != "study.json" and b'"olivia"' in data
    }
    assert changed and b'"olivia"' in files["study.json"]
    mixed = repack(original, tmp_path / "mixed.zip", changed)
    Membership.objects.filter(user__username="olivia").delete()
    User.objects.filter(username="olivia").update(username="olivia-renamed")
    with pytest.raises(PackageError, match="the package names both 'Olivia' and 'olivia'"):
        import_study("ddp-copy", mixed)
    assert not User.objects.filter(username__iexact="olivia").exists()


def test_the_guidelines_and_who_read_them_survive_the_round_trip(labelled: Study, tmp_path: Path) -> None:
    from apps.taxonomy.guidelines import acknowledge, publish
    from apps.taxonomy.models import GuidelinesAcknowledgement, GuidelinesVersion

    lead = User.objects.get(username="lena")
    first = publish(labelled, "Read the **whole** thread.", actor=lead, note="First version")
    acknowledge(first, User.objects.get(username="alice"))
    second = publish(labelled, "Label the *fault*, not the question.", actor=lead, note="Faults only")
    acknowledge(second, User.objects.get(username="bob"))

    copy = import_study("ddp-copy", package(labelled, tmp_path / "p.zip")).study

    def shape(study: Study) -> list[tuple[object, ...]]:
        return list(
            GuidelinesVersion.objects.filter(study=study)
            .order_by("number")
            .values_list(
                "number", "introduction", "codebook_version", "note", "published_at", "published_by__username"
            )
        )

    assert shape(copy) == shape(labelled) and len(shape(copy)) == 2
    assert sorted(
        GuidelinesAcknowledgement.objects.filter(version__study=copy).values_list(
            "version__number", "user__username", "acknowledged_at"
        )
    ) == sorted(
        GuidelinesAcknowledgement.objects.filter(version__study=labelled).values_list(
            "version__number", "user__username", "acknowledged_at"
        )
    )


def test_a_bad_guidelines_entry_is_refused_naming_it_and_nothing_is_written(
    labelled: Study, tmp_path: Path
) -> None:
    original = package(labelled, tmp_path / "p.zip")
    study = json.loads(members(original)["study.json"])
    study["guidelines"] = [
        {
            "number": 1,
            "introduction": "x",
            "codebook_version": "two",
            "note": "",
            "published_at": "2026-01-01T00:00:00Z",
        },
        {
            "number": 1,
            "introduction": "y",
            "codebook_version": 1,
            "published_at": "yesterday",
            "acknowledged": [{}],
        },
    ]
    broken = repack(original, tmp_path / "broken.zip", {"study.json": json.dumps(study).encode()})
    before = counts()

    with pytest.raises(PackageError) as error:
        import_study("ddp-copy", broken)

    message = str(error.value)
    assert "study.json.guidelines[0].codebook_version: expected a whole number ≥ 0, got 'two'" in message
    assert "study.json.guidelines[1].number: expected a new whole number ≥ 1, got 1" in message
    assert counts() == before


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's FTS5 triggers index items as written")
def test_an_imported_study_is_indexed_for_search_before_the_command_returns(
    labelled: Study, tmp_path: Path
) -> None:
    """import_study is a command with no worker to leave the full-text vectors to (PostgreSQL; SQLite's
    FTS5 triggers index the items as they are written): they are filled before it returns."""
    from apps.corpus.services.search_index import pending_search_vectors

    copy = import_study("ddp-copy", package(labelled, tmp_path / "p.zip")).study

    assert Item.objects.filter(study=copy).exists()
    assert pending_search_vectors(copy.pk) == 0
